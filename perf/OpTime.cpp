//===- OpTime.cpp - Predicted time of one op on one device ----------------===//
#include "perf/OpTime.h"

#include "ir/Op.h"
#include "passes/pipeline/CostModel.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace strata {

OpTimeModel::OpTimeModel(const pb::Hardware &hw, Precision precision,
                         double peak)
    : hw_(hw), precision_(precision), peak_(peak) {}

double OpTimeModel::bytes(const TensorType &t, bool half) const {
  if (half && t.dtype == DType::F32)
    return 2.0 * double(t.numElements());
  return double(t.bytes());
}

double OpTimeModel::gemmComputeSeconds(double batch, int64_t m, int64_t n,
                                       int64_t k) const {
  const pb::Accelerator &a = hw_.accelerator();
  double sms = double(a.multiprocessors());
  double tm = double(a.gemm_tile_m()), tn = double(a.gemm_tile_n());
  double tiles = batch * std::ceil(double(m) / tm) * std::ceil(double(n) / tn);
  double waves = std::ceil(tiles / sms);
  double perTile = 2.0 * tm * tn * double(k + kFill) / (peak_ / sms);
  return waves * perTile;
}

namespace {
/// Where x lies on a sorted axis, in log space: the two bracketing values
/// and the weight of the upper one (clamped to the ends: 0 or 1).
struct Bracket {
  int64_t lo, hi;
  double t;
};
Bracket bracket(const std::vector<int64_t> &axis, int64_t x) {
  if (x <= axis.front())
    return {axis.front(), axis.front(), 0};
  if (x >= axis.back())
    return {axis.back(), axis.back(), 0};
  auto hi = std::upper_bound(axis.begin(), axis.end(), x);
  int64_t h = *hi, l = *(hi - 1);
  return {l, h,
          std::log(double(x) / double(l)) / std::log(double(h) / double(l))};
}
} // namespace

double OpTimeModel::measuredGemm(double batch, int64_t m, int64_t n, int64_t k,
                                 bool transA, bool transB) const {
  // The samples of the plan's precision (tf32 is never measured), of the
  // same transposes (another transpose is a different kernel), or of any
  // transposes when none has them.
  if (precision_ == Precision::TF32)
    return -1;
  const bool half = precision_ == Precision::BF16;
  std::vector<const pb::GemmSample *> same, sameDType;
  for (const pb::GemmSample &g : hw_.accelerator().gemm_table()) {
    if (g.half() != half)
      continue;
    sameDType.push_back(&g);
    if (g.transpose_a() == transA && g.transpose_b() == transB)
      same.push_back(&g);
  }
  if (sameDType.empty())
    return -1;
  if (same.empty())
    same = sameDType;
  double flops = 2.0 * double(m) * double(n) * double(k);
  auto rate = [](const pb::GemmSample &g) {
    return 2.0 * double(g.m()) * double(g.n()) * double(g.k()) / g.seconds();
  };
  // Inside the calibrated grid: the rate (FLOP/s) trilinear in log m,
  // log n, log k between the 8 samples around the shape, in log rate.
  std::vector<int64_t> ms, ns, ks;
  std::map<std::tuple<int64_t, int64_t, int64_t>, const pb::GemmSample *> at;
  for (const pb::GemmSample *g : same) {
    ms.push_back(g->m()), ns.push_back(g->n()), ks.push_back(g->k());
    at.emplace(std::make_tuple(g->m(), g->n(), g->k()), g); // the first
  }
  for (auto *axis : {&ms, &ns, &ks}) {
    llvm::sort(*axis);
    axis->erase(std::unique(axis->begin(), axis->end()), axis->end());
  }
  Bracket bm = bracket(ms, m), bn = bracket(ns, n), bk = bracket(ks, k);
  double logRate = 0;
  bool complete = true;
  for (int c = 0; c < 8 && complete; ++c) {
    auto it = at.find(
        {c & 1 ? bm.hi : bm.lo, c & 2 ? bn.hi : bn.lo, c & 4 ? bk.hi : bk.lo});
    if (it == at.end()) {
      complete = false;
      break;
    }
    double w = (c & 1 ? bm.t : 1 - bm.t) * (c & 2 ? bn.t : 1 - bn.t) *
               (c & 4 ? bk.t : 1 - bk.t);
    logRate += w * std::log(rate(*it->second));
  }
  if (complete)
    return batch * flops / std::exp(logRate);
  // A corner was not measured (over the calibration's FLOP cap): the
  // nearest sample in log m, log n, log k, scaled by FLOPs.
  const pb::GemmSample *best = nullptr;
  double bestDist = 0;
  auto dist = [](int64_t a, int64_t b) {
    double d = std::log(double(std::max<int64_t>(a, 1)) /
                        double(std::max<int64_t>(b, 1)));
    return d * d;
  };
  for (const pb::GemmSample *g : same) {
    double d = dist(m, g->m()) + dist(n, g->n()) + dist(k, g->k());
    if (!best || d < bestDist)
      best = g, bestDist = d;
  }
  return batch * flops / rate(*best);
}

