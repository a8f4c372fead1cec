//===- Estimate.cpp - Step time, throughput and memory of a compiled plan -===//
#include "perf/Estimate.h"

#include "ir/Op.h"
#include "perf/GradBuckets.h"
#include "perf/OpTime.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>

namespace strata {

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// A node the backward recomputes (Recompute.h's markers), fused or not.
bool isRecomputation(const Node &n) {
  if (n.attrs.getBool("recompute") && n.attrs.getBool("bwd"))
    return true;
  if (n.op == OpKind::Fused && n.body)
    return llvm::any_of(n.body->nodes(), [](const Node &b) {
      return b.attrs.getBool("recompute");
    });
  return false;
}

/// Turns programs into SimPrograms for one pipeline rank.
class ProgramLowering {
public:
  ProgramLowering(const pb::Hardware &hw, const OpTimeModel &ops,
                  const Mesh &mesh, int64_t pipeRank,
                  CollectiveAlgorithm algorithm)
      : hw_(hw), ops_(ops), mesh_(mesh), algorithm_(algorithm) {
    int64_t perStage = 1;
    for (const MeshAxis &a : mesh.axes)
      if (a.name != "pp")
        perStage *= a.size;
    perStage_ = perStage;
    device_ = pipeRank * perStage;
  }

  /// `optimizer`: the rank's optimizer program (its ops are the optimizer
  /// phase; its tensors keep their dtype under bf16: an fp32 optimizer).
  /// `buckets`: the dp gradient buckets issued in this program: after
  /// their node in a backward program, first in the optimizer's (which
  /// then waits for every bucket). `gathers`: the rank's parameter gather
  /// buckets; a forward program of chunk `chunk` issues them all first if
  /// `issueGathers`, and waits for each before the node that reads it
  /// first.
  SimProgram lower(const Graph &g, bool optimizer, bool half,
                   llvm::ArrayRef<GradBucket> buckets = {},
                   int64_t microbatches = 1,
                   llvm::ArrayRef<GatherBucket> gathers = {},
                   int64_t chunk = -1, bool issueGathers = false) {
    SimProgram out;
    half = half && !optimizer;
    if (issueGathers)
      for (const GatherBucket &b : gathers)
        out.ops.push_back(gather(b, out));
    if (optimizer) {
      for (const GradBucket &b : buckets)
        if (b.chunk < 0)
          out.ops.push_back(bucket(b, microbatches, out));
      if (!buckets.empty())
        out.ops.push_back({SimOp::Join, Phase::CommDp});
    }
    auto issue = [&](size_t i) {
      if (optimizer)
        return;
      for (const GradBucket &b : buckets)
        if (b.node == i)
          out.ops.push_back(bucket(b, microbatches, out));
    };
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      for (size_t k = 0; k < gathers.size(); ++k)
        if (gathers[k].chunk == chunk && gathers[k].node == i) {
          SimOp wait{SimOp::Join, Phase::CommDp};
          wait.tag = int64_t(k);
          out.ops.push_back(wait);
        }
      lowerNode(g, g.nodes()[i], optimizer, half, out);
      issue(i);
    }
    issue(g.nodes().size()); // after the program
    return out;
  }

private:
  void lowerNode(const Graph &g, const Node &n, bool optimizer, bool half,
                 SimProgram &out) {
    if (n.op == OpKind::Send || n.op == OpKind::Recv) {
      SimOp op;
      op.kind = n.op == OpKind::Send ? SimOp::Send : SimOp::Recv;
      op.peer = n.attrs.getInt("peer");
      op.tag = n.attrs.getInt("tag");
      const TensorType &t =
          g.type(op.kind == SimOp::Send ? n.operands[0] : n.results[0]);
      op.bytes =
          half && t.dtype == DType::F32 ? 2 * t.numElements() : t.bytes();
      if (op.kind == SimOp::Send)
        op.seconds = messageSeconds(
            double(op.bytes), pairLink(hw_, device_, op.peer * perStage_));
      op.label =
          label(out, opName(n.op).str() + " peer " + std::to_string(op.peer));
      out.ops.push_back(op);
      return;
    }
    if (isCollective(n.op)) {
      out.ops.push_back(collective(g, n, half, out));
      return;
    }
    double s = ops_.nodeSeconds(g, n, half);
    if (s <= 0)
      return;
    Phase phase = optimizer            ? Phase::Optimizer
                  : isRecomputation(n) ? Phase::Recompute
                                       : Phase::Compute;
    // Consecutive compute of one phase is one span.
    if (!out.ops.empty() && out.ops.back().kind == SimOp::Work &&
        out.ops.back().phase == phase && out.ops.back().label < 0)
      out.ops.back().seconds += s;
    else
      out.ops.push_back({SimOp::Work, phase, s});
  }

