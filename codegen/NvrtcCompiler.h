//===- NvrtcCompiler.h - CUDA C source to cubin with NVRTC ----------------===//
//
// Built only when the CUDA toolkit's headers are found (STRATA_HAVE_NVRTC);
// the library itself is loaded at run time (NvrtcCompiler.cpp), and every
// call fails with nvrtcAvailable()'s reason where it is missing. Compiling
// needs no GPU: NVRTC emits SASS for a named architecture, so the default
// tests compile every generated kernel for sm_80 (A100) and sm_90 (H100).
// Numerics follow the CPU renderer: no --use_fast_math, FMA contraction on
// (as the host compiler's -O3 -march=native).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace strata::codegen {

/// Compiles `source` (one translation unit, e.g. renderKernels(.., Cuda)) to
/// a cubin for sm_<arch> (80 for sm_80): SASS, never PTX. Errors carry
/// NVRTC's log.
llvm::Expected<std::string>
compileCubin(llvm::StringRef source, int arch,
             llvm::StringRef fileName = "strata_fused.cu");

/// A cubin and what NVRTC logged while compiling it.
struct CubinAndLog {
  std::string cubin;
  std::string log;
};

/// compileCubin with extra NVRTC options (such as "--ptxas-options=-v",
/// whose report goes to the log), returning the log too.
llvm::Expected<CubinAndLog>
compileCubinWithLog(llvm::StringRef source, int arch,
                    llvm::ArrayRef<std::string> extraOptions,
                    llvm::StringRef fileName = "strata_fused.cu");

/// One kernel's resources as ptxas reports them (--ptxas-options=-v).
struct KernelResources {
  std::string name;
  int registers = 0;
  /// Per thread, bytes: the stack frame (local memory) and the spills
  /// into it.
  int64_t stackFrame = 0, spillStores = 0, spillLoads = 0;
  int64_t sharedBytes = 0; ///< per block, static
};

/// The kernels of a ptxas -v report, in report order; an error if the
/// report has a kernel without its "Used N registers" line.
llvm::Expected<std::vector<KernelResources>>
parsePtxasReport(llvm::StringRef log);

/// Success if NVRTC was loaded, else why not (what was tried, how to fix).
llvm::Error nvrtcAvailable();

/// The sm_<arch> values this NVRTC can target, ascending (none without
/// NVRTC).
std::vector<int> nvrtcSupportedArchs();

/// NVRTC's version as "major.minor" ("none" without NVRTC).
std::string nvrtcVersion();

} // namespace strata::codegen
