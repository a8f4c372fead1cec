//===- Backend.h - What a DeviceGroup's devices and communicators are -----===//
//
// The factory a DeviceGroup (DeviceGroup.h) makes its ranks with: a device
// per rank and the communicators between them.
//  - `cpu`: CPU devices (runtime/cpu) with Gloo communicators (runtime/comm);
//  - `cuda-interpret`: CUDA devices over the emulated driver
//    (runtime/cuda/interpret), collectives by NCCL emulated over Gloo on
//    their host memory (runtime/cuda/nccl);
//  - `cuda`: CUDA devices on GPUs (runtime/cuda), the local rank's GPU each
//    (one GPU per rank: NCCL refuses two ranks on one GPU), collectives by
//    NCCL.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace strata {

enum class Backend { Cpu, Cuda, CudaInterpret };

/// `cpu`, `cuda` or `cuda-interpret`. For `cuda` it also checks that a
/// driver and a GPU are there, so a run without them fails before anything
/// is built.
llvm::Expected<Backend> parseBackend(llvm::StringRef name);
llvm::StringRef backendName(Backend b);

/// Connects what `device` needs for the collectives of `comms`' mesh (the
/// NCCL communicators of a CUDA device, when the mesh has more than one
/// device); every rank calls it once its groups are connected.
llvm::Error connectDevice(Device &device, Communicators &comms);

/// The GPU a process of local rank `localRank` runs on, given the value of
/// CUDA_VISIBLE_DEVICES (null: unset): its local rank, or 0 when exactly
/// one GPU is visible (Slurm's --gpus-per-task=1 or --gpu-bind binds one
/// GPU per task, which the process sees as device 0).
int64_t gpuOrdinal(int64_t localRank, const char *visibleDevices);

/// The device of global rank `rank`, the `localRank`-th of its machine.
llvm::Expected<std::unique_ptr<Device>> makeDevice(Backend b, int64_t rank,
                                                   int64_t localRank);

} // namespace strata
