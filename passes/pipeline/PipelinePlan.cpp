//===- PipelinePlan.cpp - Printing and checking a pipeline plan
//------------===//
#include "passes/pipeline/PipelinePlan.h"

#include "ir/IRText.h"
#include "ir/Verifier.h"

#include <map>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "pipeline plan: " + msg);
}

std::string stageLabel(const PipelinePlan &p, const PipelineStage &s,
                       llvm::StringRef kind) {
  std::string label = "stage " + std::to_string(s.index) + " " + kind.str();
  if (p.schedule.spec.virtualStages > 1)
    label += " (rank " + std::to_string(s.rank) + ", chunk " +
             std::to_string(s.chunk) + ")";
  return label;
}

/// One endpoint of a message.
struct Endpoint {
  std::string program; // for messages
  int kind = 0;        // 0 F, 1 B, 2 optimizer
  int64_t stage = -1;  // virtual stage (F, B)
  int64_t rank = 0;
  int64_t peer = 0;
  TensorType type;
};
} // namespace

void printPipelinePlan(llvm::raw_ostream &os, const PipelinePlan &p) {
  for (const PipelineStage &s : p.stages) {
    os << "# ---- " << stageLabel(p, s, "F") << '\n';
    printGraph(os, s.forward);
    os << "# ---- " << stageLabel(p, s, "B") << '\n';
    printGraph(os, s.backward);
  }
  for (size_t r = 0; r < p.optimizers.size(); ++r) {
    os << "# ---- rank " << r << " optimizer\n";
    printGraph(os, p.optimizers[r]);
  }
}

llvm::Error verifyPipelinePlan(const PipelinePlan &p) {
  if (auto e = validateSchedule(p.schedule))
    return err(toString(std::move(e)));
  if (int64_t(p.stages.size()) != p.schedule.numStages() ||
      int64_t(p.optimizers.size()) != p.pp)
    return err("expected " + llvm::Twine(p.schedule.numStages()) +
               " stages and " + llvm::Twine(p.pp) + " optimizer programs");
  std::map<int64_t, Endpoint> sends, recvs;
  auto scan = [&](const Graph &g, const std::string &label, int kind,
                  int64_t stage, int64_t rank) -> llvm::Error {
    if (auto e = verifyGraph(g))
      return err(label + ": " + toString(std::move(e)));
    for (const Node &n : g.nodes()) {
      if (n.op != OpKind::Send && n.op != OpKind::Recv)
        continue;
      Endpoint ep{label,
                  kind,
                  stage,
                  rank,
                  n.attrs.getInt("peer"),
                  g.type(n.op == OpKind::Send ? n.operands[0] : n.results[0])};
      auto &side = n.op == OpKind::Send ? sends : recvs;
      if (!side.emplace(n.attrs.getInt("tag"), ep).second)
        return err(label + ": two " + opName(n.op) + "s with tag " +
                   llvm::Twine(n.attrs.getInt("tag")));
    }
    return llvm::Error::success();
  };
  for (const PipelineStage &s : p.stages) {
    if (auto e = scan(s.forward, stageLabel(p, s, "F"), 0, s.index, s.rank))
      return e;
    if (auto e = scan(s.backward, stageLabel(p, s, "B"), 1, s.index, s.rank))
      return e;
    // The stash: F's outputs after the loss are B's inputs of the same name.
    size_t first = s.head ? 1 : 0;
    if (s.forward.outputs().size() != first + s.stash.size())
      return err(stageLabel(p, s, "F") + " has " +
                 llvm::Twine(s.forward.outputs().size()) + " outputs for " +
                 llvm::Twine(s.stash.size()) + " stashed values");
    for (size_t i = 0; i < s.stash.size(); ++i) {
      ValueId out = s.forward.outputs()[first + i];
      ValueId in = s.backward.lookup(s.stash[i]);
      if (s.forward.value(out).name != s.stash[i] || in == kNoValue ||
          !s.backward.value(in).isInput() ||
          s.backward.type(in) != s.forward.type(out))
        return err(stageLabel(p, s, "B") + " does not take the stashed %" +
                   s.stash[i] + " as an input of the type F outputs");
    }
  }
  for (size_t r = 0; r < p.optimizers.size(); ++r)
    if (auto e =
            scan(p.optimizers[r], "rank " + std::to_string(r) + " optimizer", 2,
                 -1, int64_t(r)))
      return e;
  for (const auto &[tag, s] : sends) {
    auto it = recvs.find(tag);
    if (it == recvs.end())
      return err(s.program + ": send with tag " + llvm::Twine(tag) +
                 " has no matching recv");
    const Endpoint &r = it->second;
    bool neighbours = s.kind == 2 || (s.kind == 0 && r.stage == s.stage + 1) ||
                      (s.kind == 1 && r.stage == s.stage - 1);
    if (s.peer != r.rank || r.peer != s.rank || s.kind != r.kind || !neighbours)
      return err(s.program + " sends tag " + llvm::Twine(tag) + " to rank " +
                 llvm::Twine(s.peer) + " but " + r.program + " (rank " +
                 llvm::Twine(r.rank) + ") receives it from rank " +
                 llvm::Twine(r.peer));
    if (s.type != r.type)
      return err(s.program + " sends " + s.type.str() + " with tag " +
                 llvm::Twine(tag) + " but " + r.program + " receives " +
                 r.type.str());
  }
  for (const auto &[tag, r] : recvs)
    if (!sends.count(tag))
      return err(r.program + ": recv with tag " + llvm::Twine(tag) +
                 " has no matching send");
  return llvm::Error::success();
}

} // namespace strata
