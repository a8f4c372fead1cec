//===- Inspect.cpp - `strata inspect (FILE.plan|SPEC)` --------------------===//
//
// Prints what a plan (or a spec, compiled in memory) contains (a training
// checkpoint is summarized as one, CheckpointInspect.h): a summary
// table by default, or the IR text (--ir), a JSON summary (--json) or a
// Graphviz drawing of the graph (--dot); for the compiled training step
// (PipelineInspect.h) the stage programs (--programs), the memory per device
// (--memory) and the schedule with its timeline (--schedule FILE.svg).
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelStats.h"
#include "ir/IRText.h"
#include "runtime/train/LossScaler.h"
#include "tools/strata/CheckpointInspect.h"
#include "tools/strata/CollectiveInspect.h"
#include "tools/strata/Dot.h"
#include "tools/strata/Driver.h"
#include "tools/strata/Flags.h"
#include "tools/strata/KernelInspect.h"
#include "tools/strata/PipelineInspect.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand inspectCmd(
    "inspect",
    "Summarize a plan, a model spec or a checkpoint (params, FLOPs, graph)");

cl::opt<std::string>
    inputPath(cl::Positional, cl::Required,
              cl::desc("<plan file, model spec .textproto or checkpoint>"),
              cl::sub(inspectCmd), cl::cat(strataCategory()));
cl::opt<bool> printIR("ir", cl::desc("Print the logical graph as IR text"),
                      cl::sub(inspectCmd), cl::cat(strataCategory()));
cl::opt<bool> printJson("json", cl::desc("Print the summary as JSON"),
                        cl::sub(inspectCmd), cl::cat(strataCategory()));
cl::opt<bool> printDot("dot",
                       cl::desc("Print the logical graph for Graphviz "
                                "(nodes: op and shape; clusters: layers)"),
                       cl::sub(inspectCmd), cl::cat(strataCategory()));
cl::opt<bool> printPrograms_("programs",
                             cl::desc("Print the stage programs as IR text"),
                             cl::sub(inspectCmd), cl::cat(strataCategory()));
cl::opt<bool> printMemory("memory",
                          cl::desc("Print the bytes per device of each "
                                   "pipeline rank"),
                          cl::sub(inspectCmd), cl::cat(strataCategory()));
cl::opt<bool> printCollectives_(
    "collectives",
    cl::desc("List every collective per step: program, runs, group, bytes, "
             "why it is there"),
    cl::sub(inspectCmd), cl::cat(strataCategory()));
cl::opt<bool> printKernels_(
    "kernels",
    cl::desc("List the generated kernels: per target library, and the symbol "
             "of each fused node"),
    cl::sub(inspectCmd), cl::cat(strataCategory()));
cl::opt<std::string>
    kernelSource("kernel-source",
                 cl::desc("Print the generated kernel source (cpp or cuda)"),
                 cl::value_desc("target"), cl::sub(inspectCmd),
                 cl::cat(strataCategory()));
cl::opt<std::string> scheduleSvg(
    "schedule",
    cl::desc("Print the pipeline schedule and draw its timeline into <file>"),
    cl::value_desc("file.svg"), cl::sub(inspectCmd), cl::cat(strataCategory()));

/// 4.7e9 -> "4.70 GFLOP".
std::string flops(double f) {
  const char *units[] = {"", "K", "M", "G", "T", "P", "E"};
  int u = 0;
  while (f >= 1000 && u < 6)
    f /= 1000, ++u;
  std::string s;
  raw_string_ostream os(s);
  os << format("%.3g ", f) << units[u] << "FLOP";
  return s;
}

/// Sequences per optimizer step over all data-parallel ranks: the plan's
/// microbatches (the spec's gradient accumulation for a spec) of micro_batch
/// sequences on each of dp ranks.
int64_t sequencesPerStep(const LoadedPlan &p) {
  int64_t m = p.plan.parallel().microbatches() > 0
                  ? p.plan.parallel().microbatches()
                  : p.plan.model().training().grad_accum();
  return p.config.microBatch * std::max<int64_t>(m, 1) *
         std::max<int64_t>(p.plan.parallel().dp(), 1);
}

