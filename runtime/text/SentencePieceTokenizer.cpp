//===- SentencePieceTokenizer.cpp - SentencePiece .model files ------------===//
#include "runtime/text/SentencePieceTokenizer.h"

#include "runtime/text/Utf8.h"
#include "runtime/text/spm/SentencePieceShim.h"

#include "llvm/Support/FormatVariadic.h"

#include <dlfcn.h>

#include <cstdlib>

namespace strata::text {

namespace {

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// An error from a shim message (which is freed).
llvm::Error shimError(const char *what, char *message) {
  llvm::Error e = fail(llvm::Twine(what) + ": " + message);
  std::free(message);
  return e;
}

/// The shim's functions, from dlopen of STRATA_SPM_SHIM.
struct Shim {
  decltype(&strata_spm_load) load;
  decltype(&strata_spm_free) free;
  decltype(&strata_spm_encode) encode;
  decltype(&strata_spm_decode) decode;
  decltype(&strata_spm_info) info;
  decltype(&strata_spm_piece_to_id) pieceToId;
  std::string error; // why it could not be loaded
};

const Shim &shim() {
  static const Shim s = [] {
    Shim s{};
    // RTLD_DEEPBIND keeps sentencepiece's protobuf-lite to itself;
    // AddressSanitizer refuses it, so the sanitizer build links libprotobuf
    // statically (CMakeLists.txt) and sentencepiece binds to its own copy.
    int flags = RTLD_NOW | RTLD_LOCAL;
#if !defined(__SANITIZE_ADDRESS__)
    flags |= RTLD_DEEPBIND;
#endif
    void *h = dlopen(STRATA_SPM_SHIM, flags);
    if (!h)
      h = dlopen("libstrata_sentencepiece.so", flags);
    if (!h) {
      s.error = dlerror();
      return s;
    }
    s.load = reinterpret_cast<decltype(s.load)>(dlsym(h, "strata_spm_load"));
    s.free = reinterpret_cast<decltype(s.free)>(dlsym(h, "strata_spm_free"));
    s.encode =
        reinterpret_cast<decltype(s.encode)>(dlsym(h, "strata_spm_encode"));
    s.decode =
        reinterpret_cast<decltype(s.decode)>(dlsym(h, "strata_spm_decode"));
    s.info = reinterpret_cast<decltype(s.info)>(dlsym(h, "strata_spm_info"));
    s.pieceToId = reinterpret_cast<decltype(s.pieceToId)>(
        dlsym(h, "strata_spm_piece_to_id"));
    if (!s.load || !s.free || !s.encode || !s.decode || !s.info || !s.pieceToId)
      s.error = "a function is missing from " STRATA_SPM_SHIM;
    return s;
  }();
  return s;
}

} // namespace

SentencePieceTokenizer::~SentencePieceTokenizer() { shim().free(processor_); }

llvm::Expected<std::unique_ptr<TextTokenizer>>
SentencePieceTokenizer::fromModel(llvm::StringRef model, llvm::StringRef name) {
  const Shim &s = shim();
  if (!s.error.empty())
    return fail(name + ": error: cannot load strata's SentencePiece runtime (" +
                s.error + "; rebuild strata)");
  char *error = nullptr;
  void *p = s.load(model.data(), model.size(), &error);
  if (!p) {
    std::string why = error;
    std::free(error);
    return fail(name +
                ": error: neither a tokenizer.json (a JSON object) nor "
                "a SentencePiece model (" +
                why + ")");
  }
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer(p));
  t->vocabSize_ = s.info(p, 0);
  t->special_ = {s.info(p, 1), s.info(p, 2), s.info(p, 3), s.info(p, 4)};
  return std::unique_ptr<TextTokenizer>(std::move(t));
}

llvm::Error SentencePieceTokenizer::encode(llvm::StringRef text,
                                           std::vector<int32_t> &out,
                                           bool addSpecialTokens) const {
  if (llvm::Error e = checkUtf8(text))
    return e;
  int *ids = nullptr;
  size_t count = 0;
  char *error = nullptr;
  if (shim().encode(processor_, text.data(), text.size(), &ids, &count, &error))
    return shimError("SentencePiece cannot encode", error);
  if (addSpecialTokens && special_.bos >= 0)
    out.push_back(special_.bos);
  out.insert(out.end(), ids, ids + count);
  std::free(ids);
  return llvm::Error::success();
}

llvm::Expected<std::string>
SentencePieceTokenizer::decode(llvm::ArrayRef<int32_t> ids,
                               bool skipSpecialTokens) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocabSize_)
      return fail(llvm::formatv("token id {0} at position {1} is outside the "
                                "SentencePiece vocabulary of {2}",
                                ids[i], i, vocabSize_));
  static_assert(sizeof(int) == sizeof(int32_t));
  char *text = nullptr, *error = nullptr;
  size_t size = 0;
  if (shim().decode(processor_, ids.data(), ids.size(), &text, &size, &error))
    return shimError("SentencePiece cannot decode", error);
  std::string out(text, size);
  std::free(text);
  return out;
}

std::optional<int32_t>
SentencePieceTokenizer::tokenToId(llvm::StringRef token) const {
  int id = shim().pieceToId(processor_, token.data(), token.size());
  if (id < 0)
    return std::nullopt;
  return id;
}

} // namespace strata::text
