//===- HfComponents.cpp - tokenizer.json normalizers, pre-tokenizers, decoders //
#include "runtime/text/HfComponents.h"

#include "runtime/text/ByteLevel.h"
#include "runtime/text/Utf8.h"

#include <re2/re2.h>

namespace strata::text {

using llvm::json::Object;
using llvm::json::Value;

llvm::Error fieldError(llvm::StringRef path, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + msg);
}

/// The "type" of object `v` at `path`.
static llvm::Expected<llvm::StringRef> typeOf(const Value &v,
                                              llvm::StringRef path) {
  const Object *o = v.getAsObject();
  if (!o)
    return fieldError(path, "expected an object or null");
  auto t = o->getString("type");
  if (!t)
    return fieldError((path + ".type").str(), "missing string");
  return *t;
}

static llvm::Error unsupported(llvm::StringRef path, llvm::StringRef type,
                               llvm::StringRef supported) {
  return fieldError((path + ".type").str(),
                    "unsupported \"" + type + "\" (strata supports " +
                        supported + "; see docs/tokenizers.md)");
}

/// A string field, or `dflt` if absent.
static llvm::Expected<std::string> stringField(const Object &o,
                                               llvm::StringRef path,
                                               llvm::StringRef key,
                                               std::optional<std::string> dflt) {
  if (auto s = o.getString(key))
    return s->str();
  if (!o.get(key) && dflt)
    return *dflt;
  return fieldError((path + "." + key).str(), "expected a string");
}

static bool boolField(const Object &o, llvm::StringRef key, bool dflt) {
  return o.getBoolean(key).getValueOr(dflt);
}

/// A {"String": s} or {"Regex": r} pattern as a regex.
static llvm::Expected<std::shared_ptr<const SplitRegex>>
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

