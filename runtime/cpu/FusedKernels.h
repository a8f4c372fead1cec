//===- FusedKernels.h - Fused nodes on the CPU: generated C++ -------------===//
//
// The CPU kernel of a `fused` node (ir/Ops.def) is C++ generated from its
// body (codegen/Renderer.h). All not-yet-loaded kernels of a graph compile
// into ONE shared library with the host compiler
//   $STRATA_CXX (default c++) -std=c++20 -O3 -march=native -fno-math-errno
//                             -fno-trapping-math -fopenmp-simd -fPIC -shared
// (the last three let the loops vectorize: no errno or FP-trap side effects
// to preserve, and `omp simd` honoured; results are unchanged)
// cached by content hash (source, compiler, flags, CPU model) under
// $XDG_CACHE_HOME/strata or ~/.cache/strata, so a graph compiles once per
// machine; the library is dlopen'ed and each kernel found by its symbol.
//
// When: Executable::create calls Device::prepare, and CpuDevice::prepare
// calls prepareFusedKernels, so compiler errors surface before the first
// launch. A launch of a node that was not prepared (a caller that skipped
// Device::prepare) prepares its graph first. Loaded kernels are keyed by
// their body (Node::body, shared by copies of a node); one mutex guards the
// table and compilation.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "runtime/Device.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace strata {

/// Whether the CPU can run fused node `node` (its body has a KernelPlan).
bool fusedKernelSupports(const Node &node);

/// Compiles, or loads from the cache, the kernels of every fused node of `g`
/// that is not loaded yet. Thread-safe.
llvm::Error prepareFusedKernels(const Graph &g);

/// Runs fused node `node` of `g`: the anchor matmul (if any) into its result
/// buffer with the built-in CPU kernel, then the generated loop, its
/// elements split over threads (kernels::parallelFor).
llvm::Error runFusedKernel(const Graph &g, const Node &node,
                           llvm::ArrayRef<const void *> operands,
                           llvm::ArrayRef<void *> results,
                           const LaunchContext &ctx);

/// The directory of compiled kernel libraries (see above); not created.
std::string fusedKernelCacheDir();

} // namespace strata
