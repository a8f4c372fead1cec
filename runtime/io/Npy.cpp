//===- Npy.cpp - NumPy .npy arrays ----------------------------------------===//
#include "runtime/io/Npy.h"

#include "runtime/io/AtomicFile.h"

#include "llvm/Support/Endian.h"

namespace strata {

static_assert(!llvm::sys::IsBigEndianHost, "the .npy data is written as '<f4'");

std::string npyHeaderF32(llvm::ArrayRef<int64_t> shape) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += (i ? ", " : "") + std::to_string(shape[i]);
  dict += shape.size() == 1 ? ",)" : ")"; // Python's one-element tuple
  dict += ", }";
  // magic (6) + version (2) + length (2) + dict + '\n', to a multiple of 64.
  size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - 10 - dict.size() - 1, ' ');
  dict += '\n';
  std::string h("\x93NUMPY\x01\x00", 8);
  char len[2];
  llvm::support::endian::write16le(len, uint16_t(dict.size()));
  h.append(len, 2);
  return h + dict;
}

llvm::Error writeNpyF32(llvm::StringRef path, llvm::ArrayRef<float> data,
                        llvm::ArrayRef<int64_t> shape) {
  std::string header = npyHeaderF32(shape);
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << header;
    os.write(reinterpret_cast<const char *>(data.data()),
             data.size() * sizeof(float));
    return llvm::Error::success();
  });
}

} // namespace strata