/// What the plan's recomputation adds to a step of `seqs` sequences.
double recomputedFlops(const LoadedPlan &p, int64_t seqs) {
  const pb::ParallelConfig &pc = p.plan.parallel();
  if (pc.recompute() == "selective")
    return recomputeFlopsPerStep(p.config, seqs, /*full=*/false);
  return recomputeFlopsPerStep(p.config, seqs, /*full=*/true) *
         double(pc.recomputed_layers_size()) /
         double(std::max<int64_t>(p.config.layers, 1));
}

struct GraphCounts {
  int64_t nodes, values, params, dataInputs;
};

GraphCounts graphCounts(const Graph &g) {
  int64_t params = static_cast<int64_t>(g.params().size());
  return {static_cast<int64_t>(g.nodes().size()),
          static_cast<int64_t>(g.numValues()), params,
          static_cast<int64_t>(g.inputs().size()) - params};
}

void printSummary(raw_ostream &os, const LoadedPlan &p) {
  const ModelConfig &c = p.config;
  const pb::ModelSpec &spec = p.plan.model();
  ParamStats ps = countParams(p.graph);
  GraphCounts gc = graphCounts(p.graph);
  auto row = [&](StringRef label, const Twine &value) {
    os << "  " << left_justify(label, 14) << value << '\n';
  };
  auto count = [&](StringRef label, int64_t n, StringRef note = "") {
    os << "    " << left_justify(label, 18) << right_justify(withCommas(n), 15)
       << (note.empty() ? "" : "  ") << note << '\n';
  };

  os << "model "
     << (spec.name().empty() ? c.familyName() : StringRef(spec.name())) << '\n';
  std::string family = c.isGPT() ? "GPT" : c.isFalcon() ? "Falcon" : "Llama";
  if (c.slidingWindow)
    family = formatv("Mistral (sliding window {0})", c.slidingWindow);
  // Factors as JSON prints them (8, 1.5), not formatv's fixed 8.00.
  if (const RopeScaling &r = c.ropeScaling; r.factor)
    family += formatv(", llama3 rope scaling (factor {0}, low_freq_factor "
                      "{1}, high_freq_factor {2}, original {3})",
                      json::Value(r.factor), json::Value(r.lowFreqFactor),
                      json::Value(r.highFreqFactor), r.originalMaxPositions);
  row("family", family);
  row("plan format", Twine(p.plan.format_version()) + " (strata " +
                         p.plan.strata_version() + ")");
  row("hidden", Twine(c.hidden));
  row("layers", Twine(c.layers));
  row("heads", Twine(c.heads) + " (kv " + Twine(c.kvHeads) + ", head_dim " +
                   Twine(c.headDim) + ")");
  row("ffn", Twine(c.ffn));
  row("seq_len", Twine(c.seq));
  row("micro_batch", Twine(c.microBatch) + " (per data-parallel rank)");
  row("vocab", Twine(c.vocab) + " real, " + Twine(c.paddedVocab) +
                   " padded (multiple of " +
                   Twine(spec.make_vocab_size_divisible_by()) + ")");
  row("embeddings",
      c.tieEmbeddings ? "tied (logits = x @ wte^T)" : "untied (lm_head.w)");
  if (c.dropout > 0)
    row("dropout", formatv("{0}", c.dropout).str());
  row("precision", precisionSummary(spec.training()));
  if (p.plan.pipeline().stages_size() > 0) {
    // A compiled plan: its layout.
    const pb::ParallelConfig &pc = p.plan.parallel();
    int64_t tp = std::max<int64_t>(pc.tp(), 1),
            dp = std::max<int64_t>(pc.dp(), 1),
            pp = std::max<int64_t>(pc.pp(), 1);
    os << "layout\n";
    row("devices", Twine(tp * dp * pp) + " (tp " + Twine(tp) + " x dp " +
                       Twine(dp) + " x pp " + Twine(pp) + ")");
    std::string extras;
    for (auto [on, what] :
         {std::pair{pc.sp(), "sequence parallel"},
          std::pair{pc.distributed_optimizer(), "distributed optimizer"},
          std::pair{pc.fusion(), "fused kernels"}})
      if (on)
        extras += (extras.empty() ? "" : ", ") + std::string(what);
    row("features", extras.empty() ? "none" : extras);
    row("schedule",
        (pc.schedule().empty() ? std::string("1f1b") : pc.schedule()) + ", " +
            Twine(std::max<int64_t>(pc.microbatches(), 1)) + " microbatches");
    row("recompute",
        pc.recompute().empty() ? std::string("none") : pc.recompute());
    row("tokens/step", Twine(sequencesPerStep(p) * c.seq) + " (" +
                           Twine(sequencesPerStep(p)) + " sequences of " +
                           Twine(c.seq) + ")");
  }

  os << "parameters\n";
  count("embedding", ps.embedding, c.isGPT() ? "wte, wpe" : "wte");
  bool uniform = llvm::all_of(ps.layers, [&](const LayerParams &l) {
    return l.attention == ps.layers[0].attention && l.mlp == ps.layers[0].mlp &&
           l.norms == ps.layers[0].norms;
  });
  for (size_t i = 0; i < ps.layers.size(); ++i) {
    const LayerParams &l = ps.layers[i];
    std::string label = uniform ? "per layer" : "layer " + std::to_string(i);
    count(label, l.total(),
          uniform ? "x " + std::to_string(ps.layers.size()) + " = " +
                        withCommas(l.total() * int64_t(ps.layers.size()))
                  : "");
    count("  attention", l.attention);
    count("  mlp", l.mlp);
    count("  norms", l.norms);
    if (uniform)
      break;
  }
  count("final norm", ps.finalNorm);
  count("lm head", ps.head, c.tieEmbeddings ? "tied to wte" : "");
  if (ps.other)
    count("other", ps.other);
  count("total", ps.total);

  int64_t seqs = sequencesPerStep(p);
  double model = modelFlopsPerStep(c, seqs),
         hardware = model + recomputedFlops(p, seqs);
  os << "FLOPs (matmuls, forward + backward; hardware adds recomputation)\n";
  row("per token", flops(model / double(seqs * c.seq)) + " model, " +
                       flops(hardware / double(seqs * c.seq)) + " hardware");
  row("per step", flops(model) + " model, " + flops(hardware) + " hardware (" +
                      Twine(seqs) + " x " + Twine(c.seq) + " tokens)");
  os << "graph\n";
  row("nodes", Twine(gc.nodes));
  row("values", Twine(gc.values) + " (" + Twine(gc.params) + " params, " +
                    Twine(gc.dataInputs) + " data inputs)");
}

