//===- HostTensor.h - An owning, typed host buffer
//-------------------------===//
//
// The currency of the runtime's host side: inputs fed to a program, outputs
// read back, parameters saved in checkpoints. 64-byte aligned storage.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Types.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace strata {

class HostTensor {
public:
  HostTensor() = default;
  /// Zero-initialized tensor of `type`.
  explicit HostTensor(TensorType type);

  const TensorType &type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  llvm::ArrayRef<int64_t> shape() const { return type_.shape; }
  int64_t numElements() const { return type_.numElements(); }
  int64_t bytes() const { return type_.bytes(); }

  void *raw() { return data_.get(); }
  const void *raw() const { return data_.get(); }
  template <typename T> T *data() { return static_cast<T *>(raw()); }
  template <typename T> const T *data() const {
    return static_cast<const T *>(raw());
  }

  /// Element i converted to double (bf16 / f16 widened exactly).
  double get(int64_t i) const;
  /// Sets element i from a double (bf16 / f16: via f32, rounded to nearest
  /// even, runtime/kernels/Float16.h).
  void set(int64_t i, double v);

  /// A deep copy.
  HostTensor clone() const;
  /// A copy converted to `dtype` (between f32, f64, i32, i64).
  HostTensor castTo(DType dtype) const;

  static HostTensor scalar(double v, DType dtype = DType::F32);

  /// The index of the first NaN or infinity of an f32/f64 tensor, or -1
  /// (always -1 for other dtypes).
  int64_t firstNonFinite() const;

private:
  struct FreeDeleter {
    void operator()(void *p) const;
  };
  TensorType type_;
  std::shared_ptr<std::byte> data_;
};

} // namespace strata
