//===- ByteLevel.cpp - GPT-2's byte <-> printable character map -----------===//
#include "runtime/text/ByteLevel.h"

#include "runtime/text/Utf8.h"

namespace strata::text {

namespace {
struct Tables {
  std::array<uint32_t, 256> toCp;
  std::array<std::string, 256> toUtf8;
  std::array<int16_t, 512> toByte; // code points < 512 cover every image

  Tables() {
    toByte.fill(-1);
    uint32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      toCp[b] = printable ? b : next++;
      toByte[toCp[b]] = int16_t(b);
      appendUtf8(toCp[b], toUtf8[b]);
    }
  }
};
const Tables &tables() {
  static const Tables t;
  return t;
}
} // namespace

uint32_t byteToCodePoint(uint8_t b) { return tables().toCp[b]; }

int codePointToByte(uint32_t cp) { return cp < 512 ? tables().toByte[cp] : -1; }

void appendByteLevel(llvm::StringRef bytes, std::string &out) {
  const Tables &t = tables();
  for (char c : bytes)
    out += t.toUtf8[static_cast<uint8_t>(c)];
}

} // namespace strata::text