Expected<json::Value> summaryJson(const LoadedPlan &p) {
  const ModelConfig &c = p.config;
  ParamStats ps = countParams(p.graph);
  GraphCounts gc = graphCounts(p.graph);
  json::Array layers;
  for (const LayerParams &l : ps.layers)
    layers.push_back(json::Object{{"attention", l.attention},
                                  {"mlp", l.mlp},
                                  {"norms", l.norms},
                                  {"total", l.total()}});
  int64_t seqs = sequencesPerStep(p);
  json::Object out{
      {"name", p.plan.model().name()},
      {"family", c.familyName()},
      {"sliding_window", c.slidingWindow},
      {"rope_scaling",
       c.ropeScaling.factor
           ? json::Value(json::Object{
                 {"rope_type", "llama3"},
                 {"factor", c.ropeScaling.factor},
                 {"low_freq_factor", c.ropeScaling.lowFreqFactor},
                 {"high_freq_factor", c.ropeScaling.highFreqFactor},
                 {"original_max_position_embeddings",
                  c.ropeScaling.originalMaxPositions}})
           : json::Value(nullptr)},
      {"format_version", int64_t(p.plan.format_version())},
      {"strata_version", p.plan.strata_version()},
      {"hidden", c.hidden},
      {"layers", c.layers},
      {"heads", c.heads},
      {"kv_heads", c.kvHeads},
      {"head_dim", c.headDim},
      {"ffn", c.ffn},
      {"seq_len", c.seq},
      {"micro_batch", c.microBatch},
      {"vocab_size", c.vocab},
      {"padded_vocab_size", c.paddedVocab},
      {"tie_embeddings", c.tieEmbeddings},
      {"dropout", c.dropout},
      {"params", json::Object{{"embedding", ps.embedding},
                              {"layers", std::move(layers)},
                              {"final_norm", ps.finalNorm},
                              {"head", ps.head},
                              {"other", ps.other},
                              {"total", ps.total}}},
      {"flops",
       json::Object{{"formula", "model: 72*B*s*l*h^2*(1 + s/(6h) + "
                                "V/(12lh)), forward + backward; hardware "
                                "adds the plan's recomputation"},
                    {"model_per_step", modelFlopsPerStep(c, seqs)},
                    {"hardware_per_step",
                     modelFlopsPerStep(c, seqs) + recomputedFlops(p, seqs)},
                    {"tokens_per_step", seqs * c.seq},
                    {"sequences_per_step", seqs}}},
      {"graph", json::Object{{"nodes", gc.nodes},
                             {"values", gc.values},
                             {"params", gc.params},
                             {"data_inputs", gc.dataInputs}}},
  };
  for (auto &member : precisionJson(p.plan.model().training()))
    out.try_emplace(member.first, std::move(member.second));
  if (p.plan.has_pipeline()) {
    for (auto &member : pipelineJson(p.plan))
      out.try_emplace(member.first, std::move(member.second));
    auto collectives = collectivesJson(p.plan);
    if (!collectives)
      return collectives.takeError();
    out.try_emplace("collectives", std::move(*collectives));
  }
  return json::Value(std::move(out));
}

