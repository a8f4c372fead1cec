//===- Plan.cpp - `strata plan SPEC --cluster C --gpus N --global-batch B` ===//
//
// Finds the fastest layout of a model on N devices of a cluster at a global
// batch: perf/PlanSearch.h enumerates tp (inside a node), pp, dp, sp, micro
// batch, schedule, recompute and ZeRO-1, drops what cannot run and ranks the
// rest by a closed form; then the best of them, in that order, are compiled
// and simulated (perf/Estimate.h), their stages cut by predicted time on
// the cluster: --simulate of them (more while none fits the memory
// planner's peak). Candidates compile at the spec's training.precision
// (a bf16 spec is ranked, simulated and memory-checked on its bf16 graph,
// as `strata estimate` compiles it), and the hardware runs them at
// --precision, by default the format of that precision. It prints the --top
// best with step time, MFU and memory, and why the others were dropped; -o
// compiles the winner to a plan file as `strata compile` would.
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelStats.h"
#include "frontends/Models.h"
#include "frontends/TrainingPrecision.h"
#include "passes/pipeline/CostModel.h"
#include "perf/Estimate.h"
#include "perf/OpTime.h"
#include "perf/PlanSearch.h"
#include "proto/PlanFile.h"
#include "runtime/train/LossScaler.h"
#include "tools/strata/Driver.h"
#include "tools/strata/Flags.h"
#include "tools/strata/PipelineInspect.h"
#include "tools/strata/PipelineProto.h"
#include "tools/strata/PrecisionFlag.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <ctime>
#include <map>

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand planCmd("plan", "Search the fastest layout of a model on a "
                               "cluster (predicted, nothing runs)");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> specPath(cl::Positional, cl::Required,
                              cl::desc("<model spec .textproto>"),
                              cl::sub(planCmd), cl::cat(cat));
cl::opt<std::string> cluster("cluster", cl::Required,
                             cl::desc("A built-in cluster or a hardware "
                                      ".textproto file"),
                             cl::value_desc("name|file"), cl::sub(planCmd),
                             cl::cat(cat));
cl::opt<int64_t> gpus("gpus", cl::Required, cl::desc("Devices to use"),
                      cl::sub(planCmd), cl::cat(cat));
cl::opt<int64_t> globalBatch("global-batch", cl::Required,
                             cl::desc("Sequences per optimizer step"),
                             cl::sub(planCmd), cl::cat(cat));
cl::opt<int64_t> seq("seq", cl::desc("Sequence length (default: the spec's)"),
                     cl::sub(planCmd), cl::cat(cat));
cl::opt<int64_t> top("top", cl::desc("Plans to print"), cl::init(5),
                     cl::sub(planCmd), cl::cat(cat));
cl::opt<std::string> precision("precision",
                               cl::desc("f32, tf32 or bf16 (as estimate; "
                                        "default: bf16 for a 16-bit spec, "
                                        "else f32)"),
                               cl::init("f32"), cl::sub(planCmd), cl::cat(cat));
cl::opt<int64_t> simulate("simulate",
                          cl::desc("Candidates to compile and simulate, best "
                                   "closed form first (more while none "
                                   "fits)"),
                          cl::init(6), cl::sub(planCmd), cl::cat(cat));
cl::opt<bool> asJson("json", cl::desc("Print the result as JSON"),
                     cl::sub(planCmd), cl::cat(cat));
cl::opt<std::string> outPath("o", cl::desc("Compile the winner to this plan"),
                             cl::value_desc("plan"), cl::sub(planCmd),
                             cl::cat(cat));

/// The spec's AdamW settings (as LayoutFlags::compileOptions).
OptimizerConfig optimizerOf(const pb::ModelSpec &spec) {
  const pb::Training &t = spec.training();
  OptimizerConfig o;
  o.beta1 = t.beta1();
  o.beta2 = t.beta2();
  o.eps = t.eps();
  o.weight_decay = t.weight_decay();
  o.grad_clip = t.grad_clip();
  return o;
}

struct Result {
  PlanCandidate cand;
  PlanEstimate est;
};

/// The compiler's options for `p` at the spec's training precision (as
/// LayoutFlags::compileOptions).
ParallelCompileOptions compileOptionsOf(const pb::ModelSpec &spec,
                                        const PlanCandidate &p,
                                        int64_t capacity) {
  ParallelCompileOptions o = p.compileOptions(optimizerOf(spec), capacity);
  o.precision = trainingPrecision(spec.training());
  o.lossScaling = lossScalingOf(spec.training()).has_value();
  return o;
}

/// The work of a step of `c` at the global batch (as estimate).
StepWork stepWork(const ModelConfig &c, const PlanCandidate &p,
                  size_t recomputed) {
  StepWork w;
  int64_t seqs = globalBatch;
  w.tokens = double(seqs * c.seq);
  w.modelFlops = modelFlopsPerStep(c, seqs);
  double extra = 0;
  if (p.recompute == RecomputeMode::Selective)
    extra = recomputeFlopsPerStep(c, seqs, false);
  else if (p.recompute != RecomputeMode::None)
    extra = recomputeFlopsPerStep(c, seqs, true) * double(recomputed) /
            double(std::max<int64_t>(c.layers, 1));
  w.hardwareFlops = w.modelFlops + extra;
  return w;
}

