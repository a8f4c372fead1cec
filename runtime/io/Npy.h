//===- Npy.h - NumPy .npy arrays ---------------------------------*- C++
//-*-===//
//
// `strata eval --dump-logits` writes logits as a .npy file (NumPy's format
// 1.0: magic "\x93NUMPY", version, a little-endian u16 header length, a
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape':
// (..)} padded with spaces to a 64-byte boundary and ending in '\n', then
// the C-order data), so numpy.load reads it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace strata {

/// The header (magic through '\n') of a little-endian f32 array of `shape`.
std::string npyHeaderF32(llvm::ArrayRef<int64_t> shape);

/// Writes `data` (row-major, product of `shape` elements) atomically.
llvm::Error writeNpyF32(llvm::StringRef path, llvm::ArrayRef<float> data,
                        llvm::ArrayRef<int64_t> shape);

} // namespace strata
