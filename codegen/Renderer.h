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
//                                          [double *partial,] int64_t n,
//                                          uint64_t seed, uint64_t step);
//    n = numElements() (the shapes are compiled in; n is not read). Every
//    kernel carries __launch_bounds__(threads) and must be launched with
//    1-D blocks of exactly CudaLaunch::threads threads; any gridDim.x >= 1
//    computes the same bits (every kernel grid-strides over a partition
//    fixed by the shapes). Per kind (CudaLaunch::Kind, cudaLaunchOf):
//     - Elementwise: 256 threads; a thread takes groups of `vector`
//       consecutive elements.
//     - ColumnSums (elementwise with column sums): 256 threads; a work item
//       is one chunk of rows x `vector` columns; it writes the chunk's f64
//       column sums into `partial`, then NAME_sums (256 threads, any grid)
//       adds the chunks in chunk order.
//     - Row: one block per row (grid-stride over rows), a thread owning
//       groupsPerThread groups of `vector` columns; row sums by warp
//       shuffles, then across warps in warp order through shared memory.
//       A launch with other blocks traps (__trap: a launch failure).
//     - RowSums: as Row, a block walking the rows of a chunk in order,
//       then partial and NAME_sums as ColumnSums.
//    Vector operands are read and written 128 bits at a time (float4,
//    double2) when all of them are aligned, else element by element; the
//    values are the same either way.
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
/// above): the kernel's launch metadata.
struct CudaLaunch {
  enum class Kind { Elementwise, ColumnSums, Row, RowSums };
  Kind kind = Kind::Elementwise;
  /// blockDim.x the kernel requires: 1-D blocks of exactly this many
  /// threads (its __launch_bounds__; a multiple of 32).
  unsigned threads = 0;
  /// A gridDim.x that fills a GPU; any grid >= 1 gives the same result.
  unsigned blocks = 0;
  /// Elements per group (128-bit accesses when aligned); 1: scalar.
  int vector = 1;
  /// Whether the kernel indexes with 32-bit ints (all counts < 2^31).
  bool index32 = true;
  /// Row kernels: groups of `vector` columns per thread (its cache of each
  /// scratch row and column sum: groupsPerThread * vector elements).
  int64_t groupsPerThread = 0;
  /// Column sums: the rows are cut into `chunks` chunks of `rowsPerChunk`
  /// (the last one shorter), fixed by the shapes; the kernel writes each
  /// chunk's f64 column sums into the workspace `partial` (sums x chunks x
  /// C doubles, sum-major), then SYMBOL_sums adds them up in chunk order on
  /// `sumBlocks` blocks of `sumThreads`.
  int64_t chunks = 0, rowsPerChunk = 0;
  int64_t partialDoubles = 0;
  unsigned sumBlocks = 0, sumThreads = 0;
};
CudaLaunch cudaLaunchOf(const KernelPlan &p);

/// `strata_philox(index, step, seed, stream)`, the Philox4x32-10 draw every
/// dropout mask comes from (runtime/kernels/Philox.h), as the CUDA C (and
/// C++) text the kernels include; it needs STRATA_FN, uint32_t and
/// uint64_t defined. Hand-written dropout kernels include it too, so their
/// masks are the generated kernels' and the CPU's.
llvm::StringRef philoxSource();

/// One translation unit: the target's prelude, then one kernel per distinct
/// plan.
KernelSource renderKernels(llvm::ArrayRef<KernelPlan> plans, Target target);

} // namespace strata::codegen
