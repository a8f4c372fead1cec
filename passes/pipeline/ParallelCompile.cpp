//===- ParallelCompile.cpp - Logical forward graph -> pipelined plan
//-------===//
#include "passes/pipeline/ParallelCompile.h"

#include "passes/PassManager.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/fusion/Fusion.h"
#include "passes/fusion/GradAccumulationFusion.h"
#include "passes/pipeline/ModelUnits.h"
#include "passes/pipeline/ProgramPasses.h"
#include "passes/spmd/Spmd.h"

#include "llvm/ADT/STLExtras.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// A pass manager that verifies after every pass and reports a pass's error
/// as it is (they speak of the configuration).
PassManager compilerPasses() {
  PassManagerOptions o;
  o.namePassInErrors = false;
  return PassManager(std::move(o), llvm::nulls());
}

/// autodiff, mixed precision (bf16 / fp16), then seeds and spmd when the
/// mesh has more than one device.
llvm::Expected<Graph> microbatchGraph(const Graph &forward,
                                      const ParallelCompileOptions &o) {
  if (o.sp && o.tp < 2)
    return err("sequence parallelism (--sp) splits the sequence over tp, but "
               "tp is 1 (use --tp 2 or more, or drop --sp)");
  PassManager pm = compilerPasses();
  pm.addPass(createAutodiffPass());
  if (o.precision != DType::F32)
    pm.addPass(createMixedPrecisionPass(o.precision));
  if (o.lossScaling)
    pm.addPass(createLossScalePass());
  if (o.tp > 1 || o.dp > 1) {
    pm.addPass(createMegatronSeedsPass({o.tp, o.dp, o.sp}));
    pm.addPass(createSpmdPass());
  }
  Graph g = forward;
  if (auto changed = pm.run(g); !changed)
    return changed.takeError();
  return g;
}

/// recompute, pipeline, fusion (optional) and memory on the microbatch
/// graph `micro`.
llvm::Expected<CompiledPipeline> plan(const Graph &micro, RecomputeOptions ro,
                                      const PipelineOptions &po,
                                      SavedStateModel model, bool fusion) {
  CompiledPipeline a;
  a.micro = micro;
  PassManager pm = compilerPasses();
  pm.addPass(createRecomputePass(std::move(ro)));
  pm.addPass(createPipelinePass(po));
  if (fusion)
    pm.addPass(createFusionPass());
  pm.addPass(createGradAccumulationFusionPass());
  pm.addPass(createMemoryPass(model));
  if (auto changed = pm.run(a); !changed)
    return changed.takeError();
  // The stages were cut from the graph with its recomputation.
  return a;
}
} // namespace

llvm::Expected<CompiledPipeline>
compilePipeline(const Graph &forward, const ParallelCompileOptions &o) {
  auto micro = microbatchGraph(forward, o);
  if (!micro)
    return micro.takeError();
  PipelineOptions po;
  po.pp = o.pp;
  po.schedule = o.schedule;
  po.microbatches = o.microbatches;
  po.layersPerStage = o.layersPerStage;
  po.optimizer = o.optimizer;
  po.distributedOptimizer = o.distributedOptimizer;
  RecomputeOptions ro;
  ro.mode =
      o.recompute == RecomputeMode::Auto ? RecomputeMode::None : o.recompute;

  CompiledPipeline out;
  if (o.recompute != RecomputeMode::Auto) {
    auto a = plan(*micro, ro, po, o.savedState, o.fusion);
    if (!a)
      return a.takeError();
    if (o.recompute == RecomputeMode::Full)
      for (int64_t l = 0, e = countLayers(a->micro); l < e; ++l)
        out.recomputedLayers.push_back(l);
    if (o.memoryBudget >= 0)
      for (const RankMemory &m : a->memory.ranks)
        if (m.peak > o.memoryBudget)
          return err("pipeline rank " + llvm::Twine(m.rank) + " needs " +
                     formatBytes(m.peak) + " per device (at " + m.peakAt +
                     "), over --memory-budget " + formatBytes(o.memoryBudget) +
                     " (use --recompute auto to recompute blocks until it "
                     "fits, or add tp, sp or pp)");
    out.micro = std::move(a->micro);
    out.pipeline = std::move(a->pipeline);
    out.memory = std::move(a->memory);
    return out;
  }

  if (o.memoryBudget < 0)
    return err("--recompute auto needs --memory-budget (the peak bytes one "
               "device may use, e.g. 40GB)");
  auto a = plan(*micro, ro, po, o.savedState, o.fusion);
  if (!a)
    return a.takeError();
  // Keep the first cut, so choosing blocks does not move them.
  po.layersPerStage.clear();
  for (const PipelineStage &s : a->pipeline.stages)
    po.layersPerStage.push_back(s.numLayers);
  std::vector<LayerRecomputeCost> costs = layerRecomputeCosts(a->micro);
  llvm::SmallVector<int64_t, 8> chosen;
  while (true) {
    bool changed = false;
    for (const RankMemory &m : a->memory.ranks) {
      int64_t over = m.peak - o.memoryBudget;
      if (over <= 0)
        continue;
      llvm::SmallVector<int64_t, 8> candidates;
      for (const PipelineStage &s : a->pipeline.stages)
        if (s.rank == m.rank)
          for (int64_t l = s.firstLayer; l < s.firstLayer + s.numLayers; ++l)
            if (!llvm::is_contained(chosen, l))
              candidates.push_back(l);
      int64_t inFlight = std::max<int64_t>(
          1, *std::max_element(m.inFlight.begin(), m.inFlight.end()));
      // The cheapest blocks that should make up the excess; all that are
      // left when they cannot.
      auto more = chooseRecomputeLayers(costs, candidates,
                                        (over + inFlight - 1) / inFlight);
      llvm::SmallVector<int64_t, 8> add = candidates;
      if (more)
        add = *more;
      else
        llvm::consumeError(more.takeError());
      if (add.empty())
        return err("--memory-budget " + formatBytes(o.memoryBudget) +
                   " cannot be met: pipeline rank " + llvm::Twine(m.rank) +
                   " needs " + formatBytes(m.peak) +
                   " per device with every one of its blocks "
                   "recomputed (raise the budget, or add tp, sp or pp)");
      chosen.append(add.begin(), add.end());
      changed = true;
    }
    if (!changed)
      break;
    llvm::sort(chosen);
    RecomputeOptions full = ro;
    full.mode = RecomputeMode::Full;
    full.layers = chosen;
    auto next = plan(*micro, full, po, o.savedState, o.fusion);
    if (!next)
      return next.takeError();
    a = std::move(next);
  }
  out.recomputedLayers = chosen;
  out.micro = std::move(a->micro);
  out.pipeline = std::move(a->pipeline);
  out.memory = std::move(a->memory);
  return out;
}

} // namespace strata