  /// A bucket on the rank's reduction stream: x *= 1 / microbatches, then
  /// its all_reduce and reduce_scatters over dp.
  SimOp bucket(const GradBucket &b, int64_t microbatches, SimProgram &p) {
    GroupPlacement place =
        placeGroup(mesh_, {"dp"}, device_, hw_.devices_per_node());
    LinkModel link = groupLink(hw_, place);
    SimOp op{SimOp::Async, Phase::CommDp};
    if (microbatches > 1)
      op.seconds += ops_.memorySeconds(2 * b.bytes);
    if (b.allReduceBytes > 0)
      op.seconds += collectiveSeconds(OpKind::AllReduce, b.allReduceBytes,
                                      place.size, link, hw_, algorithm_);
    for (double bytes : b.reduceScatterBytes)
      op.seconds += collectiveSeconds(OpKind::ReduceScatter, bytes, place.size,
                                      link, hw_, algorithm_);
    op.bytes = int64_t(b.bytes);
    op.label = label(p, "dp gradient bucket");
    return op;
  }

  /// A bucket of parameter all_gathers over dp on the rank's second
  /// stream (the gathered fp32 parameters).
  SimOp gather(const GatherBucket &b, SimProgram &p) {
    GroupPlacement place =
        placeGroup(mesh_, {"dp"}, device_, hw_.devices_per_node());
    LinkModel link = groupLink(hw_, place);
    SimOp op{SimOp::Async, Phase::CommDp};
    double bytes = 0;
    for (double full : b.gatherBytes) {
      op.seconds += collectiveSeconds(OpKind::AllGather, full, place.size, link,
                                      hw_, algorithm_);
      bytes += full;
    }
    op.bytes = int64_t(bytes);
    op.label = label(p, "dp parameter gather bucket");
    return op;
  }

  int32_t label(SimProgram &p, std::string text) {
    p.labels.push_back(std::move(text));
    return int32_t(p.labels.size() - 1);
  }

  SimOp collective(const Graph &g, const Node &n, bool half, SimProgram &p) {
    std::vector<std::string> axes;
    for (const std::string &a : n.attrs.getStrings("axes"))
      axes.push_back(a);
    GroupPlacement place =
        placeGroup(mesh_, axes, device_, hw_.devices_per_node());
    double bytes = 0;
    for (ValueId v : n.operands)
      bytes = std::max(bytes, double(g.type(v).bytes()));
    for (ValueId v : n.results)
      bytes = std::max(bytes, double(g.type(v).bytes()));
    const TensorType &t = g.type(n.results[0]);
    if (half && t.dtype == DType::F32)
      bytes /= 2;
    SimOp op;
    bool pp = llvm::is_contained(axes, "pp");
    op.kind = pp ? SimOp::Barrier : SimOp::Work;
    op.phase = pp                               ? Phase::CommPp
               : llvm::is_contained(axes, "dp") ? Phase::CommDp
                                                : Phase::CommTp;
    op.seconds = collectiveSeconds(n.op, bytes, place.size,
                                   groupLink(hw_, place), hw_, algorithm_);
    op.bytes = int64_t(bytes);
    std::string name = opName(n.op).str();
    for (const std::string &a : axes)
      name += " " + a;
    op.label = label(p, name);
    return op;
  }

  const pb::Hardware &hw_;
  const OpTimeModel &ops_;
  const Mesh &mesh_;
  CollectiveAlgorithm algorithm_;
  int64_t perStage_ = 1, device_ = 0;
};

} // namespace

Mesh planMesh(const CompiledPipeline &compiled) {
  const PipelinePlan &p = compiled.pipeline;
  if (!p.stages.empty() && p.stages.front().forward.mesh)
    return *p.stages.front().forward.mesh;
  return Mesh();
}

