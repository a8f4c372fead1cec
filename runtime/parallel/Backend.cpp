//===- Backend.cpp - What a DeviceGroup's devices and communicators are ---===//
#include "runtime/parallel/Backend.h"

#include "passes/recompute/Recompute.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/comm/Communicator.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/interpret/InterpretDriver.h"

#include <cstdlib>

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

llvm::Error connectDevice(Device &device, Communicators &comms) {
  auto *cuda = dynamic_cast<CudaDevice *>(&device);
  if (!cuda || comms.mesh().numDevices() < 2)
    return llvm::Error::success();
  return cuda->connectCollectives(comms);
}

int64_t gpuOrdinal(int64_t localRank, const char *visibleDevices) {
  if (!visibleDevices)
    return localRank;
  llvm::StringRef list = llvm::StringRef(visibleDevices).trim();
  return !list.empty() && !list.contains(',') ? 0 : localRank;
}

llvm::Expected<std::unique_ptr<Device>> makeDevice(Backend b, int64_t rank,
                                                   int64_t localRank) {
  switch (b) {
  case Backend::Cpu:
    return std::make_unique<CpuDevice>(int(rank));
  case Backend::CudaInterpret: {
    // $STRATA_INTERPRET_MEMORY (16GiB, 512MiB, ... or bytes) sets the
    // emulated device's capacity; default the host's memory.
    int64_t capacity = 0;
    if (const char *env = std::getenv("STRATA_INTERPRET_MEMORY")) {
      auto bytes = parseBytes(env);
      if (!bytes)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            llvm::Twine("STRATA_INTERPRET_MEMORY takes a byte count such as "
                        "512MiB, got '") +
                env + "'");
      capacity = *bytes;
    }
    auto d = CudaDevice::create(cuda::makeInterpretDriver(capacity), int(rank));
    if (!d)
      return d.takeError();
    return std::unique_ptr<Device>(std::move(*d));
  }
  case Backend::Cuda: {
    int64_t gpu = gpuOrdinal(localRank, std::getenv("CUDA_VISIBLE_DEVICES"));
    auto driver = cuda::openRealDriver(int(gpu));
    if (!driver)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "rank " + llvm::Twine(rank) + " (local rank " +
              llvm::Twine(localRank) + ") runs on GPU " + llvm::Twine(gpu) +
              ": " +
              llvm::toString(driver.takeError()) +
              " (each rank needs a GPU of its own: start one process per "
              "GPU, or choose --tp/--dp/--pp whose product is the GPU count)");
    auto d = CudaDevice::create(std::move(*driver), int(rank));
    if (!d)
      return d.takeError();
    return std::unique_ptr<Device>(std::move(*d));
  }
  }
  return nullptr;
}

} // namespace strata
