//===- Types.h - DTypes, shapes and tensor types ------------------------===//
//
// Static shapes only. A TensorType is a dtype plus a shape; rank 0 is a scalar.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>

namespace strata {

/// Element types. f64 exists for gradient checks in tests.
enum class DType : uint8_t { F32, BF16, F16, F64, I32, I64, I1 };

/// "f32", "bf16", ... as written in IR text.
llvm::StringRef dtypeName(DType t);
/// Parses a dtype name; nullopt if unknown.
std::optional<DType> parseDType(llvm::StringRef name);
/// Bytes per element (i1 takes one byte).
int64_t dtypeBytes(DType t);
bool isFloat(DType t);

using Shape = llvm::SmallVector<int64_t, 4>;

/// Product of dims (1 for a scalar).
int64_t numElements(llvm::ArrayRef<int64_t> shape);
/// Product of dims, or nullopt if a dim is negative or the product times
/// `elementBytes` overflows int64 (numElements() would be undefined).
std::optional<int64_t> checkedNumElements(llvm::ArrayRef<int64_t> shape,
                                          int64_t elementBytes = 1);

/// A statically shaped tensor type, printed as `f32[8,64,128]` (`f32[]` for a
/// scalar).
struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numElements() const { return strata::numElements(shape); }
  int64_t bytes() const { return numElements() * dtypeBytes(dtype); }
  bool operator==(const TensorType &o) const {
    return dtype == o.dtype && shape == o.shape;
  }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
  std::string str() const;
  /// Whether every dim is positive and bytes() fits in int64: what the
  /// parser and verifier require of every value's type.
  bool isValid() const;
};

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const TensorType &t);

} // namespace strata
