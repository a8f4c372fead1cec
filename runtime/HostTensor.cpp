//===- HostTensor.cpp - An owning, typed host buffer
//-----------------------===//
#include "runtime/HostTensor.h"
#include "runtime/kernels/Float16.h"

#include "llvm/Support/ErrorHandling.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace strata {

void HostTensor::FreeDeleter::operator()(void *p) const { std::free(p); }

HostTensor::HostTensor(TensorType type) : type_(std::move(type)) {
  size_t bytes = (static_cast<size_t>(type_.bytes()) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, bytes ? bytes : 64);
  if (!p)
    llvm::report_fatal_error("out of host memory");
  std::memset(p, 0, bytes);
  data_ =
      std::shared_ptr<std::byte>(static_cast<std::byte *>(p), FreeDeleter());
}

double HostTensor::get(int64_t i) const {
  switch (dtype()) {
  case DType::F32:
    return data<float>()[i];
  case DType::F64:
    return data<double>()[i];
  case DType::BF16:
    return kernels::bf16ToFloat(data<uint16_t>()[i]);
  case DType::F16:
    return kernels::halfToFloat(data<uint16_t>()[i]);
  case DType::I32:
    return data<int32_t>()[i];
  case DType::I64:
    return double(data<int64_t>()[i]);
  case DType::I1:
    return data<uint8_t>()[i];
  default:
    llvm::report_fatal_error("HostTensor::get: unsupported dtype");
  }
}

void HostTensor::set(int64_t i, double v) {
  switch (dtype()) {
  case DType::F32:
    data<float>()[i] = float(v);
    return;
  case DType::F64:
    data<double>()[i] = v;
    return;
  case DType::BF16: // rounded to nearest even, as the kernels store
    data<uint16_t>()[i] = kernels::floatToBf16(float(v));
    return;
  case DType::F16:
    data<uint16_t>()[i] = kernels::floatToHalf(float(v));
    return;
  case DType::I32:
    data<int32_t>()[i] = int32_t(v);
    return;
  case DType::I64:
    data<int64_t>()[i] = int64_t(v);
    return;
  case DType::I1:
    data<uint8_t>()[i] = v != 0;
    return;
  default:
    llvm::report_fatal_error("HostTensor::set: unsupported dtype");
  }
}

HostTensor HostTensor::clone() const {
  HostTensor t(type_);
  if (bytes())
    std::memcpy(t.raw(), raw(), bytes());
  return t;
}

HostTensor HostTensor::castTo(DType dtype) const {
  if (dtype == this->dtype())
    return clone();
  HostTensor t(TensorType{dtype, type_.shape});
  for (int64_t i = 0, n = numElements(); i < n; ++i)
    t.set(i, get(i));
  return t;
}

template <typename T> static int64_t firstNonFiniteOf(const T *p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i]))
      return i;
  return -1;
}

int64_t HostTensor::firstNonFinite() const {
  switch (dtype()) {
  case DType::F32:
    return firstNonFiniteOf(data<float>(), numElements());
  case DType::F64:
    return firstNonFiniteOf(data<double>(), numElements());
  default:
    return -1;
  }
}

HostTensor HostTensor::scalar(double v, DType dtype) {
  HostTensor t(TensorType{dtype, {}});
  t.set(0, v);
  return t;
}

} // namespace strata
