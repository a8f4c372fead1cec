//===- HfDecoders.cpp - tokenizer.json decoders ---------------------------===//
#include "runtime/text/HfComponents.h"

#include "runtime/text/ByteLevel.h"
#include "runtime/text/HfJson.h"
#include "runtime/text/Utf8.h"

namespace strata::text {

using llvm::json::Object;
using llvm::json::Value;

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
