//===- Backend.cpp - What a DeviceGroup's devices and communicators are ---===//
#include "runtime/parallel/Backend.h"

#include "runtime/cpu/CpuDevice.h"

namespace strata {

llvm::Expected<Backend> parseBackend(llvm::StringRef name) {
  if (name == "cpu")
    return Backend::Cpu;
  if (name == "cuda" || name == "cuda-interpret")
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the " + name + " backend is not built yet (use --device cpu)");
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown device '" + name + "' (known: cpu)");
}

llvm::StringRef backendName(Backend b) {
  switch (b) {
  case Backend::Cpu:
    return "cpu";
  }
  return "?";
}

std::unique_ptr<Device> makeDevice(Backend b, int64_t rank) {
  switch (b) {
  case Backend::Cpu:
    return std::make_unique<CpuDevice>(int(rank));
  }
  return nullptr;
}

} // namespace strata
