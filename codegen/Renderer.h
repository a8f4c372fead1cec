//===- Renderer.h - Fused kernels as C++ or as CUDA C for NVRTC -----------===//
//
// One renderer turns KernelPlans (KernelPlan.h) into source text. The
// per-element code comes from one rule per op, shared by both targets; a
// target (Language.h) only decides what differs: the prelude, the function
// signature, the loop and its index math, and the names of math functions.
//
// Calling conventions (the runtimes depend on them):
//  - C++:  extern "C" void NAME(const void *const *in, void *const *out,
//                               int64_t begin, int64_t end,
//                               uint64_t seed, uint64_t step);
//    computes the elements [begin, end) of the domain (flat row-major
//    indices); in[k] is load k, out[k] is store k (result k).
//  - CUDA: extern "C" __global__ void NAME(const T *in0, ..., T *out0, ...,
//                                          int64_t n, uint64_t seed,
//                                          uint64_t step);
//    one thread per element, grid-stride over the n = numElements() elements
//    (a column-sum kernel: one thread per column; a row kernel: one warp per
//    row, with `double *partial` before `n` when it has column sums, and a
//    second kernel NAME_sums: see CudaLaunch).
// `seed` and `step` are the dropout key and counter word (runtime/Device.h
// LaunchContext); kernels without dropout ignore them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/KernelPlan.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace strata::codegen {

enum class Target { Cpp, Cuda };

/// A translation unit of kernels and the symbol that runs each plan.
struct KernelSource {
  std::string text;
  /// Per plan. Plans whose code is the same up to value names and scopes
  /// (the same kernel in every layer of a model) share the first one's
  /// symbol and are rendered once.
  std::vector<std::string> symbols;
};

/// How a CUDA runtime launches the kernel of plan `p` (the conventions
/// above).
struct CudaLaunch {
  unsigned blocks = 0, threads = 0;
  /// Row kernels with column sums: the kernel runs `warps` warps (one per
  /// block of consecutive rows) writing their f64 column sums into the
  /// workspace `partial` (sums x warps x C doubles, sum-major), then
  /// SYMBOL_sums adds them up in warp order on `sumBlocks` blocks.
  int64_t warps = 0;
  int64_t partialDoubles = 0;
  unsigned sumBlocks = 0, sumThreads = 0;
};
CudaLaunch cudaLaunchOf(const KernelPlan &p);

/// One translation unit: the target's prelude, then one kernel per distinct
/// plan.
KernelSource renderKernels(llvm::ArrayRef<KernelPlan> plans, Target target);

} // namespace strata::codegen
