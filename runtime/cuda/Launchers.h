//===- Launchers.h - What the op launchers share (internal) ---------------===//
//
// Helpers of the launchers of runtime/cuda/OpKernels.h, and the launchers
// defined outside OpKernels.cpp (AttentionLaunchers.cpp; LayoutLaunchers.cpp:
// data movement, reductions, iota, rope, the rank-dependent ops). Not for use
// outside runtime/cuda.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/OpKernels.h"

namespace strata::cuda::launchers {

/// "<op> (<scope>): <msg>".
llvm::Error fail(const OpLaunch &a, const llvm::Twine &msg);
/// Float dtypes with kernels.
bool f32OrF64(DType dt);
/// The kernel named `base` + "_" + the dtype's suffix (f32, f64, i32, i64).
llvm::Expected<Function> typed(const OpLaunch &a, llvm::StringRef base,
                               DType dt);
/// Enqueues `f` on the launch's stream.
llvm::Error launch(const OpLaunch &a, Function f, Dim3 grid, Dim3 block,
                   void **params);
/// Offset of this rank's block of `v` along `dim` in the global tensor
/// (ir/Ops.def, rank-dependent ops); 0 unsharded or without a mesh.
int64_t shardOffset(const OpLaunch &a, ValueId v, size_t dim);

// AttentionLaunchers.cpp.
llvm::Error attentionK(const OpLaunch &a);
llvm::Error attentionGradK(const OpLaunch &a);
/// Attention operands the kernels take: q [B,S,Hq,D], k and v [B,S,Hkv,D]
/// of one float dtype, Hq a multiple of Hkv, D <= 128.
bool attentionShapes(const Graph &g, ValueId q, ValueId k, ValueId v);
/// Scratch of attentionGradK: three row statistics per query row of `q`.
int64_t attentionGradScratch(const TensorType &q);

// LayoutLaunchers.cpp.
llvm::Error transposeK(const OpLaunch &a);
llvm::Error broadcastK(const OpLaunch &a);
llvm::Error sliceK(const OpLaunch &a);
llvm::Error concatK(const OpLaunch &a);
llvm::Error iotaK(const OpLaunch &a);
llvm::Error reduceK(const OpLaunch &a);
llvm::Error ropeK(const OpLaunch &a);
llvm::Error shardSliceK(const OpLaunch &a);
/// Scratch of reduceK for `node` over `x`: the two-pass reduction's
/// partial values, else 0.
int64_t reduceScratch(const TensorType &x, const Node &node);
/// Scratch of ropeK over `x` [B,S,H,D]: the cos/sin table.
int64_t ropeScratch(const TensorType &x);
llvm::Error pickLabelK(const OpLaunch &a);
llvm::Error oneHotK(const OpLaunch &a);

} // namespace strata::cuda::launchers
