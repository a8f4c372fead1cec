//===- SplitRegex.cpp - Pre-tokenizer regexes on RE2 ----------------------===//
#include "runtime/text/SplitRegex.h"

#include "runtime/text/Utf8.h"

#include <re2/re2.h>

namespace strata::text {

const char *const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// Oniguruma's Unicode \s, \d and \w, as members of a bracket expression.
static const char *kSpace = "\\t\\n\\v\\f\\r\\x{85}\\p{Z}";
static const char *kDigit = "\\p{Nd}";
static const char *kWord = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";

/// `pattern` with \s \S \d \D \w \W spelled as Unicode classes.
static llvm::Expected<std::string> unicodeClasses(llvm::StringRef pattern) {
  std::string out;
  bool inBracket = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c != '\\' || i + 1 == pattern.size()) {
      if (c == '[' && !inBracket)
        inBracket = true;
      else if (c == ']' && inBracket && out.back() != '[' &&
               !llvm::StringRef(out).endswith("[^"))
        inBracket = false;
      out += c;
      continue;
    }
    char e = pattern[++i];
    const char *cls = e == 's' || e == 'S'   ? kSpace
                      : e == 'd' || e == 'D' ? kDigit
                      : e == 'w' || e == 'W' ? kWord
                                             : nullptr;
    if (!cls) {
      out += '\\';
      out += e;
      continue;
    }
    bool negated = e == 'S' || e == 'D' || e == 'W';
    if (inBracket && negated)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "\\%c inside a bracket expression is not supported", e);
    if (inBracket)
      out += cls;
    else
      out += std::string(negated ? "[^" : "[") + cls + "]";
  }
  return out;
}

llvm::Expected<std::unique_ptr<SplitRegex>>
SplitRegex::create(llvm::StringRef pattern) {
  static const llvm::StringRef kTail = R"(|\s+(?!\S)|\s+)";
  bool tail = pattern.endswith(kTail);
  llvm::StringRef head = tail ? pattern.drop_back(kTail.size()) : pattern;
  auto translated = unicodeClasses(head);
  if (!translated)
    return translated.takeError();
  RE2::Options opts;
  opts.set_log_errors(false);
  std::unique_ptr<SplitRegex> r(new SplitRegex);
  std::string full = tail ? *translated + "|[" + kSpace + "]+" : *translated;
  r->re_ = std::make_unique<RE2>(full, opts);
  if (!r->re_->ok())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "RE2 cannot compile the pattern: %s",
                                   r->re_->error().c_str());
  if (tail)
    r->prefix_ = std::make_unique<RE2>(*translated, opts);
  return r;
}

SplitRegex::~SplitRegex() = default;

/// Start of the last code point of the non-empty valid UTF-8 `s`.
static size_t lastCharStart(llvm::StringRef s) {
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80)
    --i;
  return i;
}

void SplitRegex::split(
    llvm::StringRef text,
    llvm::function_ref<void(llvm::StringRef, bool)> piece) const {
  re2::StringPiece input(text.data(), text.size());
  size_t prev = 0, pos = 0;
  re2::StringPiece m;
  while (pos < text.size() &&
         re_->Match(input, pos, text.size(), RE2::UNANCHORED, &m, 1)) {
    size_t start = m.data() - text.data(), end = start + m.size();
    if (start == end) { // Oniguruma steps over empty matches
      pos = start + utf8Length(text[start]);
      continue;
    }
    if (prefix_ && end < text.size()) {
      llvm::StringRef s = text.slice(start, end);
      size_t last = lastCharStart(s);
      size_t at = last;
      if (last > 0 && isWhitespace(nextCodePoint(s, at)) &&
          !prefix_->Match(input, start, text.size(), RE2::ANCHOR_START, nullptr,
                          0))
        end = start + last; // \s+(?!\S) leaves the last space to the next
    }
    if (start > prev)
      piece(text.slice(prev, start), false);
    piece(text.slice(start, end), true);
    prev = pos = end;
  }
  if (prev < text.size())
    piece(text.drop_front(prev), false);
}

} // namespace strata::text
