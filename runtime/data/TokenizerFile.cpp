//===- TokenizerFile.cpp - Tokenizers read from tokenizer files -----------===//
//
// The `file` kind of Tokenizer: a runtime/text tokenizer and the bytes of
// the file it came from, which its JSON embeds (tokenizer.json as text, a
// SentencePiece model as base64) so checkpoints decode without the file.
//
//===----------------------------------------------------------------------===//
#include "runtime/data/Tokenizer.h"

#include "runtime/text/TextTokenizer.h"

#include "llvm/Support/Base64.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace strata {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Decodes standard base64 (with '=' padding); nullopt if malformed.
static std::optional<std::string> decodeBase64(llvm::StringRef s) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  if (s.size() % 4)
    return std::nullopt;
  std::string out;
  out.reserve(s.size() / 4 * 3);
  for (size_t i = 0; i < s.size(); i += 4) {
    size_t pad = i + 4 == s.size() ? s.substr(i).count('=') : 0;
    if (pad > 2 || s.substr(i, 4 - pad).contains('='))
      return std::nullopt;
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      int d = k < 4 - pad ? value(s[i + k]) : 0;
      if (d < 0)
        return std::nullopt;
      v = (v << 6) | uint32_t(d);
    }
    for (size_t k = 0; k < 3 - pad; ++k)
      out += char((v >> (16 - 8 * k)) & 0xFF);
  }
  return out;
}

llvm::Expected<Tokenizer> Tokenizer::fromFile(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail(path + ": error: cannot read tokenizer file (" +
                buf.getError().message() +
                "; --tokenizer takes char, byte, or a tokenizer.json or "
                "SentencePiece .model path)");
  return fromFileContent(path, (*buf)->getBuffer().str());
}

llvm::Expected<Tokenizer> Tokenizer::fromFileContent(llvm::StringRef fileName,
                                                     std::string content) {
  auto text = text::loadTokenizer(content, fileName);
  if (!text)
    return text.takeError();
  Tokenizer t(Kind::File);
  t.text_ = std::move(*text);
  t.content_ = std::make_shared<const std::string>(std::move(content));
  t.fileName_ = llvm::sys::path::filename(fileName).str();
  llvm::raw_string_ostream(t.name_)
      << "file-" << llvm::format_hex_no_prefix(t.fingerprint() >> 32, 8);
  return t;
}

llvm::Expected<Tokenizer> Tokenizer::fileFromJSON(const llvm::json::Object &o) {
  auto file = o.getString("file");
  if (!file)
    return fail("bad tokenizer description: a file tokenizer needs a string "
                "\"file\"");
  if (auto text = o.getString("content"))
    return fromFileContent(*file, text->str());
  if (auto b64 = o.getString("content_base64")) {
    auto bytes = decodeBase64(*b64);
    if (!bytes)
      return fail("bad tokenizer description: \"content_base64\" is not "
                  "base64");
    return fromFileContent(*file, std::move(*bytes));
  }
  return fail("bad tokenizer description: a file tokenizer needs "
              "\"content\" or \"content_base64\"");
}

llvm::json::Value Tokenizer::fileToJSON() const {
  llvm::json::Object o{{"kind", "file"}, {"file", fileName_}};
  if (text_->format() == text::TextTokenizer::Format::HfJson)
    o["content"] = *content_;
  else
    o["content_base64"] = llvm::encodeBase64(*content_);
  return o;
}

std::optional<int32_t> Tokenizer::bosId() const {
  if (!text_ || text_->specialIds().bos < 0)
    return std::nullopt;
  return text_->specialIds().bos;
}

std::optional<int32_t> Tokenizer::eosId() const {
  if (!text_ || text_->specialIds().eos < 0)
    return std::nullopt;
  return text_->specialIds().eos;
}

} // namespace strata
