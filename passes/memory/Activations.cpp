//===- Activations.cpp - What a microbatch keeps from forward to backward
//--===//
#include "passes/memory/Activations.h"

#include "passes/autodiff/Autodiff.h"
#include "passes/pipeline/ModelUnits.h"
#include "passes/recompute/Recompute.h"

namespace strata {

std::optional<SavedStateModel> parseSavedStateModel(llvm::StringRef name) {
  if (name == "strata")
    return SavedStateModel::Strata;
  if (name == "megatron")
    return SavedStateModel::Megatron;
  return std::nullopt;
}

llvm::StringRef savedStateModelName(SavedStateModel m) {
  return m == SavedStateModel::Strata ? "strata" : "megatron";
}

namespace {
/// For every value, the first backward node reading it (-1 if none).
std::vector<int32_t> firstBackwardReader(const Graph &g) {
  std::vector<int32_t> first(g.numValues(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node &n = g.node(i);
    if (!isBackward(n))
      continue;
    for (ValueId v : n.operands)
      if (first[v] < 0)
        first[v] = int32_t(i);
  }
  return first;
}

bool isForwardResult(const Graph &g, ValueId v) {
  const Value &val = g.value(v);
  return !val.isInput() && !isBackward(g.node(val.defNode));
}
} // namespace

llvm::SmallVector<ValueId> stashedValues(const Graph &g) {
  std::vector<int32_t> first = firstBackwardReader(g);
  llvm::SmallVector<ValueId> out;
  for (size_t v = 0; v < g.numValues(); ++v)
    if (first[v] >= 0 && isForwardResult(g, ValueId(v)))
      out.push_back(ValueId(v));
  return out;
}

int64_t internalSavedBytes(const Graph &g, const Node &n, SavedStateModel m) {
  if (m == SavedStateModel::Strata || isBackward(n) || isRecomputed(n))
    return 0;
  if (n.op == OpKind::Dropout) // a 1-byte mask per element
    return g.type(n.results[0]).numElements();
  if (n.op == OpKind::Attention) {
    // Softmax output, attention-dropout mask and dropped probabilities.
    const TensorType &q = g.type(n.operands[0]);
    const TensorType &k = g.type(n.operands[1]);
    int64_t scores = q.shape[0] * q.shape[2] * q.shape[1] * k.shape[1];
    return scores * (2 * dtypeBytes(q.dtype) + 1);
  }
  return 0;
}

int64_t stashBytes(const Graph &g, SavedStateModel m) {
  int64_t bytes = 0;
  for (ValueId v : stashedValues(g))
    bytes += g.type(v).bytes();
  for (const Node &n : g.nodes())
    bytes += internalSavedBytes(g, n, m);
  return bytes;
}

std::map<std::string, int64_t> stashBytesByUnit(const Graph &g,
                                                SavedStateModel m) {
  std::map<std::string, int64_t> out;
  std::vector<int32_t> first = firstBackwardReader(g);
  for (size_t v = 0; v < g.numValues(); ++v)
    if (first[v] >= 0 && isForwardResult(g, ValueId(v)))
      out[unitOfScope(g.node(first[v]).scope).str()] +=
          g.type(ValueId(v)).bytes();
  for (const Node &n : g.nodes())
    if (int64_t b = internalSavedBytes(g, n, m))
      out[unitOfScope(n.scope).str()] += b;
  return out;
}

} // namespace strata
