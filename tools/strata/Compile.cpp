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
#include "tools/strata/LayoutFlags.h"
#include "tools/strata/PipelineInspect.h"
#include "tools/strata/PipelineProto.h"
#include "tools/strata/PrecisionFlag.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/TimeProfiler.h"
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

cl::opt<std::string> timeTracePath(
    "time-trace",
    cl::desc("Write where compile time goes (each pass, codegen, writing) to "
             "<file> as a Chrome trace (chrome://tracing or Perfetto)"),
    cl::value_desc("file"), cl::sub(compileCmd), cl::cat(strataCategory()));

LayoutFlags layout(compileCmd);
PrecisionFlag precision(compileCmd);

Error usage(const Twine &msg) { return usageError(msg); }

int compileSpec() {
  if (Error e = checkIsSpecFile(specPath))
    return reportError(std::move(e));
  auto spec = loadModelSpec(specPath);
  if (!spec)
    return reportError(spec.takeError());
  if (Error e = layout.applyBatch(*spec))
    return reportError(std::move(e));
  if (Error e = precision.apply(*spec))
    return reportError(std::move(e));
  auto options = layout.compileOptions(*spec);
  if (!options)
    return reportError(options.takeError());
  auto plan = compilePlan(*spec);
  if (!plan) {
    reportError(plan.takeError());
    return kExitInternalError;
  }
  plan->set_spec_dir(specDirectoryOf(specPath));
  auto compiled = compilePipeline(
      buildModelGraph(dataParallelConfig(resolveModelSpec(*spec), options->dp)),
      *options);
  if (!compiled)
    return reportError(usage(toString(compiled.takeError())));
  storePipeline(*plan, *compiled, *options);
  if (Error e = [&] {
        TimeTraceScope scope("codegen");
        return storeKernels(*plan, *compiled);
      }()) {
    reportError(usage("codegen: " + toString(std::move(e))));
    return kExitInternalError;
  }
  if (Error e = [&] {
        TimeTraceScope scope("write plan");
        return writePlanFile(outputPath, *plan);
      }())
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
      if (options->recompute == RecomputeMode::Selective &&
          options->savedState == SavedStateModel::Strata)
        outs() << " (keeps what none keeps under the strata saved-state "
                  "model: the fused attention never stores the s x s "
                  "probabilities selective recomputation saves; "
                  "--saved-state megatron counts Megatron's unfused layers)";
      outs() << "\n";
    }
    if (options->memoryBudget >= 0)
      outs() << "memory budget " << layout.memoryBudget << " = "
             << formatBytes(options->memoryBudget) << " per device\n";
    outs() << "peak memory per device:";
    for (const RankMemory &m : compiled->memory.ranks)
      outs() << " rank " << m.rank << " " << formatBytes(m.peak) << " (at "
             << m.peakAt << ")" << (m.rank + 1 < options->pp ? "," : "");
    outs() << "\n";
  }
  return kExitOk;
}

/// compileSpec, traced when --time-trace asks; the trace is written even
/// when compilation fails (it shows how far it got).
int runCompile() {
  if (timeTracePath.empty())
    return compileSpec();
  timeTraceProfilerInitialize(/*TimeTraceGranularity=*/0, "strata compile");
  int rc = compileSpec();
  Error e = timeTraceProfilerWrite(timeTracePath, outputPath);
  timeTraceProfilerCleanup();
  if (e)
    return reportError(usage("--time-trace: " + toString(std::move(e))));
  return rc;
}

VerbRegistration reg(compileCmd, runCompile);

} // namespace
} // namespace strata
