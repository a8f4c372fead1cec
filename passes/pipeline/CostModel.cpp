//===- CostModel.cpp - FLOPs of nodes
//--------------------------------------===//
#include "passes/pipeline/CostModel.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace strata {

double largestTensorElements(const Graph &g, const Node &n) {
  int64_t m = 0;
  for (ValueId v : n.operands)
    m = std::max(m, g.type(v).numElements());
  for (ValueId v : n.results)
    m = std::max(m, g.type(v).numElements());
  return double(m);
}

namespace {
/// q [B, S, H, D] -> B * H * S^2 * D: one of attention's two batched matmuls
/// in multiply-adds.
double attentionMacs(const TensorType &q) {
  if (q.rank() != 4)
    return 0;
  return double(q.shape[0]) * double(q.shape[2]) * double(q.shape[1]) *
         double(q.shape[1]) * double(q.shape[3]);
}
} // namespace

double nodeFlops(const Graph &g, const Node &n) {
  switch (n.op) {
  case OpKind::MatMul: {
    const TensorType &a = g.type(n.operands[0]);
    int64_t k = n.attrs.getBool("transpose_a") ? a.shape[a.rank() - 2]
                                               : a.shape[a.rank() - 1];
    return 2.0 * double(g.type(n.results[0]).numElements()) * double(k);
  }
  case OpKind::Attention: // QK^T and PV
    return 4.0 * attentionMacs(g.type(n.operands[0]));
  case OpKind::AttentionGrad: // recomputed QK^T, then dP, dV, dQ, dK
    return 10.0 * attentionMacs(g.type(n.operands[1]));
  case OpKind::Reshape:
  case OpKind::Transpose:
  case OpKind::Broadcast:
  case OpKind::Slice:
  case OpKind::Concat:
  case OpKind::Fill:
  case OpKind::Iota:
  case OpKind::Cast:
  case OpKind::ShardSlice:
  case OpKind::AllReduce:
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
  case OpKind::AllToAll:
  case OpKind::BroadcastFrom:
  case OpKind::Send:
  case OpKind::Recv:
    return 0;
  case OpKind::LayerNorm:
  case OpKind::RmsNorm:
  case OpKind::Softmax:
  case OpKind::CrossEntropy:
  case OpKind::Gelu:
  case OpKind::Rope:
    return 5.0 * largestTensorElements(g, n);
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad:
  case OpKind::SoftmaxGrad:
  case OpKind::CrossEntropyGrad:
  case OpKind::GeluGrad:
    return 8.0 * largestTensorElements(g, n);
  case OpKind::AdamWUpdate:
    return 12.0 * largestTensorElements(g, n);
  default:
    return largestTensorElements(g, n);
  }
}

namespace {
/// The time model installed by ScopedNodeCost, if any.
thread_local std::function<double(const Graph &, const Node &)> timeModel;
} // namespace

double nodeCost(const Graph &g, const Node &n) {
  return timeModel ? timeModel(g, n) : nodeFlops(g, n);
}

const char *nodeCostName() { return timeModel ? "predicted time" : "FLOPs"; }

std::string formatNodeCost(double cost) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (timeModel) {
    if (cost >= 1)
      os << llvm::format("%.3g s", cost);
    else if (cost >= 1e-3)
      os << llvm::format("%.3g ms", cost * 1e3);
    else
      os << llvm::format("%.3g us", cost * 1e6);
    return s;
  }
  const char *units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (cost >= 1000 && u < 5)
    cost /= 1000, ++u;
  os << llvm::format("%.3g ", cost) << units[u] << "FLOP";
  return s;
}

ScopedNodeCost::ScopedNodeCost(
    std::function<double(const Graph &, const Node &)> seconds)
    : previous_(std::move(timeModel)) {
  timeModel = std::move(seconds);
}

ScopedNodeCost::~ScopedNodeCost() { timeModel = std::move(previous_); }

} // namespace strata