double OpTimeModel::measuredAttention(double bh, int64_t s, int64_t d,
                                      bool backward, double flopShare) const {
  const pb::AttentionSample *best = nullptr;
  double bestDist = 0;
  const bool half = precision_ == Precision::BF16;
  for (const pb::AttentionSample &a : hw_.accelerator().attention_table()) {
    if (a.backward() != backward || a.half() != half)
      continue;
    double ds = std::log(double(s) / double(std::max<int64_t>(a.seq(), 1))),
           dd =
               std::log(double(d) / double(std::max<int64_t>(a.head_dim(), 1)));
    if (!best || ds * ds + dd * dd < bestDist)
      best = &a, bestDist = ds * ds + dd * dd;
  }
  if (!best)
    return -1;
  // The samples are causal: half of the S x S products.
  double work = bh * double(s) * double(s) * double(d) * flopShare;
  double sampleWork = double(best->batch_heads()) * double(best->seq()) *
                      double(best->seq()) * double(best->head_dim()) * 0.5;
  return best->seconds() * work / sampleWork;
}

double OpTimeModel::moveSeconds(double bytes) const {
  const auto &table = hw_.accelerator().bandwidth_table();
  if (table.empty())
    return bytes / hw_.accelerator().memory_bandwidth();
  // Seconds per byte, linear in log(bytes) between samples, flat beyond.
  auto perByte = [](const pb::BandwidthSample &b) {
    return b.seconds() / b.bytes();
  };
  const pb::BandwidthSample *lo = nullptr, *hi = nullptr;
  for (const pb::BandwidthSample &b : table) {
    if (b.bytes() <= bytes && (!lo || b.bytes() > lo->bytes()))
      lo = &b;
    if (b.bytes() >= bytes && (!hi || b.bytes() < hi->bytes()))
      hi = &b;
  }
  if (!lo || !hi || lo == hi)
    return bytes * perByte(lo ? *lo : *hi);
  double t =
      std::log(bytes / lo->bytes()) / std::log(hi->bytes() / lo->bytes());
  return bytes * (perByte(*lo) + t * (perByte(*hi) - perByte(*lo)));
}

double OpTimeModel::gemmSeconds(double batch, int64_t m, int64_t n, int64_t k,
                                double bytes, bool transA, bool transB) const {
  double measured = measuredGemm(batch, m, n, k, transA, transB);
  if (measured >= 0)
    return measured + hw_.accelerator().kernel_launch_s();
  return std::max(gemmComputeSeconds(batch, m, n, k),
                  bytes / hw_.accelerator().memory_bandwidth()) +
         hw_.accelerator().kernel_launch_s();
}

double OpTimeModel::memorySeconds(double bytes) const {
  return moveSeconds(bytes) + hw_.accelerator().kernel_launch_s();
}

namespace {
/// The compute floor of node `n` of `g` from a measured op table (CPU
/// calibrations, perf/Calibrate.h): its elements (largest operand or
/// result) times the measured seconds per element of its key (its op, or
/// a fused node's body ops; for a fused GEMM the epilogue's); 0 for a
/// plain op the table lacks. A fused node the table lacks: the sum of its
/// body's (the generated kernel computes what the nodes did).
double computeFloor(const pb::Accelerator &a, const Graph &g, const Node &n) {
  if (a.op_table().empty())
    return 0;
  std::string key = opTableKey(n);
  for (const pb::OpSample &x : a.op_table()) {
    if (x.op() != key || x.elements() <= 0)
      continue;
    return largestTensorElements(g, n) * x.seconds() / x.elements();
  }
  double s = 0;
  if (n.op == OpKind::Fused && n.body)
    for (const Node &b : n.body->nodes())
      s += computeFloor(a, *n.body, b);
  return s;
}

struct GemmShape {
  double batch;
  int64_t m, n, k;
  bool transA, transB;
};

/// (batch, m, n, k) of matmul node `n`: result [..., M, N], contraction K.
/// With a rank-2 B (a weight broadcast over A's batch dims) the batch dims
/// are rows of one GEMM, as a kernel runs it.
GemmShape matmulShape(const Graph &g, const Node &n) {
  const TensorType &a = g.type(n.operands[0]), &b = g.type(n.operands[1]),
                   &c = g.type(n.results[0]);
  bool ta = n.attrs.getBool("transpose_a"), tb = n.attrs.getBool("transpose_b");
  int64_t k = ta ? a.shape[a.rank() - 2] : a.shape[a.rank() - 1];
  int64_t nn = c.shape.empty() ? 1 : c.shape[c.rank() - 1];
  int64_t rows = c.numElements() / std::max<int64_t>(nn, 1);
  if (b.rank() == 2)
    return {1, rows, nn, k, ta, tb};
  int64_t m = c.rank() >= 2 ? c.shape[c.rank() - 2] : 1;
  return {double(rows) / double(std::max<int64_t>(m, 1)), m, nn, k, ta, tb};
}
} // namespace

