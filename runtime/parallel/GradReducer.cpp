//===- GradReducer.cpp - Data-parallel gradient reduction, in place -------===//
#include "runtime/parallel/GradReducer.h"

#include "ir/Op.h"
#include "passes/pipeline/GradReduction.h"
#include "runtime/parallel/GradReduceDtype.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Offsets in a bucket are multiples of this many bytes (vector loads).
constexpr int64_t kAlign = 256;

/// Where in the step a gradient is final: after node `node` of the last
/// microbatch's backward of `chunk`, the stream's instruction `pos`.
struct Ready {
  int64_t pos = std::numeric_limits<int64_t>::max(); // max: after the step
  int64_t chunk = -1;
  size_t node = 0;
  bool operator<(const Ready &o) const {
    return std::tie(pos, node) < std::tie(o.pos, o.node);
  }
};

enum class Kind { AllReduce, ReduceScatter, None };

struct Member {
  std::string name;
  TensorType type;
  Kind kind = Kind::None;
  int64_t dim = 0;    // reduce_scatter's
  int64_t offset = 0; // bytes into the bucket
  Ready ready;
};

Attrs reductionAttrs(llvm::StringRef src, size_t bucket) {
  return {{"axes", StrList{"dp"}},
          {"reason", "data-parallel gradient reduction in place, bucket " +
                         std::to_string(bucket)},
          {"src", "optimizer." + src.str()}};
}
} // namespace

struct GradReducer::Bucket {
  DeviceBuffer buffer;
  int64_t bytes = 0;
  int64_t scaled = 0; // f32 elements x *= 1/M covers (the whole bucket)
  Ready ready;
  Graph graph;          // its collectives
  DeviceBuffer staging; // 16-bit reductions' copies (GradReduceDtype.h)
  std::vector<ReductionLaunch> launches;
  std::unique_ptr<Event> event;
};

GradReducer::GradReducer(Device &device) : dev_(device) {}
GradReducer::~GradReducer() = default;

