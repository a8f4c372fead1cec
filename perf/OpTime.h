//===- OpTime.h - Predicted time of one op on one device ------------------===//
//
// The compute half of the performance model, from the hardware description
// alone (no constant is fitted to training results):
//
//   GEMM      a kernel tiles the m x n output into gemm_tile_m x gemm_tile_n
//             tiles, one per multiprocessor at a time; tiles run in waves of
//             `multiprocessors`, so a partial last wave costs a whole one
//             (wave quantization) and a dimension that is not a multiple of
//             the tile pays for the padding. A tile of depth k takes
//             2*tm*tn*(k + kFill) / (peak / multiprocessors) seconds: kFill =
//             64 is the software pipeline's fill and the epilogue (about two
//             32-deep k-blocks), which is what makes small k inefficient. The
//             kernel is also bounded by reading A and B and writing C once at
//             the memory bandwidth: time = max(compute, bytes / bandwidth) +
//             kernel_launch_s.
//   attention a fused (flash-style) kernel: its batched GEMMs (2 forward,
//             5 backward: QK^T recomputed, dP, dV, dQ, dK) by the GEMM
//             model, half the tiles when causal (the masked ones are
//             skipped), plus reading q, k, v and writing the result.
//   fused     one kernel: its matmul anchor's GEMM time, bounded below by
//             the fused node's operands and results at memory bandwidth.
//   others    memory-bound: bytes read and written / bandwidth + launch
//             (reshape is a view: free).
//
// A measured description (strata calibrate, perf/Calibrate.h and
// CalibrateDevice.h) carries tables instead, used when they hold samples
// of the plan's precision (f32, or bf16: `half`; tf32 is never measured):
// a GEMM runs at the rate (FLOP/s) measured for the same transposes,
// interpolated trilinearly in log(m), log(n), log(k)
// (in log rate) between the 8 grid samples around its shape and clamped to
// the grid's edges (a kernel's efficiency changes smoothly with the shape,
// and a single sample's noise then weighs less); where a corner was not
// measured, the nearest sample's rate; attention the nearest measured (seq,
// head_dim) scaled by heads and causal FLOPs; a memory-bound kernel moves its
// bytes at the bandwidth measured for that working set (interpolated in log
// bytes), since a CPU's caches make small tensors several times faster than
// DRAM. A CPU calibration also has an op table (perf/Calibrate.h): seconds
// per element of each memory-bound op, and of each fused body (for a fused
// GEMM, its epilogue), measured on reference GPT and Llama nodes. On a CPU a
// layer norm, gelu or cross entropy computes for longer than its bytes
// take to move (gpt_tiny's layer_norm_grad: 1.1 ns per element on 2 cores,
// 0.03 ns of bandwidth), so such a kernel takes the larger of the two; a
// fused GEMM adds its epilogue's entry; a fused node without an entry sums
// its body ops'.
//
// Tensor bytes follow the precision (Hardware.h): under bf16 an f32 tensor
// of a stage program counts 2 bytes per element.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "perf/Hardware.h"

#include <functional>

namespace strata {

/// The per-device cost of ops under one hardware description and precision.
class OpTimeModel {
public:
  /// `peak`: peakFlops(hw, precision), already checked.
  OpTimeModel(const pb::Hardware &hw, Precision precision, double peak);

  /// Seconds of the GEMM part of `batch` (m x k) * (k x n) products at the
  /// tile and wave granularity above (no launch, no memory bound).
  double gemmComputeSeconds(double batch, int64_t m, int64_t n,
                            int64_t k) const;
  /// A whole GEMM kernel: max(compute, bytes / bandwidth) + launch; the
  /// measured table's time when there is one (file comment).
  double gemmSeconds(double batch, int64_t m, int64_t n, int64_t k,
                     double bytes, bool transA = false,
                     bool transB = false) const;
  /// A memory-bound kernel moving `bytes`.
  double memorySeconds(double bytes) const;
  /// Seconds of compute node `n` of `g` (not a collective or message);
  /// `halfTensors`: count f32 tensors as 16-bit (bf16 stage programs).
  double nodeSeconds(const Graph &g, const Node &n, bool halfTensors) const;

  const pb::Hardware &hardware() const { return hw_; }

  /// The tile's pipeline fill, in elements of k (see the file comment).
  static constexpr int64_t kFill = 64;

private:
  double bytes(const TensorType &t, bool half) const;
  /// Seconds to move `bytes` (the bandwidth table's, else the peak's).
  double moveSeconds(double bytes) const;
  /// The table's time for the GEMM, or < 0 without a table.
  double measuredGemm(double batch, int64_t m, int64_t n, int64_t k,
                      bool transA, bool transB) const;
  /// The table's time for attention, or < 0 without one.
  double measuredAttention(double bh, int64_t s, int64_t d, bool backward,
                           double flopShare) const;
  double attentionSeconds(const Graph &g, const Node &n, bool half) const;

  const pb::Hardware &hw_;
  Precision precision_;
  double peak_;
};

/// Predicted seconds of a compute node on `hw` at `precision` (0 for
/// collectives and messages), as passes/pipeline/CostModel.h's
/// ScopedNodeCost takes it: the stage cut and auto recomputation then weigh
/// nodes by time on that device. The function keeps its own copy of `hw`.
/// Errors: a precision the device lacks.
llvm::Expected<std::function<double(const Graph &, const Node &)>>
predictedNodeSeconds(const pb::Hardware &hw, Precision precision);

/// The op table's key of node `n` (pb::OpSample::op): its op's name, or a
/// fused node's body ops in order, "fused(matmul,add,gelu)".
std::string opTableKey(const Node &n);

} // namespace strata
