//===- GradBuckets.cpp - The dp gradient buckets a rank's runtime reduces -===//
#include "perf/GradBuckets.h"

#include "ir/Op.h"
#include "passes/pipeline/GradReduction.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <tuple>

namespace strata {

namespace {
/// A gradient's place in the step: the rank's stream position of its
/// chunk's last backward, and the node there (max: after the step).
struct Ready {
  int64_t pos = std::numeric_limits<int64_t>::max();
  int64_t chunk = -1;
  size_t node = 0;
  bool operator<(const Ready &o) const {
    return std::tie(pos, node) < std::tie(o.pos, o.node);
  }
};

struct Member {
  std::string name;
  double bytes = 0;
  bool scatter = false, reduced = false;
  Ready ready;
};

} // namespace

std::vector<GradBucket> gradientBuckets(const PipelinePlan &plan, int64_t rank,
                                        int64_t dp, int64_t bucketBytes) {
  std::vector<GradBucket> out;
  if (dp <= 1 || rank < 0 || size_t(rank) >= plan.optimizers.size() ||
      size_t(rank) >= plan.optimizerBindings.size())
    return out;
  const Graph &opt = plan.optimizers[rank];
  const ProgramBindings &ob = plan.optimizerBindings[rank];
  std::vector<Member> members;
  for (size_t i = 0; i < ob.inputs.size() && i < opt.inputs().size(); ++i) {
    if (ob.inputs[i].role != Role::Gradient)
      continue;
    const Value &in = opt.value(opt.inputs()[i]);
    std::string how = in.attrs.getString("dp_reduce");
    Member m;
    m.name = ob.inputs[i].name;
    m.reduced = !how.empty();
    m.scatter = how == "reduce_scatter";
    // A reduce-scattered input is the gradient's dp shard.
    m.bytes = double(in.type.bytes()) * (m.scatter ? double(dp) : 1.0);
    members.push_back(std::move(m));
  }
  llvm::sort(members,
             [](const Member &a, const Member &b) { return a.name < b.name; });
  llvm::StringMap<size_t> index;
  for (size_t i = 0; i < members.size(); ++i)
    index[members[i].name] = i;

  // Each chunk's last backward in the rank's stream.
  const std::vector<Instr> &stream = plan.schedule.ranks[size_t(rank)];
  std::vector<int64_t> lastPos;
  for (size_t i = 0; i < stream.size(); ++i)
    if (stream[i].kind == Instr::Backward) {
      if (size_t(stream[i].chunk) >= lastPos.size())
        lastPos.resize(size_t(stream[i].chunk) + 1, -1);
      lastPos[size_t(stream[i].chunk)] = int64_t(i);
    }
  bool overlap = true;
  for (const PipelineStage &st : plan.stages) {
    if (st.rank != rank)
      continue;
    overlap &= !usesDpAxis(st.forward) && !usesDpAxis(st.backward);
    if (size_t(st.chunk) >= lastPos.size() || lastPos[size_t(st.chunk)] < 0)
      continue;
    const ProgramBindings &bb = st.backwardBindings;
    for (size_t o = 0; o < bb.outputs.size(); ++o) {
      auto it = index.find(bb.outputs[o].name);
      if (bb.outputs[o].role != Role::Gradient || it == index.end())
        continue;
      Ready at{lastPos[size_t(st.chunk)], st.chunk,
               gradientFinalNode(st.backward, st.backward.outputs()[o])};
      Member &m = members[it->second];
      if (m.ready.chunk < 0 || m.ready < at)
        m.ready = at;
    }
  }

  std::vector<size_t> order(members.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return members[a].ready < members[b].ready;
  });
  bool anyReduced = false;
  double open = 0;
  std::vector<Ready> readies;
  for (size_t i : order) {
    const Member &m = members[i];
    if (out.empty() || open >= double(bucketBytes)) {
      out.emplace_back();
      readies.emplace_back();
      open = 0;
    }
    GradBucket &b = out.back();
    double padded = double(llvm::alignTo(uint64_t(m.bytes), 256));
    open += m.bytes;
    b.bytes += padded;
    if (m.scatter)
      b.reduceScatterBytes.push_back(m.bytes);
    else if (m.reduced) // one call over the all-reduced range
      b.allReduceBytes += padded;
    anyReduced |= m.reduced;
    if (b.bytes == padded || readies.back() < m.ready)
      readies.back() = m.ready;
  }
  if (!anyReduced)
    return {};
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].chunk = overlap ? readies[i].chunk : -1;
    out[i].node = readies[i].node;
  }
  return out;
}

std::vector<GatherBucket> parameterGatherBuckets(const PipelinePlan &plan,
                                                 int64_t rank,
                                                 int64_t bucketBytes) {
  std::vector<GatherBucket> out;
  if (rank < 0 || size_t(rank) >= plan.optimizers.size() ||
      size_t(rank) >= plan.optimizerBindings.size())
    return out;
  const Graph &opt = plan.optimizers[rank];
  const ProgramBindings &ob = plan.optimizerBindings[rank];
  struct Gathered {
    std::string name;
    double bytes = 0;
    Ready read;
  };
  std::vector<Gathered> members;
  for (size_t o = 0; o < ob.outputs.size() && o < opt.outputs().size(); ++o)
    if (ob.outputs[o].role == Role::NewParameter && gatheredDim(opt, o) >= 0)
      members.push_back({ob.outputs[o].name,
                         double(opt.type(opt.outputs()[o]).bytes()) *
                             double(opt.mesh ? opt.mesh->axisSize("dp") : 1),
                         {}});
  if (members.empty())
    return out;
  llvm::StringMap<size_t> index;
  for (size_t i = 0; i < members.size(); ++i)
    index[members[i].name] = i;
  // Each chunk's first forward in the rank's stream.
  const std::vector<Instr> &stream = plan.schedule.ranks[size_t(rank)];
  for (const PipelineStage &st : plan.stages) {
    if (st.rank != rank)
      continue;
    int64_t first = -1;
    for (size_t i = 0; i < stream.size() && first < 0; ++i)
      if (stream[i].kind == Instr::Forward && stream[i].chunk == st.chunk)
        first = int64_t(i);
    if (first < 0)
      continue;
    const Graph &f = st.forward;
    const ProgramBindings &fb = st.forwardBindings;
    for (size_t i = 0; i < fb.inputs.size() && i < f.inputs().size(); ++i) {
      auto it = index.find(fb.inputs[i].name);
      if (fb.inputs[i].role != Role::Parameter || it == index.end())
        continue;
      for (size_t n = 0; n < f.nodes().size(); ++n)
        if (llvm::is_contained(f.node(n).operands, f.inputs()[i])) {
          Ready at{first, st.chunk, n};
          if (at < members[it->second].read)
            members[it->second].read = at;
          break;
        }
    }
  }
  // By first read; ties in the optimizer's output order (the runtime's).
  llvm::stable_sort(members, [](const Gathered &a, const Gathered &b) {
    return a.read < b.read;
  });
  double open = 0;
  for (const Gathered &m : members) {
    if (out.empty() || open >= double(bucketBytes)) {
      out.push_back({m.read.chunk, m.read.node, {}});
      open = 0;
    }
    out.back().gatherBytes.push_back(m.bytes);
    open += m.bytes;
  }
  return out;
}

} // namespace strata
