//===- PlanSearch.cpp - Candidate layouts and their closed-form bounds ----===//
#include "perf/PlanSearch.h"

#include "perf/Collectives.h"
#include "perf/OpTime.h"

#include <algorithm>
#include <cmath>

namespace strata {

std::string PlanCandidate::str() const {
  std::string s = "tp " + std::to_string(tp) + " pp " + std::to_string(pp) +
                  " dp " + std::to_string(dp) + (sp ? " sp" : "") + " mb " +
                  std::to_string(microBatch) + " m " +
                  std::to_string(microbatches) + " " + schedule.str() +
                  " recompute " + recomputeModeName(recompute).str();
  return zero1 ? s + " zero1" : s;
}

ParallelCompileOptions PlanCandidate::compileOptions(const OptimizerConfig &opt,
                                                     int64_t capacity) const {
  ParallelCompileOptions o;
  o.tp = tp, o.dp = dp, o.pp = pp, o.sp = sp;
  o.schedule = schedule;
  o.microbatches = microbatches;
  o.recompute = recompute;
  if (recompute == RecomputeMode::Auto)
    o.memoryBudget = capacity;
  o.optimizer = opt;
  o.distributedOptimizer = zero1;
  o.fusion = true;
  return o;
}

void DropCounts::add(const std::string &reason, const std::string &what) {
  if (count[reason]++ == 0)
    example[reason] = what;
}

namespace {
/// The pieces of one block's time on one device, per microbatch.
struct BlockTime {
  double fwd = 0, bwd = 0, attnFwd = 0, commFwd = 0, commBwd = 0;
};

BlockTime blockTime(const ModelConfig &c, const OpTimeModel &ops,
                    const pb::Hardware &hw, const PlanCandidate &p, double eb) {
  int64_t t = p.tp, rows = p.microBatch * c.seq, h = c.hidden;
  int64_t hd = c.headDim ? c.headDim : h / c.heads;
  int64_t kv = c.kvHeads ? c.kvHeads : c.heads;
  int64_t f = c.ffn ? c.ffn : 4 * h;
  // (n, k) of the block's weight GEMMs at their tp shard.
  std::vector<std::pair<int64_t, int64_t>> w = {
      {(c.heads + 2 * kv) * hd / t, h}, {h, c.heads * hd / t}};
  if (c.isGPT() || c.isFalcon())
    w.insert(w.end(), {{f / t, h}, {h, f / t}});
  else
    w.insert(w.end(), {{2 * f / t, h}, {h, f / t}});
  BlockTime b;
  for (auto [n, k] : w) {
    b.fwd += ops.gemmSeconds(1, rows, n, k, 0);
    b.bwd += ops.gemmSeconds(1, rows, k, n, 0, false, true) +
             ops.gemmSeconds(1, k, n, rows, 0, true, false);
  }
  // Flash-style attention: QK^T and PV, causal half.
  double bh = double(p.microBatch * c.heads / t);
  b.attnFwd = 0.5 * (ops.gemmSeconds(bh, c.seq, c.seq, hd, 0) +
                     ops.gemmSeconds(bh, c.seq, hd, c.seq, 0));
  b.fwd += b.attnFwd;
  b.bwd += 2.5 * b.attnFwd;
  // Memory-bound work: norms, residuals, activation, bias and dropout
  // passes over the hidden-sized (split by tp under sp) and ffn-sized
  // tensors, about 12 and 4 passes forward, twice that backward.
  double hidden = double(rows) * double(h) / double(p.sp ? t : 1);
  double moved = eb * (12 * hidden + 4 * double(rows) * double(f / t));
  b.fwd += ops.memorySeconds(moved) + 12 * hw.accelerator().kernel_launch_s();
  b.bwd +=
      ops.memorySeconds(2 * moved) + 24 * hw.accelerator().kernel_launch_s();
  if (t > 1) {
    GroupPlacement g{t, 1, t};
    LinkModel link = groupLink(hw, g);
    double bytes = eb * double(rows) * double(h);
    double ar = p.sp
                    ? collectiveSeconds(OpKind::AllGather, bytes, t, link, hw,
                                        CollectiveAlgorithm::Auto) +
                          collectiveSeconds(OpKind::ReduceScatter, bytes, t,
                                            link, hw, CollectiveAlgorithm::Auto)
                    : collectiveSeconds(OpKind::AllReduce, bytes, t, link, hw,
                                        CollectiveAlgorithm::Auto);
    b.commFwd = 2 * ar;
    b.commBwd = 2 * ar;
  }
  return b;
}

/// Parameters of one block on one device.
double blockParams(const ModelConfig &c, int64_t t) {
  int64_t h = c.hidden, hd = c.headDim ? c.headDim : h / c.heads;
  int64_t kv = c.kvHeads ? c.kvHeads : c.heads;
  int64_t f = c.ffn ? c.ffn : 4 * h;
  double mats = (c.isGPT() || c.isFalcon()) ? 2 : 3;
  return (double(h) * double((c.heads + 2 * kv) * hd) +
          double(c.heads * hd) * double(h) + mats * double(h) * double(f)) /
             double(t) +
         4.0 * double(h);
}

double memoryOf(const ModelConfig &c, const PlanCandidate &p, double params,
                double blocks, int64_t rows, double v, double eb);

/// The closed form of a candidate recomputing none or every block.
void boundFixed(const ModelConfig &c, const pb::Hardware &hw,
                Precision precision, PlanCandidate &p) {
  double peak = *peakFlops(hw, precision);
  OpTimeModel ops(hw, precision, peak);
  double eb = precision == Precision::BF16 ? 2 : 4;
  BlockTime b = blockTime(c, ops, hw, p, eb);
  double blocks = double(c.layers / p.pp);
  double fwd = b.fwd + b.commFwd, bwd = b.bwd + b.commBwd;
  if (p.recompute == RecomputeMode::Full)
    bwd += fwd;
  else if (p.recompute == RecomputeMode::Selective)
    bwd += b.attnFwd;
  int64_t rows = p.microBatch * c.seq;
  // The LM head and its loss on the last stage.
  double head =
      3 * ops.gemmSeconds(1, rows, c.paddedVocab / p.tp, c.hidden, 0) +
      ops.memorySeconds(3 * 4 * double(rows) * double(c.paddedVocab / p.tp));
  double stage = blocks * (fwd + bwd) + head;
  double v = double(p.schedule.virtualStages);
  double step = (double(p.microbatches) + double(p.pp - 1) / v) * stage;
  Mesh mesh;
  mesh.axes = {{"pp", p.pp}, {"dp", p.dp}, {"tp", p.tp}};
  if (p.pp > 1) {
    LinkModel link = pairLink(hw, 0, p.dp * p.tp);
    double msg = eb * double(rows) * double(c.hidden) / (p.sp ? p.tp : 1);
    step += 2 * double(p.microbatches) * messageSeconds(msg, link);
  }
  double embed = double(c.paddedVocab) * double(c.hidden) / double(p.tp);
  double params = blocks * blockParams(c, p.tp) + embed;
  if (p.dp > 1) {
    GroupPlacement g = placeGroup(mesh, {"dp"}, 0, hw.devices_per_node());
    step += collectiveSeconds(OpKind::AllReduce, 4 * params, p.dp,
                              groupLink(hw, g), hw, CollectiveAlgorithm::Auto);
  }
  // AdamW reads weight, gradient and moments and writes weight and moments.
  step += ops.memorySeconds(28 * params / (p.zero1 ? p.dp : 1));
  p.boundTime = step;
  p.boundMemory = memoryOf(c, p, params, blocks, rows, v, eb);
}
} // namespace

void boundCandidate(const ModelConfig &c, const pb::Hardware &hw,
                    Precision precision, PlanCandidate &p) {
  if (p.recompute != RecomputeMode::Auto)
    return boundFixed(c, hw, precision, p);
  // Auto recomputes the fewest blocks that fit the device: between none
  // and full, by the share of blocks it takes.
  PlanCandidate none = p, full = p;
  none.recompute = RecomputeMode::None;
  full.recompute = RecomputeMode::Full;
  boundFixed(c, hw, precision, none);
  boundFixed(c, hw, precision, full);
  double cap = double(hw.accelerator().memory_bytes());
  double share =
      none.boundMemory <= cap ? 0
      : full.boundMemory >= cap
          ? 1
          : (none.boundMemory - cap) / (none.boundMemory - full.boundMemory);
  p.boundTime = none.boundTime + share * (full.boundTime - none.boundTime);
  p.boundMemory =
      none.boundMemory + share * (full.boundMemory - none.boundMemory);
}

namespace {
// Activations are the plan's precision, `eb` bytes an element: Korthikanti
// et al.'s per-block counts (34 sbh/t with sp, 10 + 24/t without) are bytes
// of a 16-bit plan, eb/2 times them in general; a fully recomputed block
// keeps its input. The state (fp32 weights, main_grad and moments) and the
// fp32 logits of the loss do not depend on it.
double memoryOf(const ModelConfig &c, const PlanCandidate &p, double params,
                double blocks, int64_t rows, double v, double eb) {
  double state = params * (p.zero1 ? 8 + 8.0 / double(p.dp) : 16);
  double sbh = double(rows) * double(c.hidden);
  double t = double(p.tp);
  double perLayer = eb / 2 * sbh * (p.sp ? 34 / t : 10 + 24 / t);
  double perBlock = p.recompute == RecomputeMode::Full ? eb * sbh : perLayer;
  double inFlight = double(std::min(p.pp, p.microbatches)) *
                    (1 + double(p.pp - 1) / (double(p.pp) * v));
  double logits = 3 * 4 * double(rows) * double(c.paddedVocab) / t;
  double mem = state + perBlock * blocks * inFlight + logits;
  if (p.recompute == RecomputeMode::Full) // one block recomputed at a time
    mem += perLayer;
  return mem;
}
} // namespace

std::vector<PlanCandidate> enumerateCandidates(const ModelConfig &c,
                                               const pb::Hardware &hw,
                                               const PlanSearchOptions &o,
                                               DropCounts &dropped) {
  std::vector<PlanCandidate> out;
  int64_t kv = c.kvHeads ? c.kvHeads : c.heads;
  int64_t f = c.ffn ? c.ffn : 4 * c.hidden;
  double capacity = double(hw.accelerator().memory_bytes());
  for (int64_t tp = 1; tp <= std::min(hw.devices_per_node(), o.devices);
       tp *= 2) {
    for (int64_t pp = 1; pp <= c.layers; ++pp) {
      if (c.layers % pp || o.devices % (tp * pp))
        continue;
      PlanCandidate base;
      base.tp = tp, base.pp = pp, base.dp = o.devices / (tp * pp);
      if (c.heads % tp || kv % tp || f % tp || c.paddedVocab % tp) {
        dropped.add("indivisible", base.str() + ": tp " + std::to_string(tp) +
                                       " does not divide the heads, ffn "
                                       "or vocabulary");
        continue;
      }
      for (int64_t mb : {1, 2, 4, 8}) {
        base.microBatch = mb;
        if (o.globalBatch % (base.dp * mb)) {
          dropped.add("indivisible",
                      base.str() +
                          ": dp x micro batch does not divide the "
                          "global batch " +
                          std::to_string(o.globalBatch));
          continue;
        }
        base.microbatches = o.globalBatch / (base.dp * mb);
        std::vector<ScheduleSpec> schedules = {ScheduleSpec()};
        for (int64_t v = 2; pp > 1 && v <= o.maxVirtual; ++v) {
          ScheduleSpec s{ScheduleKind::Interleaved, v};
          PlanCandidate x = base;
          x.schedule = s;
          if ((c.layers / pp) % v || base.microbatches % pp)
            dropped.add("indivisible",
                        x.str() + ": interleaving needs V | blocks per stage "
                                  "and pp | microbatches");
          else
            schedules.push_back(s);
        }
        for (const ScheduleSpec &s : schedules)
          for (bool sp : {false, true})
            // Selective is none in strata (Recompute.h: the fused
            // attention already recomputes its core), so it is not tried.
            for (RecomputeMode r : {RecomputeMode::None, RecomputeMode::Full,
                                    RecomputeMode::Auto})
              for (bool zero1 : {false, true}) {
                if ((sp && tp == 1) || (zero1 && base.dp == 1))
                  continue;
                PlanCandidate p = base;
                p.schedule = s, p.sp = sp, p.recompute = r, p.zero1 = zero1;
                boundCandidate(c, hw, o.precision, p);
                if (r == RecomputeMode::Auto) {
                  // Auto that recomputes no block or every block is none
                  // or full, already a candidate.
                  PlanCandidate none = p, full = p;
                  none.recompute = RecomputeMode::None;
                  full.recompute = RecomputeMode::Full;
                  boundCandidate(c, hw, o.precision, none);
                  boundCandidate(c, hw, o.precision, full);
                  if (p.boundTime <= none.boundTime ||
                      p.boundTime >= full.boundTime)
                    continue;
                }
                // The closed form is rough: only clear misses are dropped
                // here; the finalists meet the memory planner.
                if (p.boundMemory > 1.25 * capacity) {
                  dropped.add("out of memory (closed form)", p.str());
                  continue;
                }
                out.push_back(p);
              }
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PlanCandidate &a, const PlanCandidate &b) {
                     return a.boundTime < b.boundTime;
                   });
  return out;
}

} // namespace strata