/// The elements of the array field `key` of a Sequence.
template <typename Step, typename Parse>
static llvm::Error parseSequence(const Object &o, llvm::StringRef path,
                                 llvm::StringRef key, std::vector<Step> &out,
                                 Parse parse) {
  const llvm::json::Array *items = o.getArray(key);
  if (!items)
    return fieldError((path + "." + key).str(), "expected an array");
  for (size_t i = 0; i < items->size(); ++i)
    if (llvm::Error e = parse((*items)[i],
                              (path + "." + key + "[" + llvm::Twine(i) + "]").str(),
                              out))
      return e;
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Normalizers
//===----------------------------------------------------------------------===//

/// `s` with every match of `re` replaced by `content`.
static std::string replaceAll(const SplitRegex &re, llvm::StringRef s,
                              llvm::StringRef content) {
  std::string out;
  re.split(s, [&](llvm::StringRef piece, bool match) {
    out += match ? content : piece;
  });
  return out;
}

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

//===----------------------------------------------------------------------===//
// Decoders
//===----------------------------------------------------------------------===//

/// The byte of a "<0xXX>" token, or -1.
static int byteToken(llvm::StringRef t) {
  unsigned b;
  if (t.size() != 6 || !t.startswith("<0x") || !t.endswith(">") ||
      t.substr(3, 2).getAsInteger(16, b))
    return -1;
  return int(b);
}

void Decoder::apply(std::vector<std::string> &tokens) const {
  switch (kind) {
  case Kind::ByteLevel: {
    std::string bytes;
    for (const std::string &t : tokens) {
      std::string raw;
      bool all = true;
      for (size_t pos = 0; pos < t.size() && all;) {
        int b = codePointToByte(nextCodePoint(t, pos));
        all = b >= 0;
        raw += char(b);
      }
      bytes += all ? raw : t;
    }
    tokens = {utf8Lossy(bytes)};
    return;
  }
  case Kind::Metaspace:
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string s;
      llvm::StringRef rest = tokens[i];
      for (size_t at; (at = rest.find(from)) != llvm::StringRef::npos;
           rest = rest.drop_front(at + from.size()))
        s += rest.take_front(at).str() + (i == 0 && stripFirst ? "" : " ");
      tokens[i] = s + rest.str();
    }
    return;
  case Kind::Replace:
    for (std::string &t : tokens)
      t = replaceAll(*re, t, to);
    return;
  case Kind::ByteFallback: {
    std::vector<std::string> out;
    std::string bytes;
    size_t nbytes = 0;
    auto flush = [&] {
      if (!nbytes)
        return;
      if (llvm::Error e = checkUtf8(bytes)) {
        llvm::consumeError(std::move(e));
        out.insert(out.end(), nbytes, "\xEF\xBF\xBD");
      } else {
        out.push_back(bytes);
      }
      bytes.clear();
      nbytes = 0;
    };
    for (std::string &t : tokens) {
      int b = byteToken(t);
      if (b >= 0) {
        bytes += char(b);
        ++nbytes;
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
    return;
  }
  case Kind::Fuse: {
    std::string all;
    for (const std::string &t : tokens)
      all += t;
    tokens = {all};
    return;
  }
  case Kind::Strip:
    for (std::string &t : tokens) {
      std::vector<size_t> starts; // code point starts, then the end
      for (size_t pos = 0; pos < t.size(); nextCodePoint(t, pos))
        starts.push_back(pos);
      size_t n = starts.size();
      starts.push_back(t.size());
      auto cpAt = [&](size_t i) {
        size_t pos = starts[i];
        return nextCodePoint(t, pos);
      };
      size_t b = 0, e = n;
      while (b < std::min(start, n) && cpAt(b) == stripChar)
        ++b;
      for (size_t i = 0; i < stop && e > 0 && cpAt(e - 1) == stripChar; ++i)
        --e;
      t = b < e ? t.substr(starts[b], starts[e] - starts[b]) : "";
    }
    return;
  }
}

llvm::Error parseDecoder(const Value &v, llvm::StringRef path,
                         std::vector<Decoder> &out) {
  if (v.kind() == Value::Null)
    return llvm::Error::success();
  auto type = typeOf(v, path);
  if (!type)
    return type.takeError();
  const Object &o = *v.getAsObject();
  if (*type == "Sequence")
    return parseSequence(o, path, "decoders", out, parseDecoder);
  Decoder d;
  if (*type == "ByteLevel") {
    d.kind = Decoder::Kind::ByteLevel;
  } else if (*type == "ByteFallback") {
    d.kind = Decoder::Kind::ByteFallback;
  } else if (*type == "Fuse") {
    d.kind = Decoder::Kind::Fuse;
  } else if (*type == "Metaspace") {
    d.kind = Decoder::Kind::Metaspace;
    auto r = stringField(o, path, "replacement", std::nullopt);
    if (!r)
      return r.takeError();
    d.from = *r;
    auto scheme = stringField(o, path, "prepend_scheme", "always");
    if (!scheme)
      return scheme.takeError();
    d.stripFirst = boolField(o, "add_prefix_space", true) && *scheme != "never";
  } else if (*type == "Replace") {
    d.kind = Decoder::Kind::Replace;
    auto re = patternField(o, path);
    auto content = stringField(o, path, "content", std::nullopt);
    if (!re)
      return re.takeError();
    if (!content)
      return content.takeError();
    d.re = *re;
    d.to = *content;
  } else if (*type == "Strip") {
    d.kind = Decoder::Kind::Strip;
    auto c = stringField(o, path, "content", std::nullopt);
    if (!c)
      return c.takeError();
    size_t pos = 0;
    if (c->empty() || (d.stripChar = nextCodePoint(*c, pos), pos != c->size()))
      return fieldError((path + ".content").str(), "expected one character");
    d.start = size_t(o.getInteger("start").getValueOr(0));
    d.stop = size_t(o.getInteger("stop").getValueOr(0));
  } else {
    return unsupported(path, *type,
                       "ByteLevel, Metaspace, Replace, ByteFallback, Fuse, "
                       "Strip and Sequence");
  }
  out.push_back(std::move(d));
  return llvm::Error::success();
}

} // namespace strata::text