json::Value resultJson(const Result &r) {
  const PlanCandidate &p = r.cand;
  return json::Object{{"layout", p.str()},
                      {"tp", p.tp},
                      {"pp", p.pp},
                      {"dp", p.dp},
                      {"sp", p.sp},
                      {"micro_batch", p.microBatch},
                      {"microbatches", p.microbatches},
                      {"schedule", p.schedule.str()},
                      {"recompute", recomputeModeName(p.recompute)},
                      {"distributed_optimizer", p.zero1},
                      {"step_time_s", r.est.stepTime},
                      {"tokens_per_s", r.est.tokensPerSecond},
                      {"mfu", r.est.mfu},
                      {"hfu", r.est.hfu},
                      {"peak_memory_bytes", r.est.maxPeakMemory},
                      {"closed_form_step_time_s", p.boundTime}};
}

Error compileWinner(pb::ModelSpec spec, const PlanCandidate &p,
                    int64_t capacity) {
  spec.set_micro_batch(p.microBatch);
  spec.set_seq_len(resolveModelSpec(spec).seq);
  spec.mutable_training()->set_grad_accum(p.microbatches);
  ParallelCompileOptions o = compileOptionsOf(spec, p, capacity);
  auto plan = compilePlan(spec);
  if (!plan)
    return plan.takeError();
  plan->set_spec_dir(specDirectoryOf(specPath));
  // The logical graph's microbatch holds every dp rank's sequences.
  ModelConfig c = resolveModelSpec(spec);
  c.microBatch = p.microBatch * p.dp;
  auto compiled = compilePipeline(buildModelGraph(c), o);
  if (!compiled)
    return compiled.takeError();
  storePipeline(*plan, *compiled, o);
  if (Error e = storeKernels(*plan, *compiled))
    return e;
  return writePlanFile(outPath, *plan);
}