llvm::Expected<SimPlan> buildSimPlan(const CompiledPipeline &compiled,
                                     const pb::Hardware &hw,
                                     const EstimateOptions &options) {
  auto peak = peakFlops(hw, options.precision);
  if (!peak)
    return peak.takeError();
  OpTimeModel ops(hw, options.precision, *peak);
  const PipelinePlan &p = compiled.pipeline;
  Mesh mesh = planMesh(compiled);
  bool half = options.precision == Precision::BF16;
  SimPlan sim;
  sim.schedule = p.schedule;
  // The dp gradient reductions as the runtime makes them: in buckets on
  // each rank's reduction stream, overlapping the backward (GradBuckets.h).
  int64_t dp = 1;
  for (const MeshAxis &a : mesh.axes)
    if (a.name == "dp")
      dp = a.size;
  std::vector<std::vector<GradBucket>> buckets(p.optimizers.size());
  for (size_t r = 0; r < p.optimizers.size(); ++r)
    buckets[r] =
        gradientBuckets(p, int64_t(r), dp, options.gradientBucketBytes);
  // ZeRO-1's parameter gathers as the runtime overlaps them with the next
  // step's forward (GradBuckets.h), issued by the rank's first forward.
  std::vector<std::vector<GatherBucket>> gathers(p.optimizers.size());
  for (size_t r = 0; r < p.optimizers.size(); ++r)
    gathers[r] =
        parameterGatherBuckets(p, int64_t(r), options.gradientBucketBytes);
  auto firstChunk = [&](int64_t rank) -> int64_t {
    if (size_t(rank) < p.schedule.ranks.size())
      for (const Instr &in : p.schedule.ranks[size_t(rank)])
        if (in.kind == Instr::Forward)
          return in.chunk;
    return -1;
  };
  int64_t m = p.schedule.microbatches;
  for (const PipelineStage &st : p.stages) {
    ProgramLowering lower(hw, ops, mesh, st.rank, options.algorithm);
    std::vector<GradBucket> mine;
    llvm::ArrayRef<GatherBucket> rankGathers;
    if (size_t(st.rank) < buckets.size()) {
      for (const GradBucket &b : buckets[size_t(st.rank)])
        if (b.chunk == st.chunk)
          mine.push_back(b);
      rankGathers = gathers[size_t(st.rank)];
    }
    sim.forward.push_back(lower.lower(st.forward, false, half, {}, 1,
                                      rankGathers, st.chunk,
                                      st.chunk == firstChunk(st.rank)));
    sim.backward.push_back(lower.lower(st.backward, false, half, mine, m));
  }
  for (size_t r = 0; r < p.optimizers.size(); ++r) {
    ProgramLowering lower(hw, ops, mesh, int64_t(r), options.algorithm);
    sim.optimizer.push_back(
        lower.lower(p.optimizers[r], true, half, buckets[r], m));
  }
  if (sim.forward.size() != size_t(p.schedule.numStages()) ||
      sim.optimizer.size() != size_t(p.schedule.pp))
    return makeError("the plan has " + llvm::Twine(sim.forward.size()) +
                     " stages and " + llvm::Twine(sim.optimizer.size()) +
                     " optimizer programs for a schedule of " +
                     llvm::Twine(p.schedule.numStages()) + " stages over " +
                     llvm::Twine(p.schedule.pp) + " ranks");
  return sim;
}

llvm::Expected<PlanEstimate> estimatePlan(const CompiledPipeline &compiled,
                                          const pb::Hardware &hw,
                                          const StepWork &work,
                                          std::vector<int64_t> peakMemory,
                                          const EstimateOptions &options) {
  PlanEstimate e;
  e.devices = std::max<int64_t>(planMesh(compiled).numDevices(), 1);
  int64_t have = hw.nodes() * hw.devices_per_node();
  if (hw.nodes() > 0 && e.devices > have)
    return makeError("the layout needs " + llvm::Twine(e.devices) +
                     " devices, the cluster '" + hw.name() + "' has " +
                     llvm::Twine(have) + " (" + llvm::Twine(hw.nodes()) +
                     " nodes of " + llvm::Twine(hw.devices_per_node()) +
                     "; use a smaller tp * dp * pp or more nodes)");
  auto peak = peakFlops(hw, options.precision);
  if (!peak)
    return peak.takeError();
  e.peakFlops = *peak;
  auto sim = buildSimPlan(compiled, hw, options);
  if (!sim)
    return sim.takeError();
  auto result = simulatePlan(*sim, options.recordEvents);
  if (!result)
    return result.takeError();
  e.sim = std::move(*result);
  e.stepTime = e.sim.stepTime;
  for (const RankTime &r : e.sim.ranks)
    for (size_t i = 0; i < kNumPhases; ++i)
      e.breakdown[i] += r.phase[i] / double(e.sim.ranks.size());
  if (e.stepTime > 0) {
    e.tokensPerSecond = work.tokens / e.stepTime;
    double capacity = e.stepTime * double(e.devices) * e.peakFlops;
    e.mfu = work.modelFlops / capacity;
    e.hfu = work.hardwareFlops / capacity;
  }
  e.peakMemory = std::move(peakMemory);
  for (int64_t b : e.peakMemory)
    e.maxPeakMemory = std::max(e.maxPeakMemory, b);
  return e;
}

} // namespace strata
