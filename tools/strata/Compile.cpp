//===- Compile.cpp - `strata compile SPEC -o FILE` ------------------------===//
//
// Reads a model spec, builds and verifies its graph, compiles the parallel
// training step (passes/pipeline/ParallelCompile.h: autodiff, spmd,
// recompute, pipeline stages and schedule, fusion, memory plan), renders the
// fused kernels for C++ and CUDA (codegen/KernelLibrary.h) and writes the
// Plan atomically: on any error nothing is written.
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelSpec.h"
#include "frontends/Models.h"
#include "proto/PlanFile.h"
#include "tools/strata/Driver.h"
#include "tools/strata/PipelineInspect.h"
#include "tools/strata/PipelineProto.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand compileCmd("compile", "Compile a model spec into a plan");

cl::opt<std::string> specPath(cl::Positional, cl::Required,
                              cl::desc("<model spec .textproto>"),
                              cl::sub(compileCmd), cl::cat(strataCategory()));
cl::opt<std::string> outputPath("o", cl::Required,
                                cl::desc("Write the plan to <file>"),
                                cl::value_desc("file"), cl::sub(compileCmd),
                                cl::cat(strataCategory()));

cl::OptionCategory &cat = strataCategory();
cl::opt<int64_t> tp("tp", cl::desc("Tensor-parallel degree"), cl::init(1),
                    cl::sub(compileCmd), cl::cat(cat));
cl::opt<int64_t> dp("dp", cl::desc("Data-parallel degree"), cl::init(1),
                    cl::sub(compileCmd), cl::cat(cat));
cl::opt<int64_t> pp("pp", cl::desc("Pipeline-parallel degree"), cl::init(1),
                    cl::sub(compileCmd), cl::cat(cat));
cl::opt<bool> sp("sp", cl::desc("Sequence parallelism (over tp)"),
                 cl::sub(compileCmd), cl::cat(cat));
cl::opt<int64_t> microbatches(
    "microbatches",
    cl::desc("Microbatches per optimizer step and data-parallel rank "
             "(default: the spec's training.grad_accum)"),
    cl::init(0), cl::sub(compileCmd), cl::cat(cat));
cl::opt<std::string> schedule("schedule",
                              cl::desc("gpipe, 1f1b or interleaved:V"),
                              cl::init("1f1b"), cl::sub(compileCmd),
                              cl::cat(cat));
cl::opt<std::string>
    recomputeMode("recompute",
                  cl::desc("Activation recomputation: none, selective, full or "
                           "auto (with --memory-budget)"),
                  cl::init("none"), cl::sub(compileCmd), cl::cat(cat));
cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("Peak bytes per device (e.g. 40GB, 512MiB): --recompute auto "
             "recomputes blocks until it fits; otherwise a plan over it is "
             "an error"),
    cl::sub(compileCmd), cl::cat(cat));
cl::list<int64_t> layersPerStage(
    "layers-per-stage", cl::CommaSeparated,
    cl::desc("Blocks per pipeline stage, e.g. 5,6,6,5 (default: balanced by "
             "cost)"),
    cl::sub(compileCmd), cl::cat(cat));
cl::opt<std::string> savedState(
    "saved-state",
    cl::desc(
        "Activation accounting: strata (what strata's kernels keep) or "
        "megatron (Megatron-LM's unfused layers, Korthikanti et al. 2022)"),
    cl::init("strata"), cl::sub(compileCmd), cl::cat(cat));

cl::opt<bool> distributedOptimizer(
    "distributed-optimizer",
    cl::desc("Shard the AdamW state over dp (ZeRO-1): reduce-scatter the "
             "gradients, update a shard, all-gather the parameters"),
    cl::sub(compileCmd), cl::cat(cat));
cl::opt<bool> noFusion(
    "no-fusion",
    cl::desc("Keep every op unfused (no generated kernels in the plan)"),
    cl::sub(compileCmd), cl::cat(cat));

Error usage(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(),
                           "strata compile: error: " + msg);
}

