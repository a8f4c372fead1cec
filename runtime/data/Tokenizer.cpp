//===- Tokenizer.cpp - Character- and byte-level tokenizers ---------------===//
#include "runtime/data/Tokenizer.h"

#include "runtime/text/TextTokenizer.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>

namespace strata {

using llvm::createStringError;
using llvm::inconvertibleErrorCode;

unsigned decodeUTF8(llvm::StringRef s, uint32_t &cp) {
  if (s.empty())
    return 0;
  auto b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  unsigned len;
  uint32_t minCp;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, minCp = 0x80, cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, minCp = 0x800, cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, minCp = 0x10000, cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() < len)
    return 0;
  for (unsigned i = 1; i < len; ++i) {
    auto b = static_cast<uint8_t>(s[i]);
    if ((b & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, UTF-16 surrogates and values past U+10FFFF are invalid.
  if (cp < minCp || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
    return 0;
  return len;
}

void appendUTF8(uint32_t cp, std::string &out) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

/// "'Z' (U+005A)" for a visible character, "U+000A" for a control or space.
static std::string describeChar(uint32_t cp) {
  std::string s;
  llvm::raw_string_ostream os(s);
  bool visible = (cp > 0x20 && cp < 0x7F) || cp > 0xA0;
  if (visible) {
    std::string utf8;
    appendUTF8(cp, utf8);
    os << "'" << utf8 << "' (";
  }
  os << "U+" << llvm::format_hex_no_prefix(cp, 4, /*Upper=*/true);
  if (visible)
    os << ")";
  return s;
}

/// A UTF-8 error naming the offset and the offending byte.
static llvm::Error invalidUTF8(llvm::StringRef text, size_t pos) {
  return createStringError(
      inconvertibleErrorCode(),
      "invalid UTF-8 at byte offset %zu (byte 0x%02X); the char tokenizer "
      "reads UTF-8 text, use the byte tokenizer for other encodings",
      pos, unsigned(static_cast<uint8_t>(text[pos])));
}

Tokenizer Tokenizer::byteLevel() { return Tokenizer(Kind::Byte); }

llvm::Expected<Tokenizer> Tokenizer::charLevel(llvm::StringRef text) {
  if (text.empty())
    return createStringError(inconvertibleErrorCode(),
                             "cannot build a char vocabulary from empty text");
  std::array<bool, 128> ascii{};
  llvm::DenseSet<uint32_t> other;
  for (size_t pos = 0; pos < text.size();) {
    auto b = static_cast<uint8_t>(text[pos]);
    if (b < 0x80) {
      ascii[b] = true;
      ++pos;
      continue;
    }
    uint32_t cp;
    unsigned len = decodeUTF8(text.substr(pos), cp);
    if (!len)
      return invalidUTF8(text, pos);
    other.insert(cp);
    pos += len;
  }
  Tokenizer t(Kind::Char);
  for (uint32_t c = 0; c < 128; ++c)
    if (ascii[c])
      t.vocab_.push_back(c);
  size_t firstOther = t.vocab_.size();
  t.vocab_.insert(t.vocab_.end(), other.begin(), other.end());
  std::sort(t.vocab_.begin() + firstOther, t.vocab_.end());
  t.index();
  return t;
}

void Tokenizer::index() {
  asciiIds_.fill(-1);
  ids_.clear();
  for (size_t id = 0; id < vocab_.size(); ++id) {
    if (vocab_[id] < 128)
      asciiIds_[vocab_[id]] = int32_t(id);
    else
      ids_[vocab_[id]] = int32_t(id);
  }
}

llvm::Expected<Tokenizer> Tokenizer::fromJSON(const llvm::json::Value &v) {
  auto fail = [](const llvm::Twine &why) {
    return createStringError(inconvertibleErrorCode(),
                             "bad tokenizer description: " + why);
  };
  const llvm::json::Object *obj = v.getAsObject();
  if (!obj)
    return fail("expected an object");
  auto kind = obj->getString("kind");
  if (!kind)
    return fail("missing string \"kind\"");
  if (*kind == "byte")
    return byteLevel();
  if (*kind == "file")
    return fileFromJSON(*obj);
  if (*kind != "char")
    return fail("unknown kind \"" + *kind +
                "\" (expected \"char\", \"byte\" or \"file\")");
  auto chars = obj->getString("vocab");
  if (!chars || chars->empty())
    return fail("a char tokenizer needs a non-empty string \"vocab\"");
  Tokenizer t(Kind::Char);
  for (size_t pos = 0; pos < chars->size();) {
    uint32_t cp;
    unsigned len = decodeUTF8(chars->substr(pos), cp);
    if (!len)
      return fail("\"vocab\" is not valid UTF-8");
    if (!t.vocab_.empty() && cp <= t.vocab_.back())
      return fail("\"vocab\" must list distinct characters in increasing "
                  "code point order");
    t.vocab_.push_back(cp);
    pos += len;
  }
  t.index();
  return t;
}

llvm::json::Value Tokenizer::toJSON() const {
  if (kind_ == Kind::Byte)
    return llvm::json::Object{{"kind", "byte"}};
  if (kind_ == Kind::File)
    return fileToJSON();
  std::string chars;
  for (uint32_t cp : vocab_)
    appendUTF8(cp, chars);
  return llvm::json::Object{{"kind", "char"}, {"vocab", std::move(chars)}};
}

llvm::StringRef Tokenizer::name() const {
  if (kind_ == Kind::File)
    return name_;
  return kind_ == Kind::Char ? "char" : "byte";
}

int64_t Tokenizer::vocabSize() const {
  if (kind_ == Kind::File)
    return text_->vocabSize();
  return kind_ == Kind::Byte ? 256 : int64_t(vocab_.size());
}

uint64_t Tokenizer::fingerprint() const {
  if (kind_ == Kind::File)
    return llvm::xxHash64("file:" + *content_);
  std::string key = name().str();
  key.append(reinterpret_cast<const char *>(vocab_.data()),
             vocab_.size() * sizeof(uint32_t));
  return llvm::xxHash64(key);
}

llvm::Error Tokenizer::encode(llvm::StringRef text,
                              std::vector<int32_t> &out) const {
  if (kind_ == Kind::File)
    return text_->encode(text, out);
  out.reserve(out.size() + text.size());
  if (kind_ == Kind::Byte) {
    for (char c : text)
      out.push_back(static_cast<uint8_t>(c));
    return llvm::Error::success();
  }
  for (size_t pos = 0; pos < text.size();) {
    auto b = static_cast<uint8_t>(text[pos]);
    uint32_t cp = b;
    unsigned len = 1;
    int32_t id = -1;
    if (b < 0x80) {
      id = asciiIds_[b];
    } else {
      len = decodeUTF8(text.substr(pos), cp);
      if (!len)
        return invalidUTF8(text, pos);
      auto it = ids_.find(cp);
      if (it != ids_.end())
        id = it->second;
    }
    if (id < 0)
      return createStringError(
          inconvertibleErrorCode(),
          "character %s at byte offset %zu is not in the char tokenizer's "
          "vocabulary of %zu characters",
          describeChar(cp).c_str(), pos, vocab_.size());
    out.push_back(id);
    pos += len;
  }
  return llvm::Error::success();
}

llvm::Expected<std::string>
Tokenizer::decode(llvm::ArrayRef<int32_t> ids) const {
  if (kind_ == Kind::File)
    return text_->decode(ids);
  std::string text;
  text.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    int32_t id = ids[i];
    if (id < 0 || id >= vocabSize())
      return createStringError(inconvertibleErrorCode(),
                               "token id %d at position %zu is outside the %s "
                               "tokenizer's vocabulary of %lld",
                               id, i, name().str().c_str(),
                               (long long)vocabSize());
    if (kind_ == Kind::Byte)
      text += char(id);
    else
      appendUTF8(vocab_[id], text);
  }
  return text;
}

} // namespace strata
