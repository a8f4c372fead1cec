//===- Backend.h - What a DeviceGroup's devices and communicators are -----===//
//
// The factory a DeviceGroup (DeviceGroup.h) makes its ranks with: a device
// per rank and the communicators between them. `cpu` is CPU devices
// (runtime/cpu) with Gloo communicators (runtime/comm); the CUDA backends
// (`cuda` with NCCL, `cuda-interpret`) plug in here and are not built yet.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace strata {

enum class Backend { Cpu };

/// `cpu`; the names of backends not built yet are errors saying so.
llvm::Expected<Backend> parseBackend(llvm::StringRef name);
llvm::StringRef backendName(Backend b);

/// The device of global rank `rank` (its index among the machine's devices).
std::unique_ptr<Device> makeDevice(Backend b, int64_t rank);

} // namespace strata
