//===- InterpretDriver.h - The CUDA driver emulated on the host -----------===//
//
// Interpret mode (`--device cuda-interpret`): the CUDA backend's host code
// over this driver, the role TRITON_INTERPRET=1 and Pallas' interpret mode
// play for their kernels.
//  - Device memory is host memory. Each allocation is 256-byte aligned,
//    filled with poison (0xFF bytes: NaN as f32 and f64, -1 as integers) and
//    fenced by 256 guard bytes on each side; after every kernel, copy and
//    fill the guards are checked, and a write out of bounds is reported with
//    the kernel's name, the allocation and the offset.
//  - Modules: the CUDA C source is compiled by the host compiler with the
//    SIMT header (Simt.h) into a shared library (runtime/cpu/HostCompiler.h,
//    cached), one entry point per kernel.
//  - Streams and events are host queues (runtime/cpu/HostStreams.h), so
//    ordering bugs between streams show up as on a GPU.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/Driver.h"

#include <memory>

namespace strata::cuda {

/// The emulated driver. `capacityBytes` is the device memory it reports
/// and enforces (0: the host's physical memory).
std::unique_ptr<Driver> makeInterpretDriver(int64_t capacityBytes = 0);

} // namespace strata::cuda
