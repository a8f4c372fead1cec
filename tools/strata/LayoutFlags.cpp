//===- LayoutFlags.cpp - The layout flags of the verbs that compile a spec ===//
#include "tools/strata/LayoutFlags.h"

#include "frontends/TrainingPrecision.h"
#include "runtime/train/LossScaler.h"

#include "tools/strata/Driver.h"
#include "tools/strata/Flags.h"
#include "tools/strata/Verb.h"

#include <memory>

using namespace llvm;

namespace strata {

LayoutFlags::LayoutFlags(cl::SubCommand &cmd)
    : tp("tp", cl::desc("Tensor-parallel degree"), cl::init(1), cl::sub(cmd),
         cl::cat(strataCategory())),
      dp("dp", cl::desc("Data-parallel degree"), cl::init(1), cl::sub(cmd),
         cl::cat(strataCategory())),
      pp("pp", cl::desc("Pipeline-parallel degree"), cl::init(1), cl::sub(cmd),
         cl::cat(strataCategory())),
      sp("sp", cl::desc("Sequence parallelism (over tp)"), cl::sub(cmd),
         cl::cat(strataCategory())),
      microbatches("microbatches",
                   cl::desc("Microbatches per optimizer step and data-parallel "
                            "rank (default: the spec's training.grad_accum)"),
                   cl::sub(cmd), cl::cat(strataCategory())),
      schedule("schedule", cl::desc("gpipe, 1f1b or interleaved:V"),
               cl::init("1f1b"), cl::sub(cmd), cl::cat(strataCategory())),
      recomputeMode("recompute",
                    cl::desc("Activation recomputation: none, selective, full "
                             "or auto (with --memory-budget)"),
                    cl::init("none"), cl::sub(cmd), cl::cat(strataCategory())),
      memoryBudget(
          "memory-budget",
          cl::desc("Peak bytes per device: 16GiB or 512MiB (powers of 1024), "
                   "16GB (10^9 bytes each), or bytes; --recompute auto "
                   "recomputes blocks until it fits, otherwise a plan over it "
                   "is an error"),
          cl::sub(cmd), cl::cat(strataCategory())),
      layersPerStage("layers-per-stage", cl::CommaSeparated,
                     cl::desc("Blocks per pipeline stage, e.g. 5,6,6,5 "
                              "(default: balanced by cost)"),
                     cl::sub(cmd), cl::cat(strataCategory())),
      savedState("saved-state",
                 cl::desc("Activation accounting: strata (what strata's "
                          "kernels keep) or megatron (Megatron-LM's unfused "
                          "layers, Korthikanti et al. 2022)"),
                 cl::init("strata"), cl::sub(cmd), cl::cat(strataCategory())),
      distributedOptimizer(
          "distributed-optimizer",
          cl::desc("Shard the AdamW state over dp (ZeRO-1): reduce-scatter the "
                   "gradients, update a shard, all-gather the parameters"),
          cl::sub(cmd), cl::cat(strataCategory())),
      noFusion("no-fusion",
               cl::desc("Keep every op unfused (no generated kernels in the "
                        "plan)"),
               cl::sub(cmd), cl::cat(strataCategory())),
      batch(cmd) {}

const cl::Option *LayoutFlags::firstGiven() const {
  const cl::Option *all[] = {&tp,
                             &dp,
                             &pp,
                             &sp,
                             &microbatches,
                             &schedule,
                             &recomputeMode,
                             &memoryBudget,
                             std::addressof(layersPerStage),
                             &savedState,
                             &distributedOptimizer,
                             &noFusion};
  for (const cl::Option *f : all)
    if (given(*f))
      return f;
  return batch.firstGiven();
}

Error LayoutFlags::applyBatch(pb::ModelSpec &spec) const {
  std::optional<int64_t> m;
  if (given(microbatches))
    m = microbatches;
  // A --dp below 1 is compileOptions' error.
  return batch.apply(spec, std::max<int64_t>(dp, 1), m);
}

Expected<ParallelCompileOptions>
LayoutFlags::compileOptions(const pb::ModelSpec &spec) const {
  if (Error e = checkFlags({
          atLeast(tp, 1, "1 is no tensor parallelism"),
          atLeast(dp, 1, "1 is no data parallelism"),
          atLeast(pp, 1, "1 is no pipeline"),
          atLeast(microbatches, 1,
                  "microbatches per optimizer step; leave the flag out for "
                  "the spec's training.grad_accum"),
          oneOf(recomputeMode, {"none", "selective", "full", "auto"}),
          oneOf(savedState, {"strata", "megatron"},
                "whose activation accounting the memory plan uses"),
      }))
    return std::move(e);
  if (Error e = checkSequenceParallel(sp, tp))
    return std::move(e);
  ParallelCompileOptions o;
  o.tp = tp;
  o.dp = dp;
  o.pp = pp;
  o.sp = sp;
  o.microbatches = given(microbatches) ? int64_t(microbatches)
                                       : spec.training().grad_accum();
  auto sched = parseScheduleSpec(schedule);
  if (!sched)
    return usageError("--schedule: " + toString(sched.takeError()));
  o.schedule = *sched;
  o.recompute = *parseRecomputeMode(recomputeMode);
  if (!memoryBudget.empty()) {
    auto bytes = parseBytes(memoryBudget);
    if (!bytes)
      return usageError("--memory-budget takes a byte count such as 16GiB, "
                        "512MiB (powers of 1024), 16GB (powers of 1000) or "
                        "4096, got '" +
                        memoryBudget + "'");
    o.memoryBudget = *bytes;
  }
  if (o.pp > 1 || o.recompute != RecomputeMode::None)
    if (Error e =
            checkPipelineFlags(o.schedule, o.pp, o.microbatches, spec.layers()))
      return std::move(e);
  o.layersPerStage.assign(layersPerStage.begin(), layersPerStage.end());
  o.savedState = *parseSavedStateModel(savedState);
  const pb::Training &t = spec.training();
  o.optimizer.beta1 = t.beta1();
  o.optimizer.beta2 = t.beta2();
  o.optimizer.eps = t.eps();
  o.optimizer.weight_decay = t.weight_decay();
  o.optimizer.grad_clip = t.grad_clip();
  o.fusion = !noFusion;
  o.precision = trainingPrecision(spec.training());
  o.lossScaling = lossScalingOf(spec.training()).has_value();
  o.distributedOptimizer = distributedOptimizer;
  return o;
}

} // namespace strata