double OpTimeModel::attentionSeconds(const Graph &g, const Node &n,
                                     bool half) const {
  bool grad = n.op == OpKind::AttentionGrad;
  const TensorType &q = g.type(n.operands[grad ? 1 : 0]);
  if (q.rank() != 4)
    return memorySeconds(0);
  double bh = double(q.shape[0]) * double(q.shape[2]);
  int64_t s = q.shape[1], d = q.shape[3];
  // Score-shaped products (S x S, depth D) and value-shaped ones (S x D,
  // depth S): forward QK^T and PV; backward QK^T, dP = dO V^T (scores), dV,
  // dQ, dK (values).
  double scores = grad ? 2 : 1, values = grad ? 3 : 1;
  int64_t window = n.attrs.getInt("window");
  double share = 1;
  if (n.attrs.getBool("causal") && window == 0)
    share = 0.5;
  else if (window > 0 && window < s)
    share = double(window) / double(s);
  double measured = measuredAttention(bh, s, d, grad, share);
  if (measured >= 0)
    return measured + hw_.accelerator().kernel_launch_s();
  double compute = (scores * gemmComputeSeconds(bh, s, s, d) +
                    values * gemmComputeSeconds(bh, s, d, s)) *
                   share;
  double moved = 0;
  for (ValueId v : n.operands)
    moved += bytes(g.type(v), half);
  for (ValueId v : n.results)
    moved += bytes(g.type(v), half);
  return std::max(compute, moveSeconds(moved)) +
         hw_.accelerator().kernel_launch_s();
}

double OpTimeModel::nodeSeconds(const Graph &g, const Node &n,
                                bool half) const {
  double moved = 0;
  for (ValueId v : n.operands)
    moved += bytes(g.type(v), half);
  for (ValueId v : n.results)
    moved += bytes(g.type(v), half);
  switch (n.op) {
  case OpKind::Reshape:
    return 0;
  case OpKind::MatMul: {
    GemmShape s = matmulShape(g, n);
    return gemmSeconds(s.batch, s.m, s.n, s.k, moved, s.transA, s.transB);
  }
  case OpKind::Attention:
  case OpKind::AttentionGrad:
    return attentionSeconds(g, n, half);
  case OpKind::Gather: {
    // Reads the looked-up rows (as many as it writes) and the ids.
    double out = bytes(g.type(n.results[0]), half);
    return std::max(moveSeconds(2 * out + bytes(g.type(n.operands[1]), half)),
                    computeFloor(hw_.accelerator(), g, n)) +
           hw_.accelerator().kernel_launch_s();
  }
  case OpKind::Fused: {
    const Graph *body = n.body.get();
    if (body && !body->nodes().empty() &&
        body->nodes().front().op == OpKind::MatMul) {
      GemmShape s = matmulShape(*body, body->nodes().front());
      // The epilogue (bias, activation, residual) computes on the
      // product's elements after the GEMM.
      double epilogue = computeFloor(hw_.accelerator(), g, n);
      return gemmSeconds(s.batch, s.m, s.n, s.k, moved, s.transA, s.transB) +
             epilogue;
    }
    return std::max(moveSeconds(moved), computeFloor(hw_.accelerator(), g, n)) +
           hw_.accelerator().kernel_launch_s();
  }
  default:
    return std::max(moveSeconds(moved), computeFloor(hw_.accelerator(), g, n)) +
           hw_.accelerator().kernel_launch_s();
  }
}

std::string opTableKey(const Node &n) {
  if (n.op != OpKind::Fused || !n.body)
    return opName(n.op).str();
  std::string key = "fused(";
  for (const Node &b : n.body->nodes())
    key += (key.size() > 6 ? "," : "") + opName(b.op).str();
  return key + ")";
}

llvm::Expected<std::function<double(const Graph &, const Node &)>>
predictedNodeSeconds(const pb::Hardware &hw, Precision precision) {
  auto peak = peakFlops(hw, precision);
  if (!peak)
    return peak.takeError();
  auto owned = std::make_shared<pb::Hardware>(hw);
  auto model = std::make_shared<OpTimeModel>(*owned, precision, *peak);
  bool half = precision == Precision::BF16;
  return [owned, model, half](const Graph &g, const Node &n) {
    if (isCollective(n.op) || n.op == OpKind::Send || n.op == OpKind::Recv)
      return 0.0;
    return model->nodeSeconds(g, n, half);
  };
}

} // namespace strata
