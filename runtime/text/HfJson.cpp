//===- HfJson.cpp - Reading the fields of a tokenizer.json ----------------===//
#include "runtime/text/HfJson.h"

#include "runtime/text/Utf8.h"

#include <re2/re2.h>

namespace strata::text {

using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

llvm::Error fieldError(llvm::StringRef path, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + msg);
}

llvm::Expected<llvm::StringRef> typeOf(const Value &v, llvm::StringRef path) {
  const Object *o = v.getAsObject();
  if (!o)
    return fieldError(path, "expected an object or null");
  auto t = o->getString("type");
  if (!t)
    return fieldError((path + ".type").str(), "missing string");
  return *t;
}

llvm::Error unsupported(llvm::StringRef path, llvm::StringRef type,
                        llvm::StringRef supported) {
  return fieldError((path + ".type").str(),
                    "unsupported \"" + type + "\" (strata supports " +
                        supported + "; see docs/tokenizers.md)");
}

llvm::Expected<std::string> stringField(const Object &o, llvm::StringRef path,
                                        llvm::StringRef key,
                                        std::optional<std::string> dflt) {
  if (auto s = o.getString(key))
    return s->str();
  if (!o.get(key) && dflt)
    return *dflt;
  return fieldError((path + "." + key).str(), "expected a string");
}

bool boolField(const Object &o, llvm::StringRef key, bool dflt) {
  return o.getBoolean(key).getValueOr(dflt);
}

llvm::Expected<std::shared_ptr<const SplitRegex>>
patternField(const Object &o, llvm::StringRef path) {
  std::string p = (path + ".pattern").str();
  const Object *pat = o.getObject("pattern");
  if (!pat)
    return fieldError(p, "expected {\"String\": ...} or {\"Regex\": ...}");
  std::string source;
  if (auto s = pat->getString("String"))
    source = RE2::QuoteMeta(re2::StringPiece(s->data(), s->size()));
  else if (auto r = pat->getString("Regex"))
    source = r->str();
  else
    return fieldError(p, "expected {\"String\": ...} or {\"Regex\": ...}");
  auto re = SplitRegex::create(source);
  if (!re)
    return fieldError(p, llvm::toString(re.takeError()));
  return std::shared_ptr<const SplitRegex>(std::move(*re));
}

std::string replaceAll(const SplitRegex &re, llvm::StringRef s,
                       llvm::StringRef content) {
  std::string out;
  re.split(s, [&](llvm::StringRef piece, bool match) {
    out += match ? content : piece;
  });
  return out;
}

/// `json` with each escaped UTF-16 surrogate pair ("\\ud840\\udc00") written as
/// the character's UTF-8 instead: LLVM 14's JSON parser decodes pairs past
/// plane 1 wrongly (U+20000 as U+10000), and Python's json.dump escapes them.
std::string rawAstral(llvm::StringRef json) {
  std::string out;
  out.reserve(json.size());
  auto hex4 = [&](size_t at, unsigned &v) {
    return at + 4 <= json.size() && !json.substr(at, 4).getAsInteger(16, v);
  };
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] != '\\' || i + 1 == json.size()) {
      out += json[i];
      continue;
    }
    unsigned hi, lo;
    if (json[i + 1] == 'u' && hex4(i + 2, hi) && hi >= 0xD800 && hi < 0xDC00 &&
        json.substr(i + 6).startswith("\\u") && hex4(i + 8, lo) &&
        lo >= 0xDC00 && lo < 0xE000) {
      appendUtf8(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), out);
      i += 11;
      continue;
    }
    out += json[i]; // an escape: copy it and the escaped character
    out += json[++i];
  }
  return out;
}

/// Reads model.vocab and model.merges into a BpeModel.
llvm::Expected<BpeModel> parseBpeModel(const Object &root) {
  const Object *m = root.getObject("model");
  if (!m)
    return fieldError("model", "expected an object");
  auto type = m->getString("type");
  if (!type)
    return fieldError("model.type", "missing string (strata reads BPE models)");
  if (*type != "BPE")
    return fieldError("model.type",
                      "unsupported \"" + *type +
                          "\" (strata supports BPE; see docs/tokenizers.md)");
  if (auto d = m->getNumber("dropout"); d && *d > 0)
    return fieldError("model.dropout", "BPE dropout is not supported (set it "
                                       "to null for inference and training)");
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (auto s = m->getString(key); s && !s->empty())
      return fieldError((llvm::Twine("model.") + key).str(),
                        "subword prefixes and suffixes are not supported");
  const Object *vocabJson = m->getObject("vocab");
  if (!vocabJson)
    return fieldError("model.vocab", "expected an object of token -> id");
  llvm::StringMap<int32_t> vocab;
  for (const auto &[token, id] : *vocabJson) {
    auto n = id.getAsInteger();
    if (!n || *n < 0 || *n > INT32_MAX)
      return fieldError("model.vocab",
                        "token \"" + token.str() +
                            "\" needs a non-negative integer id");
    vocab[token.str()] = int32_t(*n);
  }
  const Array *mergesJson = m->getArray("merges");
  if (!mergesJson)
    return fieldError("model.merges", "expected an array");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(mergesJson->size());
  for (size_t i = 0; i < mergesJson->size(); ++i) {
    const Value &e = (*mergesJson)[i];
    if (auto s = e.getAsString()) {
      auto [a, b] = s->split(' ');
      if (a.empty() || b.empty() || b.contains(' '))
        return fieldError("model.merges[" + std::to_string(i) + "]",
                          "expected \"left right\", got \"" + *s + "\"");
      merges.emplace_back(a.str(), b.str());
    } else if (const Array *p = e.getAsArray(); p && p->size() == 2 &&
                                                (*p)[0].getAsString() &&
                                                (*p)[1].getAsString()) {
      merges.emplace_back((*p)[0].getAsString()->str(),
                          (*p)[1].getAsString()->str());
    } else {
      return fieldError("model.merges[" + std::to_string(i) + "]",
                        "expected \"left right\" or [\"left\", \"right\"]");
    }
  }
  BpeModel::Options o;
  if (auto unk = m->getString("unk_token"))
    o.unkToken = unk->str();
  o.fuseUnk = m->getBoolean("fuse_unk").getValueOr(false);
  o.byteFallback = m->getBoolean("byte_fallback").getValueOr(false);
  o.ignoreMerges = m->getBoolean("ignore_merges").getValueOr(false);
  return BpeModel::create(std::move(vocab), merges, std::move(o));
}

} // namespace strata::text
