//===- HfJson.h - Reading the fields of a tokenizer.json --------*- C++ -*-===//
//
// Helpers of the tokenizer.json readers (HfComponents.cpp, HfDecoders.cpp,
// HfTokenizer.cpp): typed fields whose errors name their path, patterns as
// SplitRegex, the BPE model, and the LLVM 14 JSON workaround rawAstral().
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/text/BpeModel.h"
#include "runtime/text/HfComponents.h"

#include "llvm/Support/JSON.h"

#include <optional>

namespace strata::text {

/// The "type" of object `v` at `path`.
llvm::Expected<llvm::StringRef> typeOf(const llvm::json::Value &v,
                                       llvm::StringRef path);
/// "path.type: unsupported "T" (strata supports ...)".
llvm::Error unsupported(llvm::StringRef path, llvm::StringRef type,
                        llvm::StringRef supported);
/// A string field, or `dflt` if absent.
llvm::Expected<std::string> stringField(const llvm::json::Object &o,
                                        llvm::StringRef path,
                                        llvm::StringRef key,
                                        std::optional<std::string> dflt);
bool boolField(const llvm::json::Object &o, llvm::StringRef key, bool dflt);
/// A {"String": s} or {"Regex": r} pattern as a regex.
llvm::Expected<std::shared_ptr<const SplitRegex>>
patternField(const llvm::json::Object &o, llvm::StringRef path);
/// `s` with every match of `re` replaced by `content`.
std::string replaceAll(const SplitRegex &re, llvm::StringRef s,
                       llvm::StringRef content);
/// `json` with escaped surrogate pairs written as UTF-8 (see HfJson.cpp).
std::string rawAstral(llvm::StringRef json);
/// Reads model.vocab and model.merges of `root` into a BpeModel.
llvm::Expected<BpeModel> parseBpeModel(const llvm::json::Object &root);

/// The elements of the array field `key` of a Sequence.
template <typename Step, typename Parse>
llvm::Error parseSequence(const llvm::json::Object &o, llvm::StringRef path,
                          llvm::StringRef key, std::vector<Step> &out,
                          Parse parse) {
  const llvm::json::Array *items = o.getArray(key);
  if (!items)
    return fieldError((path + "." + key).str(), "expected an array");
  for (size_t i = 0; i < items->size(); ++i)
    if (llvm::Error e =
            parse((*items)[i],
                  (path + "." + key + "[" + llvm::Twine(i) + "]").str(), out))
      return e;
  return llvm::Error::success();
}

} // namespace strata::text
