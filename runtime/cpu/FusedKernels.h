//===- FusedKernels.h - Fused nodes on the CPU: generated C++ -------------===//
//
// The CPU kernel of a `fused` node (ir/Ops.def) is C++ generated from its
// body (codegen/Renderer.h). All kernels of a graph compile into ONE shared
// library (runtime/cpu/HostCompiler.h, -O3 -march=native), which is
// dlopen'ed and each kernel found by its symbol.
//
// When: Executable::create calls Device::prepare, and CpuDevice::prepare
// calls prepareFusedKernels, so compiler errors surface before the first
// launch. The kernels come back as the graph's KernelModule (by body,
// Node::body, shared by copies of a node), which every launch names
// (LaunchContext::module); launching a fused node without it is an error.
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

/// Compiles, or loads from the cache, the kernels of every fused node of
/// `g`; null if it has none. Thread-safe.
llvm::Expected<std::unique_ptr<KernelModule>>
prepareFusedKernels(const Graph &g);

/// Runs fused node `node` of `g` from ctx.module: the anchor matmul (if any)
/// into its result buffer with the built-in CPU kernel, then the generated
/// loop, its elements split over threads (kernels::parallelFor).
llvm::Error runFusedKernel(const Graph &g, const Node &node,
                           llvm::ArrayRef<const void *> operands,
                           llvm::ArrayRef<void *> results,
                           const LaunchContext &ctx);

} // namespace strata
