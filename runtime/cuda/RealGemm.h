//===- RealGemm.h - GEMMs through cuBLASLt, loaded with dlopen ------------===//
#pragma once

#include "runtime/cuda/Driver.h"

namespace strata::cuda {

/// Runs Driver::gemm's descriptors on a GPU.
class GemmEngine {
public:
  virtual ~GemmEngine() = default;
  /// Enqueues `g` on `stream` (a CUstream), with `workspace` device bytes.
  virtual llvm::Error run(const Gemm &g, void *stream, DevicePtr workspace,
                          size_t workspaceBytes) = 0;
};

/// cuBLASLt, or why it cannot be loaded.
llvm::Expected<std::unique_ptr<GemmEngine>> openCublasLt();

} // namespace strata::cuda
