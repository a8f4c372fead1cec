//===- Utf8.cpp - UTF-8 helpers of the text tokenizers --------------------===//
#include "runtime/text/Utf8.h"

#include "llvm/Support/ConvertUTF.h"

#include <re2/re2.h>

namespace strata::text {

llvm::Error checkUtf8(llvm::StringRef s) {
  const auto *p = reinterpret_cast<const llvm::UTF8 *>(s.data());
  const auto *end = p + s.size();
  if (llvm::isLegalUTF8String(&p, end))
    return llvm::Error::success();
  size_t pos = p - reinterpret_cast<const llvm::UTF8 *>(s.data());
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "invalid UTF-8 at byte offset %zu (byte 0x%02X); tokenizer.json and "
      "SentencePiece tokenizers read UTF-8 text",
      pos, unsigned(*p));
}

unsigned utf8Length(char lead) {
  unsigned n = llvm::getNumBytesForUTF8(static_cast<llvm::UTF8>(lead));
  return n >= 1 && n <= 4 ? n : 1;
}

uint32_t nextCodePoint(llvm::StringRef s, size_t &pos) {
  auto b0 = static_cast<uint8_t>(s[pos]);
  unsigned len = utf8Length(char(b0));
  if (len == 1 || pos + len > s.size()) {
    ++pos;
    return b0;
  }
  uint32_t cp = b0 & (0xFF >> (len + 1));
  for (unsigned i = 1; i < len; ++i)
    cp = (cp << 6) | (static_cast<uint8_t>(s[pos + i]) & 0x3F);
  pos += len;
  return cp;
}

void appendUtf8(uint32_t cp, std::string &out) {
  char buf[4];
  char *p = buf;
  if (!llvm::ConvertCodePointToUTF8(cp, p))
    cp = 0xFFFD, p = buf, llvm::ConvertCodePointToUTF8(cp, p);
  out.append(buf, p);
}

/// The range of the second byte after `lead` in a valid sequence (Unicode
/// Table 3-7); {1, 0} if `lead` starts none.
static std::pair<uint8_t, uint8_t> secondByteRange(uint8_t lead) {
  if (lead >= 0xC2 && lead <= 0xDF)
    return {0x80, 0xBF};
  if (lead == 0xE0)
    return {0xA0, 0xBF};
  if (lead == 0xED)
    return {0x80, 0x9F};
  if (lead >= 0xE1 && lead <= 0xEF)
    return {0x80, 0xBF};
  if (lead == 0xF0)
    return {0x90, 0xBF};
  if (lead == 0xF4)
    return {0x80, 0x8F};
  if (lead >= 0xF1 && lead <= 0xF3)
    return {0x80, 0xBF};
  return {1, 0};
}

std::string utf8Lossy(llvm::StringRef bytes) {
  std::string out;
  out.reserve(bytes.size());
  const char *kReplacement = "\xEF\xBF\xBD";
  for (size_t i = 0; i < bytes.size();) {
    auto lead = static_cast<uint8_t>(bytes[i]);
    if (lead < 0x80) {
      out += char(lead);
      ++i;
      continue;
    }
    unsigned len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    auto [lo, hi] = secondByteRange(lead);
    // Consume the longest prefix of a valid sequence.
    size_t j = i + 1;
    for (unsigned k = 1; k < len && j < bytes.size(); ++k, ++j) {
      auto b = static_cast<uint8_t>(bytes[j]);
      bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
      if (!ok)
        break;
    }
    if (lo <= hi && j - i == len)
      out.append(bytes.data() + i, len);
    else
      out += kReplacement;
    i = std::max(j, i + 1);
  }
  return out;
}

bool isWhitespace(uint32_t cp) {
  if (cp < 0x80)
    return cp == ' ' || (cp >= '\t' && cp <= '\r');
  // Beyond ASCII: NEL and the separators (Zs, Zl, Zp), from RE2's tables.
  static const RE2 separator("[\\x{85}\\p{Z}]");
  std::string s;
  appendUtf8(cp, s);
  return RE2::FullMatch(s, separator);
}

} // namespace strata::text
