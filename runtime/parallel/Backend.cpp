//===- Backend.cpp - What a DeviceGroup's devices and communicators are ---===//
#include "runtime/parallel/Backend.h"

#include "runtime/cpu/CpuDevice.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/interpret/InterpretDriver.h"

namespace strata {

llvm::Expected<Backend> parseBackend(llvm::StringRef name) {
  if (name == "cpu")
    return Backend::Cpu;
  if (name == "cuda-interpret")
    return Backend::CudaInterpret;
  if (name == "cuda") {
    auto driver = cuda::openRealDriver(0);
    if (!driver)
      return driver.takeError();
    return Backend::Cuda;
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown device '" + name +
                                     "' (known: cpu, cuda, cuda-interpret)");
}

llvm::StringRef backendName(Backend b) {
  switch (b) {
  case Backend::Cpu:
    return "cpu";
  case Backend::Cuda:
    return "cuda";
  case Backend::CudaInterpret:
    return "cuda-interpret";
  }
  return "?";
}

llvm::Expected<std::unique_ptr<Device>> makeDevice(Backend b, int64_t rank,
                                                   int64_t localRank) {
  switch (b) {
  case Backend::Cpu:
    return std::make_unique<CpuDevice>(int(rank));
  case Backend::CudaInterpret: {
    auto d = CudaDevice::create(cuda::makeInterpretDriver(), int(rank));
    if (!d)
      return d.takeError();
    return std::unique_ptr<Device>(std::move(*d));
  }
  case Backend::Cuda: {
    auto driver = cuda::openRealDriver(int(localRank));
    if (!driver)
      return driver.takeError();
    auto d = CudaDevice::create(std::move(*driver), int(rank));
    if (!d)
      return d.takeError();
    return std::unique_ptr<Device>(std::move(*d));
  }
  }
  return nullptr;
}

} // namespace strata
