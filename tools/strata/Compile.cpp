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
#include "tools/strata/Flags.h"
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
    cl::sub(compileCmd), cl::cat(cat));
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
    cl::desc("Peak bytes per device: 16GiB or 512MiB (powers of 1024), 16GB "
             "(10^9 bytes each), or bytes; --recompute auto recomputes "
             "blocks until it fits, otherwise a plan over it is an error"),
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

Error usage(const Twine &msg) { return usageError(msg); }

Expected<ParallelCompileOptions> parallelOptions(const pb::ModelSpec &spec) {
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
  ParallelCompileOptions o;
  o.tp = tp;
  o.dp = dp;
  o.pp = pp;
  o.sp = sp;
  o.microbatches = given(microbatches) ? int64_t(microbatches)
                                       : spec.training().grad_accum();
  auto sched = parseScheduleSpec(schedule);
  if (!sched)
    return usage("--schedule: " + toString(sched.takeError()));
  o.schedule = *sched;
  o.recompute = *parseRecomputeMode(recomputeMode);
  if (!memoryBudget.empty()) {
    auto bytes = parseBytes(memoryBudget);
    if (!bytes)
      return usage("--memory-budget takes a byte count such as 16GiB, 512MiB "
                   "(powers of 1024), 16GB (powers of 1000) or 4096, got '" +
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
  o.distributedOptimizer = distributedOptimizer;
  return o;
}

int runCompile() {
  if (Error e = checkIsSpecFile(specPath))
    return reportError(std::move(e));
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
  plan->set_spec_dir(specDirectoryOf(specPath));
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
      options->recompute != RecomputeMode::None || options->memoryBudget >= 0) {
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
    if (options->memoryBudget >= 0)
      outs() << "memory budget " << memoryBudget << " = "
             << formatBytes(options->memoryBudget) << " per device\n";
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