int runInspect() {
  bool pipelineView = printPrograms_ || printMemory || printCollectives_ ||
                      printKernels_ || !kernelSource.empty() ||
                      !scheduleSvg.empty();
  if (int(printIR) + int(printJson) + int(printDot) + int(printPrograms_) +
          int(printMemory) + int(printCollectives_) + int(printKernels_) +
          int(!kernelSource.empty()) + int(!scheduleSvg.empty()) >
      1) {
    return reportError(
        "--ir, --json and --dot are exclusive with each other and with "
        "--programs, --memory, --collectives, --kernels, --kernel-source and "
        "--schedule (pick one)");
  }
  if (isCheckpointFile(inputPath)) {
    if (pipelineView || printIR || printJson || printDot)
      return reportError(
          inputPath + ": a training checkpoint has no graph or compiled step "
                      "(--ir, --json, --dot and the plan views read a plan "
                      "or a spec; plain `strata inspect` summarizes a "
                      "checkpoint)");
    if (Error e = printCheckpointSummary(outs(), inputPath))
      return reportError(std::move(e));
    return kExitOk;
  }
  if (Error e =
          checkFlags({oneOf(kernelSource, {"cpp", "cuda"},
                            "the target whose generated library to print")}))
    return reportError(std::move(e));
  auto loaded = loadPlanOrSpec(inputPath);
  if (!loaded)
    return reportError(loaded.takeError());
  if (pipelineView && !loaded->plan.has_pipeline())
    return reportError(
        inputPath + " has no compiled training step (--programs, --memory, "
                    "--collectives, --kernels, --kernel-source and --schedule "
                    "read a plan from `strata compile SPEC [--tp T --pp P "
                    "...] -o PLAN`)");
  if (printPrograms_) {
    if (Error e = printPrograms(outs(), loaded->plan))
      return reportError(std::move(e));
  } else if (printKernels_) {
    printKernels(outs(), loaded->plan);
  } else if (!kernelSource.empty()) {
    if (Error e = printKernelSource(outs(), loaded->plan, kernelSource))
      return reportError(inputPath + ": " + toString(std::move(e)));
  } else if (printCollectives_) {
    if (Error e = printCollectives(outs(), loaded->plan))
      return reportError(std::move(e));
  } else if (printMemory) {
    printMemoryReport(outs(), loaded->plan);
  } else if (!scheduleSvg.empty()) {
    if (Error e = printSchedule(outs(), loaded->plan, scheduleSvg))
      return reportError(std::move(e));
  } else if (printIR)
    printGraph(outs(), loaded->graph);
  else if (printJson) {
    auto summary = summaryJson(*loaded);
    if (!summary)
      return reportError(summary.takeError());
    outs() << formatv("{0:2}", *summary) << '\n';
  } else if (printDot)
    printGraphDot(outs(), loaded->graph);
  else
    printSummary(outs(), *loaded);
  return kExitOk;
}

VerbRegistration reg(inspectCmd, runInspect);

} // namespace
} // namespace strata
