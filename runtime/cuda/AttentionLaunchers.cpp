//===- AttentionLaunchers.cpp - Launchers of the attention kernels --------===//
//
// attention: one launch of kernels/Attention.cu's forward; attention_grad:
// row statistics into scratch, then dq and dk/dv (three launches, no
// atomics). Blocks of kAttnThreads; tiles of 16 (f32) or 8 (f64) queries.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Launchers.h"

#include <algorithm>
#include <cmath>

namespace strata::cuda::launchers {
namespace {

// Attention: kernels/Attention.cu's AttnDims, laid out alike.
struct AttnDims {
  long long B, S, Hq, Hkv, D, window;
  int causal;
};
constexpr unsigned kAttnThreads = 128;
constexpr int64_t kAttnMaxD = 128;

AttnDims attnDims(const OpLaunch &a, const TensorType &q,
                  const TensorType &kv) {
  return {q.shape[0],
          q.shape[1],
          q.shape[2],
          kv.shape[2],
          q.shape[3],
          a.node.attrs.getInt("window", 0),
          int(a.node.attrs.getBool("causal"))};
}
double attnScale(const OpLaunch &a, const TensorType &q) {
  return a.node.attrs.getFloat("scale", 1.0 / std::sqrt(double(q.shape[3])));
}
/// Grid of (tiles of `tile` rows, `heads` of each batch) blocks.
Dim3 attnGrid(const AttnDims &d, long long heads, int tile) {
  return {unsigned(std::clamp<long long>((d.S + tile - 1) / tile, 1, 65535)),
          unsigned(std::clamp<long long>(d.B * heads, 1, 65535)), 1};
}
int queryTile(DType dt) { return dt == DType::F32 ? 16 : 8; } // AttnTiles

} // namespace

llvm::Error attentionK(const OpLaunch &a) {
  DType dt = a.inType(0).dtype;
  auto f = typed(a, "strata_attn_fwd", dt);
  if (!f)
    return f.takeError();
  AttnDims d = attnDims(a, a.inType(0), a.inType(1));
  double scale = attnScale(a, a.inType(0));
  const void *q = a.operands[0], *k = a.operands[1], *v = a.operands[2];
  void *out = a.results[0];
  void *params[] = {&q, &k, &v, &out, &d, &scale};
  return launch(a, *f, attnGrid(d, d.Hq, queryTile(dt)), {kAttnThreads, 1, 1},
                params);
}

int64_t attentionGradScratch(const TensorType &q) {
  return std::max<int64_t>(3 * q.shape[0] * q.shape[2] * q.shape[1], 1) *
         dtypeBytes(q.dtype);
}

llvm::Error attentionGradK(const OpLaunch &a) {
  DType dt = a.inType(1).dtype;
  auto statsF = typed(a, "strata_attn_stats", dt);
  auto dqF = typed(a, "strata_attn_dq", dt);
  auto dkvF = typed(a, "strata_attn_dkv", dt);
  if (!statsF || !dqF || !dkvF)
    return llvm::joinErrors(
        llvm::joinErrors(statsF.takeError(), dqF.takeError()),
        dkvF.takeError());
  AttnDims d = attnDims(a, a.inType(1), a.inType(2));
  double scale = attnScale(a, a.inType(1));
  auto stats = a.kernels.scratch(a.stream, attentionGradScratch(a.inType(1)));
  if (!stats)
    return stats.takeError();
  const void *dout = a.operands[0], *q = a.operands[1], *k = a.operands[2],
             *v = a.operands[3];
  void *st = *stats, *dq = a.results[0], *dk = a.results[1], *dv = a.results[2];
  int tile = queryTile(dt);
  void *statsParams[] = {&dout, &q, &k, &v, &st, &d, &scale};
  if (auto e = launch(a, *statsF, attnGrid(d, d.Hq, tile), {kAttnThreads, 1, 1},
                      statsParams))
    return e;
  void *dqParams[] = {&dout, &q, &k, &v, &st, &dq, &d, &scale};
  if (auto e = launch(a, *dqF, attnGrid(d, d.Hq, tile), {kAttnThreads, 1, 1},
                      dqParams))
    return e;
  void *dkvParams[] = {&dout, &q, &k, &v, &st, &dk, &dv, &d, &scale};
  return launch(a, *dkvF, attnGrid(d, d.Hkv, tile), {kAttnThreads, 1, 1},
                dkvParams);
}

/// Attention operands the kernels take: q [B,S,Hq,D], k and v [B,S,Hkv,D]
/// of one float dtype, Hq a multiple of Hkv, D <= kAttnMaxD.
bool attentionShapes(const Graph &g, ValueId q, ValueId k, ValueId v) {
  const TensorType &tq = g.type(q), &tk = g.type(k), &tv = g.type(v);
  return f32OrF64(tq.dtype) && tk.dtype == tq.dtype && tv.dtype == tq.dtype &&
         tq.rank() == 4 && tk.shape == tv.shape && tk.rank() == 4 &&
         tk.shape[0] == tq.shape[0] && tk.shape[1] == tq.shape[1] &&
         tk.shape[3] == tq.shape[3] && tk.shape[2] > 0 &&
         tq.shape[2] % tk.shape[2] == 0 && tq.shape[3] <= kAttnMaxD;
}

} // namespace strata::cuda::launchers