Expected<ParallelCompileOptions> parallelOptions(const pb::ModelSpec &spec) {
  ParallelCompileOptions o;
  if (tp < 1 || dp < 1 || pp < 1)
    return usage("--tp, --dp and --pp must be >= 1");
  o.tp = tp;
  o.dp = dp;
  o.pp = pp;
  o.sp = sp;
  o.microbatches =
      microbatches ? int64_t(microbatches) : spec.training().grad_accum();
  if (o.microbatches < 1)
    return usage("--microbatches must be >= 1");
  auto sched = parseScheduleSpec(schedule);
  if (!sched)
    return usage(toString(sched.takeError()));
  o.schedule = *sched;
  auto mode = parseRecomputeMode(recomputeMode);
  if (!mode)
    return usage("--recompute must be none, selective, full or auto (got '" +
                 recomputeMode + "')");
  o.recompute = *mode;
  if (!memoryBudget.empty()) {
    auto bytes = parseBytes(memoryBudget);
    if (!bytes)
      return usage("--memory-budget takes bytes such as 40GB or 512MiB (got '" +
                   memoryBudget + "')");
    o.memoryBudget = *bytes;
  }
  o.layersPerStage.assign(layersPerStage.begin(), layersPerStage.end());
  auto model = parseSavedStateModel(savedState);
  if (!model)
    return usage("--saved-state must be strata or megatron (got '" +
                 savedState + "')");
  o.savedState = *model;
  const pb::Training &t = spec.training();
  o.optimizer.beta1 = t.beta1();
  o.optimizer.beta2 = t.beta2();
  o.optimizer.eps = t.eps();
  o.optimizer.weight_decay = t.weight_decay();
  o.optimizer.grad_clip = t.grad_clip();
  o.fusion = !noFusion;
  o.distributedOptimizer = distributedOptimizer;
  return o;
}

int runCompile() {
  auto spec = loadModelSpec(specPath);
  if (!spec)
    return reportError(spec.takeError());
  auto options = parallelOptions(*spec);
  if (!options)
    return reportError(options.takeError());
  auto plan = compilePlan(*spec);
  if (!plan) {
    reportError(plan.takeError());
    return kExitInternalError;
  }
  auto compiled =
      compilePipeline(buildModelGraph(resolveModelSpec(*spec)), *options);
  if (!compiled)
    return reportError(usage(toString(compiled.takeError())));
  storePipeline(*plan, *compiled, *options);
  if (Error e = storeKernels(*plan, *compiled)) {
    reportError(usage("codegen: " + toString(std::move(e))));
    return kExitInternalError;
  }
  if (Error e = writePlanFile(outputPath, *plan))
    return reportError(std::move(e));
  outs() << "wrote " << outputPath << " ("
         << resolveModelSpec(*spec).familyName() << ", "
         << withCommas(plan->info().num_params()) << " params, "
         << plan->logical_graph().nodes_size() << " graph nodes)\n";
  // A parallel or recomputing plan also says how it was cut and what each
  // device will hold.
  if (options->tp * options->dp * options->pp > 1 ||
      options->recompute != RecomputeMode::None) {
    outs() << compiled->pipeline.balanceReport;
    if (options->recompute != RecomputeMode::None) {
      outs() << "recompute " << recomputeModeName(options->recompute);
      if (!compiled->recomputedLayers.empty()) {
        outs() << (compiled->recomputedLayers.size() == 1 ? ": block"
                                                          : ": blocks");
        for (size_t i = 0; i < compiled->recomputedLayers.size(); ++i)
          outs() << (i ? ", " : " ") << compiled->recomputedLayers[i];
        outs() << " recomputed in full";
      }
      outs() << "\n";
    }
    outs() << "peak memory per device:";
    for (const RankMemory &m : compiled->memory.ranks)
      outs() << " rank " << m.rank << " " << formatBytes(m.peak) << " (at "
             << m.peakAt << ")" << (m.rank + 1 < options->pp ? "," : "");
    outs() << "\n";
  }
  return kExitOk;
}

VerbRegistration reg(compileCmd, runCompile);

} // namespace
} // namespace strata