int runPlan() {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  if (Error e = checkFlags({atLeast(gpus, 1, "devices to plan for"),
                            atLeast(globalBatch, 1, "sequences per step"),
                            atLeast(seq, 1, "tokens per sequence"),
                            atLeast(top, 1, "plans to print"),
                            atLeast(simulate, 1, "candidates to simulate"),
                            oneOf(precision, {"f32", "tf32", "bf16"})}))
    return reportError(std::move(e));
  if (Error e = checkIsSpecFile(specPath))
    return reportError(std::move(e));
  auto spec = loadModelSpec(specPath);
  if (!spec)
    return reportError(spec.takeError());
  if (given(seq))
    spec->set_seq_len(seq);
  if (!given(precision))
    precision = hardwarePrecisionOf(spec->training()).str();
  auto hw = loadHardware(cluster);
  if (!hw)
    return reportError(hw.takeError());
  PlanSearchOptions so;
  so.devices = gpus, so.globalBatch = globalBatch;
  so.precision = *parsePrecision(precision);
  if (hw->nodes() > 0 && gpus > hw->nodes() * hw->devices_per_node())
    return reportError(usageError(
        "--gpus " + Twine(gpus) + ": the cluster '" + hw->name() + "' has " +
        Twine(hw->nodes() * hw->devices_per_node()) + " devices"));
  // The stage cut and auto recomputation weigh nodes by their predicted
  // time on this cluster (passes/pipeline/CostModel.h).
  auto seconds = predictedNodeSeconds(*hw, so.precision);
  if (!seconds)
    return reportError(seconds.takeError());
  ScopedNodeCost byTime(std::move(*seconds));
  ModelConfig c = resolveModelSpec(*spec);
  DropCounts dropped;
  std::vector<PlanCandidate> cands = enumerateCandidates(c, *hw, so, dropped);
  double enumerated = std::chrono::duration<double>(Clock::now() - t0).count();

  // Compile and simulate in closed-form order.
  EstimateOptions eo;
  eo.precision = so.precision;
  std::vector<Result> fits;
  std::map<int64_t, Graph> graphs; // by the logical microbatch
  size_t next = 0;
  // The memory plan over the closed form, the most seen so far per
  // recompute mode: a candidate the scaled closed form puts over the
  // capacity is not compiled.
  std::map<RecomputeMode, double> memoryRatio;
  int64_t capacity = hw->accelerator().memory_bytes();
  int64_t simulated = 0;
  // A count, not a time: the same input gives the same plans on a busy
  // machine.
  for (; next < cands.size(); ++next) {
    if (simulated >= std::max<int64_t>(simulate, top) && !fits.empty())
      break;
    const PlanCandidate &p = cands[next];
    double ratio =
        memoryRatio.count(p.recompute) ? memoryRatio[p.recompute] : 1.0;
    if (p.recompute != RecomputeMode::Auto &&
        p.boundMemory * ratio > double(capacity)) {
      dropped.add("out of memory (closed form scaled to the memory plans "
                  "seen)",
                  p.str());
      continue;
    }
    ++simulated;
    int64_t logical = p.microBatch * p.dp;
    auto g = graphs.find(logical);
    if (g == graphs.end()) {
      ModelConfig lc = c;
      lc.microBatch = logical;
      g = graphs.emplace(logical, buildModelGraph(lc)).first;
    }
    ParallelCompileOptions o = compileOptionsOf(*spec, p, capacity);
    auto compiled = compilePipeline(g->second, o);
    if (!compiled) {
      dropped.add("does not compile",
                  p.str() + ": " + toString(compiled.takeError()));
      continue;
    }
    std::vector<int64_t> peaks;
    for (const RankMemory &m : compiled->memory.ranks)
      peaks.push_back(m.peak);
    auto est = estimatePlan(*compiled, *hw,
                            stepWork(c, p, compiled->recomputedLayers.size()),
                            peaks, eo);
    if (!est) {
      dropped.add("does not simulate",
                  p.str() + ": " + toString(est.takeError()));
      continue;
    }
    double &seen = memoryRatio[p.recompute];
    seen = std::max(seen, double(est->maxPeakMemory) / p.boundMemory);
    if (est->maxPeakMemory > capacity) {
      dropped.add("out of memory (memory plan)",
                  p.str() + ": " + formatBytes(est->maxPeakMemory));
      continue;
    }
    fits.push_back({p, std::move(*est)});
  }
  for (size_t i = next; i < cands.size(); ++i)
    dropped.add("slower (closed form, not simulated)", cands[i].str());
  llvm::stable_sort(fits, [](const Result &a, const Result &b) {
    return a.est.stepTime < b.est.stepTime;
  });
  for (size_t i = size_t(top); i < fits.size(); ++i)
    dropped.add("slower (simulated)", fits[i].cand.str());
  if (fits.empty())
    return reportError(usageError(
        "no layout of " + c.name + " fits " + Twine(gpus) + " devices of " +
        hw->name() + " at global batch " + Twine(globalBatch) +
        " (see the reasons above; more devices or a smaller batch)"));
  fits.resize(std::min<size_t>(fits.size(), size_t(top)));
  double took = std::chrono::duration<double>(Clock::now() - t0).count();
  // CPU seconds of this process: the search's cost on a shared machine.
  double cpu = double(std::clock()) / CLOCKS_PER_SEC;
  if (!outPath.empty())
    if (Error e = compileWinner(*spec, fits.front().cand,
                                hw->accelerator().memory_bytes()))
      return reportError(std::move(e));

  if (asJson) {
    json::Array plans, drops;
    for (const Result &r : fits)
      plans.push_back(resultJson(r));
    for (auto &[why, n] : dropped.count)
      drops.push_back(json::Object{
          {"reason", why}, {"count", n}, {"example", dropped.example[why]}});
    outs() << json::Value(
                  json::Object{{"model", c.name},
                               {"cluster", hw->name()},
                               {"gpus", int64_t(gpus)},
                               {"global_batch", int64_t(globalBatch)},
                               {"precision", precision},
                               {"training_precision",
                                dtypeName(trainingPrecision(spec->training()))},
                               {"candidates", int64_t(cands.size())},
                               {"simulated", simulated},
                               {"seconds", took},
                               {"cpu_seconds", cpu},
                               {"plans", std::move(plans)},
                               {"dropped", std::move(drops)}})
           << "\n";
  } else {
    outs() << c.name << " on " << gpus << " x " << hw->accelerator().name()
           << ", global batch " << globalBatch << ", precision " << precision
           << ": " << cands.size() << " runnable layouts (closed form, "
           << format("%.2f s", enumerated) << "), " << simulated
           << " compiled and simulated, " << format("%.1f s", took)
           << format(" (%.1f s of CPU)", cpu) << "\n";
    outs() << "rank " << left_justify("layout", 62)
           << "   step time    MFU     memory\n";
    for (size_t i = 0; i < fits.size(); ++i)
      outs() << format("%-4zu %-62s %9.3f s %5.1f%% %10s\n", i + 1,
                       fits[i].cand.str().c_str(), fits[i].est.stepTime,
                       100 * fits[i].est.mfu,
                       formatBytes(fits[i].est.maxPeakMemory).c_str());
    outs() << "dropped:\n";
    for (auto &[why, n] : dropped.count)
      outs() << format("  %8lld %s, e.g. ", (long long)n, why.c_str())
             << dropped.example[why] << "\n";
    if (!outPath.empty())
      outs() << "wrote the winner to " << outPath << "\n";
  }
  return kExitOk;
}

VerbRegistration reg(planCmd, runPlan);

} // namespace
} // namespace strata
