//===- MemoryPlan.cpp - Peak bytes per device of a pipelined plan
//----------===//
#include "passes/memory/MemoryPlan.h"

#include "llvm/ADT/StringSet.h"

namespace strata {

int64_t forwardStashBytes(const Graph &f, bool hasLoss, SavedStateModel m) {
  int64_t bytes = 0;
  for (size_t i = hasLoss ? 1 : 0; i < f.outputs().size(); ++i)
    bytes += f.type(f.outputs()[i]).bytes();
  for (const Node &n : f.nodes())
    bytes += internalSavedBytes(f, n, m);
  return bytes;
}

DType computeCopyDType(const Graph &g,
                       llvm::ArrayRef<llvm::SmallVector<int32_t, 2>> users,
                       ValueId param) {
  for (int32_t u : users[param]) {
    const Node &n = g.node(u);
    if (n.op == OpKind::Cast && dtypeBytes(g.type(n.results[0]).dtype) <
                                    dtypeBytes(g.type(param).dtype))
      return g.type(n.results[0]).dtype;
  }
  return g.type(param).dtype;
}

MemoryPlan planMemory(const PipelinePlan &p, SavedStateModel model) {
  MemoryPlan mp;
  mp.model = model;
  for (const PipelineStage &s : p.stages) {
    mp.forward.push_back(planBuffers(s.forward, {/*outputsInArena=*/false}));
    // B's outputs are the gradient buffers it accumulates into (bound).
    mp.backward.push_back(planBuffers(s.backward, {/*outputsInArena=*/false}));
  }
  for (const Graph &opt : p.optimizers)
    mp.optimizer.push_back(planBuffers(opt, {/*outputsInArena=*/false}));

  const Schedule &sched = p.schedule;
  auto inFlight = maxInFlight(sched);
  for (int64_t r = 0; r < p.pp; ++r) {
    RankMemory m;
    m.rank = r;
    // Parameters the rank's programs read, once each. A mixed-precision
    // parameter (read through 16-bit casts) is, under the Megatron model,
    // a persistent 16-bit copy plus an fp32 master the optimizer owns.
    llvm::StringSet<> seen, mixed;
    for (const PipelineStage &s : p.stages) {
      if (s.rank != r)
        continue;
      for (const Graph *g : {&s.forward, &s.backward}) {
        auto users = g->users();
        for (ValueId v : g->params()) {
          if (!seen.insert(g->value(v).name).second)
            continue;
          const TensorType &t = g->type(v);
          DType copy = computeCopyDType(*g, users, v);
          bool megatronCopy =
              model == SavedStateModel::Megatron && copy != t.dtype;
          if (megatronCopy)
            mixed.insert(g->value(v).name);
          m.parameters +=
              megatronCopy ? t.numElements() * dtypeBytes(copy) : t.bytes();
          m.gradients += t.bytes();
        }
      }
    }
    // The AdamW moments as the program holds them: f32, split over dp by
    // the distributed optimizer.
    const Graph &opt = p.optimizers[r];
    for (ValueId v : opt.inputs()) {
      llvm::StringRef name = opt.value(v).name;
      if (name.startswith("adam_m.") || name.startswith("adam_v."))
        m.optimizerState += 4 * opt.type(v).numElements();
    }
    for (ValueId v : opt.params()) {
      const TensorType &t = opt.type(v);
      if (t.dtype != DType::F32)
        m.masterParams += 4 * t.numElements();
    }
    // Megatron's fp32 masters of 16-bit copies: as many elements as the
    // moments the rank owns (split over dp by the distributed optimizer).
    for (ValueId v : opt.inputs()) {
      llvm::StringRef name = opt.value(v).name;
      if (name.consume_front("adam_m.") && mixed.contains(name))
        m.masterParams += 4 * opt.type(v).numElements();
    }
    int64_t V = sched.spec.virtualStages;
    for (int64_t c = 0; c < V; ++c) {
      const PipelineStage &s = p.stages[sched.stageOf(r, c)];
      m.stashPerMicrobatch.push_back(
          forwardStashBytes(s.forward, s.head, model));
      m.inFlight.push_back(inFlight[r][c]);
    }
    int64_t held = 0;
    auto consider = [&](const Instr &i, int64_t workspace) {
      int64_t total = m.staticBytes() + held + workspace;
      if (total > m.peak) {
        m.peak = total;
        m.stash = held;
        m.workspace = workspace;
        m.peakAt = i.str();
      }
    };
    for (const Instr &i : sched.ranks[r]) {
      if (i.kind == Instr::Optimizer) {
        consider(i, mp.optimizer[r].arenaBytes);
        continue;
      }
      int64_t j = sched.stageOf(r, i.chunk);
      int64_t slot = m.stashPerMicrobatch[i.chunk];
      if (i.kind == Instr::Forward) {
        held += slot;
        m.maxStash = std::max(m.maxStash, held);
        consider(i, mp.forward[j].arenaBytes);
      } else {
        consider(i, mp.backward[j].arenaBytes);
        held -= slot;
      }
    }
    mp.ranks.push_back(std::move(m));
  }
  return mp;
}

} // namespace strata
