//===- Estimate.cpp - `strata estimate SPEC|PLAN --cluster NAME|FILE` -----===//
//
// Predicts a training step of a plan on a cluster (perf/Estimate.h): the
// spec is compiled in memory with the layout flags of `strata compile` (a
// plan file keeps its own layout), its per-rank instruction streams are
// simulated event by event with op, collective and message times from the
// cluster's description (hardware/), and the step time, its breakdown,
// tokens/s, MFU, HFU and the memory plan's peak per device are printed, or
// written as JSON. --trace writes the predicted timeline in the Chrome
// format of `strata train --trace` (runtime/Trace.h), one process row per
// device (per pipeline rank's first device beyond 64 devices).
//
//===----------------------------------------------------------------------===//
#include "passes/pipeline/CostModel.h"
#include "perf/Estimate.h"
#include "perf/OpTime.h"
#include "frontends/ModelStats.h"
#include "frontends/Models.h"
#include "runtime/Trace.h"
#include "runtime/io/AtomicFile.h"
#include "tools/strata/Driver.h"
#include "tools/strata/Flags.h"
#include "tools/strata/LayoutFlags.h"
#include "tools/strata/PipelineProto.h"
#include "tools/strata/PrecisionFlag.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <optional>

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand
    estimateCmd("estimate",
                "Predict the step time, throughput and memory of a plan on a "
                "cluster (simulated, nothing runs)");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                               cl::desc("<model spec .textproto or plan file>"),
                               cl::sub(estimateCmd), cl::cat(cat));
cl::opt<std::string>
    cluster("cluster", cl::Required,
            cl::desc("A built-in cluster (a100-80gb, h100-sxm, h200, "
                     "v100-dgx2h) or a hardware .textproto file"),
            cl::value_desc("name|file"), cl::sub(estimateCmd), cl::cat(cat));
cl::opt<int64_t> nodes("nodes",
                       cl::desc("Nodes in the cluster (default: the file's "
                                "`nodes`, or as many as the layout needs)"),
                       cl::sub(estimateCmd), cl::cat(cat));
cl::opt<std::string> precision(
    "precision",
    cl::desc("How the device runs the plan's f32 tensors: f32, tf32 (tensor "
             "cores on f32) or bf16 (mixed precision: 16-bit activations, "
             "gradients and matmuls, fp32 optimizer); default: bf16 for a "
             "16-bit spec or plan, else f32"),
    cl::init("f32"), cl::sub(estimateCmd), cl::cat(cat));
cl::opt<std::string> algorithm("collective-algorithm",
                               cl::desc("all_reduce algorithm: auto (the "
                                        "faster), ring or tree"),
                               cl::init("auto"), cl::sub(estimateCmd),
                               cl::cat(cat));
cl::opt<bool> asJson("json", cl::desc("Print the estimate as JSON"),
                     cl::sub(estimateCmd), cl::cat(cat));
cl::opt<std::string>
    tracePath("trace",
              cl::desc("Write the predicted step timeline as a Chrome trace "
                       "(the format of `strata train --trace`)"),
              cl::value_desc("file.json"), cl::sub(estimateCmd), cl::cat(cat));

// The layout flags of `strata compile`, for a spec.
LayoutFlags layout(estimateCmd);

Error usage(const Twine &msg) { return usageError(msg); }

/// A plan with what the estimate reads: programs, memory peaks, the work of
/// a step.
struct Input {
  CompiledPipeline compiled;
  std::vector<int64_t> peaks;
  StepWork work;
  std::string name, layout;
};

/// What recomputation adds to a step of `seqs` sequences (as inspect).
double recomputedFlops(const ModelConfig &c, RecomputeMode mode,
                       size_t recomputedLayers, int64_t seqs) {
  if (mode == RecomputeMode::Selective)
    return recomputeFlopsPerStep(c, seqs, /*full=*/false);
  return recomputeFlopsPerStep(c, seqs, /*full=*/true) *
         double(recomputedLayers) / double(std::max<int64_t>(c.layers, 1));
}