llvm::Expected<std::unique_ptr<GradReducer>>
GradReducer::create(Device &device, llvm::StringMap<DeviceBuffer> &grads,
                    const Graph &opt, const ProgramBindings &optBindings,
                    llvm::ArrayRef<ChunkPrograms> chunks,
                    llvm::ArrayRef<Instr> stream, int64_t dpIndex,
                    int64_t dpSize, const GradReduceOptions &options) {
  std::unique_ptr<GradReducer> r(new GradReducer(device));
  // Each chunk's last backward in the step.
  std::vector<int64_t> lastPos(chunks.size(), -1);
  r->lastMicrobatch_.assign(chunks.size(), -1);
  for (size_t i = 0; i < stream.size(); ++i)
    if (stream[i].kind == Instr::Backward &&
        size_t(stream[i].chunk) < chunks.size()) {
      lastPos[stream[i].chunk] = int64_t(i);
      r->lastMicrobatch_[stream[i].chunk] = stream[i].microbatch;
    }
  // By name, so ties keep one order on every rank.
  std::vector<Member> members;
  for (const auto &e : grads) {
    const TensorType &t = e.getValue().type();
    if (t.dtype != DType::F32)
      return err("the gradient of %" + e.getKey() + " is " + t.str() +
                 ": gradient buffers are f32");
    members.emplace_back();
    members.back().name = e.getKey().str();
    members.back().type = t;
  }
  llvm::sort(members,
             [](const Member &a, const Member &b) { return a.name < b.name; });
  llvm::StringMap<size_t> index;
  for (size_t i = 0; i < members.size(); ++i)
    index[members[i].name] = i;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const Graph &b = *chunks[c].backward;
    const ProgramBindings &bb = *chunks[c].backwardBindings;
    for (size_t o = 0; o < bb.outputs.size(); ++o) {
      auto it = index.find(bb.outputs[o].name);
      if (bb.outputs[o].role != Role::Gradient || it == index.end() ||
          lastPos[c] < 0)
        continue;
      Ready at{lastPos[c], int64_t(c), gradientFinalNode(b, b.outputs()[o])};
      Member &m = members[it->second];
      if (m.ready.chunk < 0 || m.ready < at)
        m.ready = at;
    }
  }
  // How the optimizer program takes each gradient.
  for (size_t i = 0; i < optBindings.inputs.size(); ++i) {
    const Binding &x = optBindings.inputs[i];
    auto it = index.find(x.name);
    if (x.role != Role::Gradient || it == index.end())
      continue;
    const Value &in = opt.value(opt.inputs()[i]);
    Member &m = members[it->second];
    std::string how = in.attrs.getString("dp_reduce");
    if (how.empty() || dpSize == 1)
      continue;
    if (how == "all_reduce") {
      m.kind = Kind::AllReduce;
      continue;
    }
    int64_t d = in.attrs.getInt("dp_dim", -1);
    TensorType shard = m.type;
    if (how != "reduce_scatter" || d < 0 || d >= shard.rank() ||
        shard.shape[d] % dpSize)
      return err("@" + opt.name + ": input %" + in.name +
                 " asks for an unknown gradient reduction (dp_reduce=\"" + how +
                 "\", dp_dim=" + llvm::Twine(d) + ")");
    shard.shape[d] /= dpSize;
    if (shard != in.type)
      return err("@" + opt.name + ": input %" + in.name + " is " +
                 in.type.str() + ", not the dp shard " + shard.str() +
                 " of its gradient " + m.type.str());
    m.kind = Kind::ReduceScatter;
    m.dim = d;
  }
  // Buckets in the order the gradients become final.
  std::vector<size_t> order(members.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return members[a].ready < members[b].ready;
  });
  std::vector<std::vector<size_t>> groups;
  int64_t open = 0;
  for (size_t i : order) {
    if (groups.empty() || open >= options.bucketBytes) {
      groups.emplace_back();
      open = 0;
    }
    groups.back().push_back(i);
    open += members[i].type.bytes();
  }
  bool anyDp = false;
  for (auto &group : groups) {
    auto b = std::make_unique<Bucket>();
    // All-reduced first (one call over their range), then reduce-scattered.
    llvm::stable_sort(group, [&](size_t x, size_t y) {
      return int(members[x].kind) < int(members[y].kind);
    });
    int64_t allReduced = 0;
    for (size_t i : group) {
      Member &m = members[i];
      m.offset = b->bytes;
      b->bytes += llvm::alignTo(m.type.bytes(), kAlign);
      if (m.kind == Kind::AllReduce)
        allReduced = b->bytes;
      if (i == group.front() || b->ready < m.ready)
        b->ready = m.ready;
    }
    b->buffer = DeviceBuffer(device, TensorType{DType::F32, {b->bytes / 4}});
    b->scaled = b->bytes / 4;
    device.fill(b->buffer.data(), b->bytes, 0);
    char *base = static_cast<char *>(b->buffer.data());
    int64_t narrow = 4 / dtypeBytes(options.dtype); // fp32 bytes per staged
    if (options.dtype != DType::F32)
      b->staging = DeviceBuffer(device, TensorType{options.dtype, {b->scaled}});
    char *staged = static_cast<char *>(b->staging.data());
    b->graph.name = "dp_reduce_bucket" + std::to_string(r->buckets_.size());
    b->graph.mesh = opt.mesh;
    if (allReduced) {
      TensorType t{DType::F32, {allReduced / 4}};
      Attrs a = reductionAttrs(members[group.front()].name, r->buckets_.size());
      a.set("reduce", std::string("sum"));
      llvm::append_range(b->launches,
                         addDpReduction(b->graph, OpKind::AllReduce, a, t, t,
                                        options.dtype, "grads", "optimizer",
                                        "grads.reduced", base, base, staged));
    }
    for (size_t i : group) {
      Member &m = members[i];
      char *at = base + m.offset;
      r->optInputs_[m.name] = at;
      if (m.kind != Kind::ReduceScatter)
        continue;
      TensorType shard = m.type;
      shard.shape[m.dim] /= dpSize;
      Attrs a = reductionAttrs(m.name, r->buckets_.size());
      a.set("dim", m.dim);
      char *out = at + dpIndex * shard.bytes();
      llvm::append_range(
          b->launches,
          addDpReduction(b->graph, OpKind::ReduceScatter, a, m.type, shard,
                         options.dtype, "grad." + m.name, "optimizer." + m.name,
                         "grad." + m.name + ".shard", at, out,
                         staged ? staged + m.offset / narrow : nullptr));
      r->optInputs_[m.name] = out;
    }
    anyDp |= !b->launches.empty();
    for (size_t i : group)
      grads[members[i].name] =
          DeviceBuffer::view(device, members[i].type, base + members[i].offset);
    b->event = device.createEvent();
    r->buckets_.push_back(std::move(b));
  }
  r->overlap_ = options.overlap && anyDp;
  if (r->overlap_)
    for (const ChunkPrograms &c : chunks)
      for (const Graph *g : {c.forward, c.backward})
        if (g && usesDpAxis(*g))
          r->overlap_ = false;
  if (anyDp)
    r->stream_ = device.createStream();
  r->done_ = device.createEvent();
  return r;
}

bool GradReducer::reducesOverDp() const {
  for (const auto &b : buckets_)
    if (!b->launches.empty())
      return true;
  return false;
}

void GradReducer::beginStep(int64_t microbatches, const LaunchContext &ctx) {
  microbatches_ = microbatches;
  ctx_ = ctx;
  next_ = 0;
  armed_ = overlap_;
}

void GradReducer::afterNode(int64_t chunk, int64_t microbatch, size_t node) {
  if (!armed_ || chunk < 0 || size_t(chunk) >= lastMicrobatch_.size() ||
      lastMicrobatch_[chunk] != microbatch)
    return;
  while (next_ < buckets_.size() && buckets_[next_]->ready.chunk == chunk &&
         buckets_[next_]->ready.node == node)
    issue(*buckets_[next_++]);
}

void GradReducer::issue(Bucket &b) {
  // The reduction stream starts where the compute stream is now.
  dev_.record(*b.event, kDefaultStream);
  dev_.wait(stream_, *b.event);
  if (microbatches_ > 1)
    dev_.scale(b.buffer.data(), b.scaled, 1.0f / float(microbatches_), stream_);
  LaunchContext c = ctx_;
  c.stream = stream_;
  for (const ReductionLaunch &l : b.launches)
    dev_.launch(b.graph, b.graph.node(l.node), {l.in}, {l.out}, c);
}

void GradReducer::finish() {
  while (next_ < buckets_.size())
    issue(*buckets_[next_++]);
  armed_ = false;
  dev_.record(*done_, stream_);
  dev_.wait(kDefaultStream, *done_);
}

const void *GradReducer::optimizerInput(llvm::StringRef name) const {
  auto it = optInputs_.find(name);
  return it == optInputs_.end() ? nullptr : it->second;
}

} // namespace strata
