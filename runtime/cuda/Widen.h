//===- Widen.h - Single ops as kernel bodies; 16-bit ops on f32 kernels ---===//
//
// A node the CUDA device runs alone becomes a one-node body for codegen
// (singleOpBody). A node with bf16 or fp16 operands or results (the
// mixed-precision pass's 16-bit activations) runs as the CPU device runs it
// (runtime/cpu/CpuOpKernels.cpp: runWidened): its f32 kernel on f32 copies.
// 16-bit operands are widened into scratch, the f32 kernel (hand-written or
// generated for widenedBody, the node with its 16-bit values retyped f32)
// computes, and 16-bit results are rounded once, to nearest even, when
// stored (kernels/Float16.cu: the CPU's conversions, bit for bit). Matmuls
// do not come here: cuBLASLt takes 16-bit inputs with f32 compute.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "runtime/cuda/OpKernels.h"

#include <memory>
#include <string>
#include <vector>

namespace strata::cuda {

/// bf16 or f16.
inline bool isFloat16(DType t) { return t == DType::BF16 || t == DType::F16; }

/// Whether `n` reads or writes a bf16 or f16 value.
bool hasFloat16(const Graph &g, const Node &n);

/// Node `n` of `g` alone as a body named `name`: its distinct operands as
/// inputs (`operandOfInput` receives each input's operand position), its
/// results as outputs.
std::shared_ptr<Graph> singleOpBody(const Graph &g, const Node &n,
                                    const std::string &name,
                                    std::vector<size_t> &operandOfInput);

/// singleOpBody with every bf16 / f16 value (and `dtype` attribute) f32.
std::shared_ptr<Graph> widenedBody(const Graph &g, const Node &n,
                                   const std::string &name,
                                   std::vector<size_t> &operandOfInput);

/// Where the f32 copies of a 16-bit node's operands, then results, lie in
/// one scratch buffer (launchWidened): 256-byte aligned offsets (-1: the
/// value is not 16-bit, no copy) and the buffer's bytes.
struct WidenLayout {
  std::vector<int64_t> offset;
  int64_t bytes = 0;
};
WidenLayout widenLayout(const Graph &g, const Node &n);

/// Enqueues y = x as f32 (widen) or x rounded to `dt` (narrow), `count`
/// elements, on `stream`.
llvm::Error widen(const OpKernelModule &kernels, StreamHandle stream, DType dt,
                  const void *x, void *y, int64_t count);
llvm::Error narrow(const OpKernelModule &kernels, StreamHandle stream, DType dt,
                   const void *x, void *y, int64_t count);

} // namespace strata::cuda