Expected<Input> loadInput(Expected<LoadedPlan> loaded) {
  if (!loaded)
    return loaded.takeError();
  Input in;
  ParallelCompileOptions o;
  if (isSpecPath(inputPath)) {
    pb::ModelSpec &spec = *loaded->plan.mutable_model();
    if (Error e = layout.applyBatch(spec))
      return std::move(e);
    loaded->config = resolveModelSpec(spec);
    auto opts = layout.compileOptions(spec);
    if (!opts)
      return opts.takeError();
    o = *opts;
    auto compiled = compilePipeline(
        buildModelGraph(dataParallelConfig(loaded->config, o.dp)), o);
    if (!compiled)
      return usage(toString(compiled.takeError()));
    in.compiled = std::move(*compiled);
    for (const RankMemory &m : in.compiled.memory.ranks)
      in.peaks.push_back(m.peak);
  } else {
    if (const cl::Option *f = layout.firstGiven())
      return usage("--" + f->ArgStr + " applies to a model spec; " + inputPath +
                   " is a compiled plan with its own layout (estimate the "
                   "spec, or compile the plan again)");
    auto compiled = loadPipeline(loaded->plan);
    if (!compiled)
      return compiled.takeError();
    in.compiled = std::move(*compiled);
    for (const auto &r : loaded->plan.memory().ranks())
      in.peaks.push_back(r.peak());
    const pb::ParallelConfig &pc = loaded->plan.parallel();
    o.tp = std::max<int64_t>(pc.tp(), 1);
    o.dp = std::max<int64_t>(pc.dp(), 1);
    o.pp = std::max<int64_t>(pc.pp(), 1);
    o.microbatches = in.compiled.pipeline.schedule.microbatches;
    o.recompute = pc.recompute().empty() ? RecomputeMode::None
                                         : *parseRecomputeMode(pc.recompute());
    o.schedule = in.compiled.pipeline.schedule.spec;
  }
  const ModelConfig &c = loaded->config;
  in.name = c.name;
  int64_t seqs = c.microBatch * o.dp * o.microbatches;
  in.work.tokens = double(seqs * c.seq);
  in.work.modelFlops = modelFlopsPerStep(c, seqs);
  in.work.hardwareFlops =
      in.work.modelFlops + recomputedFlops(c, o.recompute,
                                           in.compiled.recomputedLayers.size(),
                                           seqs);
  in.layout = "tp " + std::to_string(o.tp) + ", dp " + std::to_string(o.dp) +
              ", pp " + std::to_string(o.pp) + ", " + o.schedule.str() + ", " +
              std::to_string(o.microbatches) + " microbatches, " +
              "recompute " + recomputeModeName(o.recompute).str();
  return in;
}

std::string seconds(double s) {
  char buf[32];
  if (s >= 1)
    snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3)
    snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  return buf;
}

json::Object breakdownJson(const std::array<double, kNumPhases> &phases) {
  json::Object o;
  for (size_t i = 0; i < kNumPhases; ++i)
    o[phaseName(Phase(i))] = phases[i];
  return o;
}

json::Value toJson(const Input &in, const PlanEstimate &e,
                   const pb::Hardware &hw) {
  json::Array ranks, peaks;
  for (size_t r = 0; r < e.sim.ranks.size(); ++r)
    ranks.push_back(json::Object{
        {"rank", int64_t(r)},
        {"breakdown", breakdownJson(e.sim.ranks[r].phase)},
        {"peak_memory_bytes", r < e.peakMemory.size() ? e.peakMemory[r] : 0}});
  for (int64_t b : e.peakMemory)
    peaks.push_back(b);
  return json::Object{
      {"model", in.name},
      {"cluster", hw.name()},
      {"precision", precisionName(*parsePrecision(precision))},
      {"layout", in.layout},
      {"devices", e.devices},
      {"step_time_s", e.stepTime},
      {"tokens_per_step", in.work.tokens},
      {"tokens_per_s", e.tokensPerSecond},
      {"model_flops_per_step", in.work.modelFlops},
      {"hardware_flops_per_step", in.work.hardwareFlops},
      {"peak_flops_per_device", e.peakFlops},
      {"mfu", e.mfu},
      {"hfu", e.hfu},
      {"bubble_fraction", e.sim.bubbleFraction()},
      {"peak_memory_bytes", e.maxPeakMemory},
      {"peak_memory_per_rank", std::move(peaks)},
      {"memory_capacity_bytes", hw.accelerator().memory_bytes()},
      {"fits", e.maxPeakMemory <= hw.accelerator().memory_bytes()},
      {"breakdown", breakdownJson(e.breakdown)},
      {"ranks", std::move(ranks)}};
}

void printText(raw_ostream &os, const Input &in, const PlanEstimate &e,
               const pb::Hardware &hw) {
  os << in.name << " on " << hw.name() << " (" << hw.accelerator().name()
     << "): " << e.devices << (e.devices == 1 ? " device" : " devices") << ", "
     << in.layout << ", precision " << precision << "\n";
  os << "step time        " << seconds(e.stepTime) << "\n";
  os << "tokens/s         "
     << withCommas(int64_t(std::llround(e.tokensPerSecond))) << " ("
     << withCommas(int64_t(in.work.tokens)) << " tokens per step)\n";
  os << format("MFU              %.1f%%  (HFU %.1f%%, of %.4g TFLOP/s per "
               "device)\n",
               100 * e.mfu, 100 * e.hfu, e.peakFlops / 1e12);
  os << "breakdown (mean over pipeline ranks)\n";
  for (size_t i = 0; i < kNumPhases; ++i)
    os << format("  %-12s %14s  %5.1f%%\n", phaseName(Phase(i)),
                 seconds(e.breakdown[i]).c_str(),
                 e.stepTime > 0 ? 100 * e.breakdown[i] / e.stepTime : 0.0);
  os << "peak memory per device:";
  for (size_t r = 0; r < e.peakMemory.size(); ++r)
    os << (r ? ", " : " ") << "rank " << r << " "
       << formatBytes(e.peakMemory[r]);
  os << " (of " << formatBytes(hw.accelerator().memory_bytes()) << ")\n";
}

