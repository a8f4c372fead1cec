//===- NvrtcCompiler.h - CUDA C source to cubin with NVRTC ----------------===//
//
// Built only when the CUDA toolkit is found (STRATA_HAVE_NVRTC). Compiling
// needs no GPU: NVRTC emits SASS for a named architecture, so the default
// tests compile every generated kernel for sm_80 (A100) and sm_90 (H100).
// Numerics follow the CPU renderer: no --use_fast_math, FMA contraction on
// (as the host compiler's -O3 -march=native).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace strata::codegen {

/// Compiles `source` (one translation unit, e.g. renderKernels(.., Cuda)) to
/// a cubin for sm_<arch> (80 for sm_80). Errors carry NVRTC's log.
llvm::Expected<std::string>
compileCubin(llvm::StringRef source, int arch,
             llvm::StringRef fileName = "strata_fused.cu");

/// The sm_<arch> values this NVRTC can target, ascending.
std::vector<int> nvrtcSupportedArchs();

/// NVRTC's version as "major.minor".
std::string nvrtcVersion();

} // namespace strata::codegen
