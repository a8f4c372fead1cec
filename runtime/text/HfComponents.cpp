//===- HfComponents.cpp - tokenizer.json normalizers and pre-tokenizers ---===//
#include "runtime/text/HfComponents.h"

#include "runtime/text/ByteLevel.h"
#include "runtime/text/HfJson.h"
#include "runtime/text/Utf8.h"

namespace strata::text {

using llvm::json::Object;
using llvm::json::Value;

//===----------------------------------------------------------------------===//
// Normalizers
//===----------------------------------------------------------------------===//

void Normalizer::apply(std::string &s) const {
  if (kind == Kind::Prepend) {
    if (!s.empty())
      s.insert(0, text);
    return;
  }
  s = replaceAll(*re, s, content);
}

llvm::Error parseNormalizer(const Value &v, llvm::StringRef path,
                            std::vector<Normalizer> &out) {
  if (v.kind() == Value::Null)
    return llvm::Error::success();
  auto type = typeOf(v, path);
  if (!type)
    return type.takeError();
  const Object &o = *v.getAsObject();
  if (*type == "Sequence")
    return parseSequence(o, path, "normalizers", out, parseNormalizer);
  Normalizer n;
  if (*type == "Prepend") {
    auto s = stringField(o, path, "prepend", std::nullopt);
    if (!s)
      return s.takeError();
    n.kind = Normalizer::Kind::Prepend;
    n.text = *s;
  } else if (*type == "Replace") {
    auto re = patternField(o, path);
    auto content = stringField(o, path, "content", std::nullopt);
    if (!re)
      return re.takeError();
    if (!content)
      return content.takeError();
    n.kind = Normalizer::Kind::Replace;
    n.re = *re;
    n.content = *content;
  } else {
    return unsupported(path, *type, "Prepend, Replace and Sequence");
  }
  out.push_back(std::move(n));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Pre-tokenizers
//===----------------------------------------------------------------------===//

llvm::Error parsePreTokenizer(const Value &v, llvm::StringRef path,
                              std::vector<PreTokenizer> &out) {
  if (v.kind() == Value::Null)
    return llvm::Error::success();
  auto type = typeOf(v, path);
  if (!type)
    return type.takeError();
  const Object &o = *v.getAsObject();
  if (*type == "Sequence")
    return parseSequence(o, path, "pretokenizers", out, parsePreTokenizer);
  PreTokenizer p;
  if (*type == "ByteLevel") {
    p.kind = PreTokenizer::Kind::ByteLevel;
    p.addPrefixSpace = boolField(o, "add_prefix_space", true);
    if (boolField(o, "use_regex", true)) {
      static const std::shared_ptr<const SplitRegex> gpt2 =
          llvm::cantFail(SplitRegex::create(kGpt2Pattern));
      p.re = gpt2;
    }
  } else if (*type == "Split") {
    p.kind = PreTokenizer::Kind::Split;
    auto re = patternField(o, path);
    if (!re)
      return re.takeError();
    p.re = *re;
    if (boolField(o, "invert", false))
      return fieldError((path + ".invert").str(),
                        "inverted splits are not supported");
    auto behavior = o.getString("behavior");
    if (!behavior || (*behavior != "Isolated" && *behavior != "Removed"))
      return fieldError((path + ".behavior").str(),
                        "unsupported behavior (strata supports Isolated and "
                        "Removed)");
    p.removeMatches = *behavior == "Removed";
  } else if (*type == "Metaspace") {
    p.kind = PreTokenizer::Kind::Metaspace;
    auto r = stringField(o, path, "replacement", std::nullopt);
    if (!r)
      return r.takeError();
    if (r->empty() || utf8Length((*r)[0]) != r->size())
      return fieldError((path + ".replacement").str(),
                        "expected one character");
    p.replacement = *r;
    auto scheme = stringField(o, path, "prepend_scheme", "always");
    if (!scheme)
      return scheme.takeError();
    if (*scheme == "always")
      p.prepend = PreTokenizer::Prepend::Always;
    else if (*scheme == "first")
      p.prepend = PreTokenizer::Prepend::First;
    else if (*scheme == "never")
      p.prepend = PreTokenizer::Prepend::Never;
    else
      return fieldError((path + ".prepend_scheme").str(),
                        "expected \"always\", \"first\" or \"never\"");
    if (!boolField(o, "add_prefix_space", true))
      p.prepend = PreTokenizer::Prepend::Never;
    if (!boolField(o, "split", true))
      return fieldError((path + ".split").str(),
                        "Metaspace without splitting is not supported");
  } else {
    return unsupported(path, *type, "ByteLevel, Split, Metaspace and Sequence");
  }
  out.push_back(std::move(p));
  return llvm::Error::success();
}

void preTokenize(llvm::ArrayRef<PreTokenizer> steps, llvm::StringRef text,
                 bool atStart, llvm::function_ref<void(llvm::StringRef)> word) {
  if (text.empty())
    return;
  if (steps.empty())
    return word(text);
  const PreTokenizer &p = steps.front();
  llvm::ArrayRef<PreTokenizer> rest = steps.drop_front();
  bool first = atStart;
  auto next = [&](llvm::StringRef piece) {
    preTokenize(rest, piece, first, word);
    first = false;
  };
  switch (p.kind) {
  case PreTokenizer::Kind::ByteLevel: {
    std::string spaced;
    if (p.addPrefixSpace && !text.startswith(" ")) {
      spaced = " " + text.str();
      text = spaced;
    }
    auto mapped = [&](llvm::StringRef piece, bool) {
      std::string s;
      appendByteLevel(piece, s);
      next(s);
    };
    if (p.re)
      p.re->split(text, mapped);
    else
      mapped(text, true);
    return;
  }
  case PreTokenizer::Kind::Split:
    p.re->split(text, [&](llvm::StringRef piece, bool match) {
      if (!(match && p.removeMatches))
        next(piece);
    });
    return;
  case PreTokenizer::Kind::Metaspace: {
    llvm::StringRef meta = p.replacement;
    std::string s;
    for (char c : text)
      if (c == ' ')
        s.append(meta.data(), meta.size());
      else
        s.push_back(c);
    bool prepend = p.prepend == PreTokenizer::Prepend::Always ||
                   (p.prepend == PreTokenizer::Prepend::First && atStart);
    if (prepend && !llvm::StringRef(s).startswith(meta))
      s.insert(0, meta.str());
    // Split before each replacement character (MergedWithNext).
    llvm::StringRef rest = s;
    while (!rest.empty()) {
      size_t cut = rest.find(meta, 1);
      next(rest.take_front(cut));
      rest = rest.drop_front(std::min(cut, rest.size()));
    }
    return;
  }
  }
}

} // namespace strata::text