/// The trace of `e`: each pipeline rank's events on every device of it
/// (global ranks pipeRank * perRank + i) up to kAllDevices devices, so it
/// lies beside `strata train --trace`; on its first device only beyond.
Error writeTrace(const PlanEstimate &e, int64_t perRank) {
  constexpr int64_t kAllDevices = 64;
  int64_t copies = e.devices <= kAllDevices ? perRank : 1;
  Trace trace;
  for (const SimEvent &ev : e.sim.events) {
    int64_t begin = std::llround(ev.start * 1e6);
    for (int64_t i = 0; i < copies; ++i)
      trace.add({ev.rank * perRank + i,
                 "device stream " + std::to_string(ev.stream), ev.name,
                 ev.category, begin, std::llround(ev.end * 1e6) - begin,
                 ev.bytes});
  }
  json::Value json = trace.toJson();
  return writeFileAtomically(tracePath, [&](raw_ostream &out) {
    out << json << '\n';
    return Error::success();
  });
}

int runEstimate() {
  if (Error e = checkFlags({atLeast(nodes, 1, "nodes in the cluster"),
                            oneOf(precision, {"f32", "tf32", "bf16"}),
                            oneOf(algorithm, {"auto", "ring", "tree"})}))
    return reportError(std::move(e));
  if (!tracePath.empty()) {
    StringRef dir = sys::path::parent_path(tracePath);
    if (!dir.empty() && !sys::fs::is_directory(dir))
      return reportError(usage("--trace " + tracePath + ": the directory '" +
                               dir +
                               "' does not exist (create it, or write "
                               "the trace elsewhere)"));
  }
  auto hw = loadHardware(cluster);
  if (!hw)
    return reportError(hw.takeError());
  if (given(nodes))
    hw->set_nodes(nodes);
  auto loaded = loadPlanOrSpec(inputPath);
  if (loaded && !given(precision))
    precision = hardwarePrecisionOf(loaded->plan.model().training()).str();
  // A spec's stages are cut (and auto recomputation chosen) by predicted
  // time on this cluster rather than FLOPs (passes/pipeline/CostModel.h); a
  // precision the device lacks is reported by the estimate below.
  std::optional<ScopedNodeCost> byTime;
  if (auto s = predictedNodeSeconds(*hw, *parsePrecision(precision)))
    byTime.emplace(std::move(*s));
  else
    consumeError(s.takeError());
  auto in = loadInput(std::move(loaded));
  if (!in)
    return reportError(in.takeError());
  EstimateOptions o;
  o.precision = *parsePrecision(precision);
  o.algorithm = algorithm == "ring"   ? CollectiveAlgorithm::Ring
                : algorithm == "tree" ? CollectiveAlgorithm::Tree
                                      : CollectiveAlgorithm::Auto;
  o.recordEvents = !tracePath.empty();
  auto e = estimatePlan(in->compiled, *hw, in->work, in->peaks, o);
  if (!e)
    return reportError(e.takeError());
  Mesh mesh = planMesh(in->compiled);
  if (!tracePath.empty()) {
    int64_t perRank =
        mesh.numDevices() / std::max<int64_t>(mesh.axisSize("pp"), 1);
    if (Error err = writeTrace(*e, std::max<int64_t>(perRank, 1)))
      return reportError(std::move(err));
  }
  if (mesh.axisSize("tp") > hw->devices_per_node())
    reportWarning("tp " + Twine(mesh.axisSize("tp")) + " spans nodes of " +
                  Twine(hw->devices_per_node()) + " devices on " + hw->name() +
                  ": its all-reduces go over the network (keep tp within a "
                  "node)");
  if (e->maxPeakMemory > hw->accelerator().memory_bytes())
    reportWarning("the plan needs " + formatBytes(e->maxPeakMemory) +
                  " on its fullest device, " + hw->accelerator().name() +
                  " has " + formatBytes(hw->accelerator().memory_bytes()) +
                  " (it would not fit: recompute, more pp or tp, or "
                  "--distributed-optimizer)");
  if (asJson)
    outs() << toJson(*in, *e, *hw) << "\n";
  else
    printText(outs(), *in, *e, *hw);
  if (!tracePath.empty() && !asJson)
    outs() << "wrote the predicted step timeline to " << tracePath << "\n";
  return kExitOk;
}

VerbRegistration reg(estimateCmd, runEstimate);

} // namespace
} // namespace strata
