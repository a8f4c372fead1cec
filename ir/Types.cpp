//===- Types.cpp - DTypes, shapes and tensor types ------------------------===//
#include "ir/Types.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

namespace strata {

llvm::StringRef dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::I1:
    return "i1";
  }
  return "?";
}

std::optional<DType> parseDType(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Case("f32", DType::F32)
      .Case("bf16", DType::BF16)
      .Case("f16", DType::F16)
      .Case("f64", DType::F64)
      .Case("i32", DType::I32)
      .Case("i64", DType::I64)
      .Case("i1", DType::I1)
      .Default(std::nullopt);
}

int64_t dtypeBytes(DType t) {
  switch (t) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::I1:
    return 1;
  }
  return 0;
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16 ||
         t == DType::F64;
}

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::optional<int64_t> checkedNumElements(llvm::ArrayRef<int64_t> shape,
                                          int64_t elementBytes) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d && n > INT64_MAX / elementBytes / d))
      return std::nullopt;
    n *= d;
  }
  return n;
}

bool TensorType::isValid() const {
  return llvm::all_of(shape, [](int64_t d) { return d > 0; }) &&
         checkedNumElements(shape, dtypeBytes(dtype));
}

std::string TensorType::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << *this;
  return s;
}

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const TensorType &t) {
  os << dtypeName(t.dtype) << '[';
  for (size_t i = 0; i < t.shape.size(); ++i)
    os << (i ? "," : "") << t.shape[i];
  return os << ']';
}

} // namespace strata
