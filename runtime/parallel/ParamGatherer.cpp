//===- ParamGatherer.cpp - ZeRO-1's parameter all-gathers, overlapped ------===//
#include "runtime/parallel/ParamGatherer.h"

#include "passes/pipeline/GradReduction.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Where the step first reads a parameter: before node `node` of the
/// forward of `chunk` at the stream's instruction `pos`.
struct Read {
  int64_t pos = std::numeric_limits<int64_t>::max(); // max: no forward
  int64_t chunk = -1;
  size_t node = 0;
  bool operator<(const Read &o) const {
    return std::tie(pos, node) < std::tie(o.pos, o.node);
  }
};

struct Member {
  std::string name;
  TensorType shard, full;
  int64_t dim = 0;
  Read read;
};
} // namespace

struct ParamGatherer::Bucket {
  Read read; // its first member's
  Graph graph;
  struct Launch {
    int32_t node;
    const void *in;
    void *out;
  };
  std::vector<Launch> launches;
  std::unique_ptr<Event> done;
};

ParamGatherer::ParamGatherer(Device &device, StreamId stream)
    : dev_(device), stream_(stream) {}
ParamGatherer::~ParamGatherer() = default;

llvm::Expected<std::unique_ptr<ParamGatherer>> ParamGatherer::create(
    Device &device, StreamId dpStream, llvm::StringMap<DeviceBuffer> &params,
    const Graph &opt, const ProgramBindings &optBindings,
    llvm::ArrayRef<ChunkPrograms> chunks, llvm::ArrayRef<Instr> stream,
    const GradReduceOptions &options) {
  std::unique_ptr<ParamGatherer> g(new ParamGatherer(device, dpStream));
  g->overlap_ = options.overlapParamGather;
  g->start_ = device.createEvent();
  std::vector<Member> members;
  for (size_t o = 0; o < optBindings.outputs.size(); ++o) {
    int64_t d = gatheredDim(opt, o);
    const Binding &x = optBindings.outputs[o];
    if (d < 0 || x.role != Role::NewParameter)
      continue;
    auto p = params.find(x.name);
    const TensorType &shard = opt.type(opt.outputs()[o]);
    if (p == params.end())
      return err("@" + opt.name + " updates a shard of %" + x.name +
                 ", which this rank does not hold");
    TensorType want = shard;
    want.shape[d] *= opt.mesh->axisSize("dp");
    if (want != p->second.type())
      return err("@" + opt.name + ": output %new." + x.name + " is " +
                 shard.str() + ", not a dp shard along dim " + llvm::Twine(d) +
                 " of the parameter's " + p->second.type().str());
    members.push_back({x.name, shard, want, d, {}});
  }
  if (members.empty())
    return g;
  // Each chunk's first forward in the step, and the first node of that
  // program reading each member.
  g->firstMicrobatch_.assign(chunks.size(), -1);
  std::vector<int64_t> firstPos(chunks.size(), -1);
  for (size_t i = 0; i < stream.size(); ++i)
    if (stream[i].kind == Instr::Forward &&
        size_t(stream[i].chunk) < chunks.size() &&
        firstPos[stream[i].chunk] < 0) {
      firstPos[stream[i].chunk] = int64_t(i);
      g->firstMicrobatch_[stream[i].chunk] = stream[i].microbatch;
    }
  llvm::StringMap<size_t> index;
  for (size_t i = 0; i < members.size(); ++i)
    index[members[i].name] = i;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const Graph &f = *chunks[c].forward;
    const ProgramBindings &fb = *chunks[c].forwardBindings;
    if (firstPos[c] < 0)
      continue;
    for (size_t i = 0; i < fb.inputs.size(); ++i) {
      auto it = index.find(fb.inputs[i].name);
      if (fb.inputs[i].role != Role::Parameter || it == index.end())
        continue;
      ValueId in = f.inputs()[i];
      for (size_t n = 0; n < f.nodes().size(); ++n)
        if (llvm::is_contained(f.node(n).operands, in)) {
          Read at{firstPos[c], int64_t(c), n};
          Member &m = members[it->second];
          if (at < m.read)
            m.read = at;
          break;
        }
    }
  }
  // Buckets in the order the forward reads them; ties by name (the order
  // of the optimizer's outputs), the same on every dp rank.
  llvm::stable_sort(members, [](const Member &a, const Member &b) {
    return a.read < b.read;
  });
  int64_t open = 0;
  for (Member &m : members) {
    if (g->buckets_.empty() || open >= options.bucketBytes) {
      auto b = std::make_unique<Bucket>();
      b->read = m.read;
      b->graph.name = "dp_gather_bucket" + std::to_string(g->buckets_.size());
      b->graph.mesh = opt.mesh;
      b->done = device.createEvent();
      g->buckets_.push_back(std::move(b));
      open = 0;
    }
    Bucket &b = *g->buckets_.back();
    open += m.full.bytes();
    DeviceBuffer &shard = g->shards_[m.name];
    shard = DeviceBuffer(device, m.shard);
    ValueId in = b.graph.addInput("new." + m.name + ".shard", m.shard);
    Attrs a{{"axes", StrList{"dp"}},
            {"dim", m.dim},
            {"reason", "distributed optimizer: gather the updated parameter, "
                       "bucket " +
                           std::to_string(g->buckets_.size() - 1)},
            {"src", "optimizer." + m.name}};
    int32_t n = b.graph.addNode(OpKind::AllGather, {in}, {m.full}, a,
                                "optimizer." + m.name, {"new." + m.name});
    b.launches.push_back({n, shard.data(), params[m.name].data()});
  }
  return g;
}

void *ParamGatherer::shardOutput(llvm::StringRef name) const {
  auto it = shards_.find(name);
  return it == shards_.end() ? nullptr
                             : const_cast<void *>(it->second.data());
}

int64_t ParamGatherer::shardBytes() const {
  int64_t bytes = 0;
  for (const auto &s : shards_)
    bytes += s.getValue().bytes();
  return bytes;
}

void ParamGatherer::issueAll(const LaunchContext &ctx) {
  if (!pending_)
    return;
  pending_ = false;
  // The gathers read the shards the optimizer (on the compute stream) wrote.
  dev_.record(*start_, kDefaultStream);
  dev_.wait(stream_, *start_);
  LaunchContext c = ctx;
  c.stream = stream_;
  for (auto &b : buckets_) {
    for (const Bucket::Launch &l : b->launches)
      dev_.launch(b->graph, b->graph.node(l.node), {l.in}, {l.out}, c);
    dev_.record(*b->done, stream_);
  }
  issued_ = buckets_.size();
  waited_ = 0;
}

void ParamGatherer::waitThrough(size_t end) {
  for (; waited_ < std::min(end, issued_); ++waited_)
    dev_.wait(kDefaultStream, *buckets_[waited_]->done);
}

void ParamGatherer::afterOptimizer(const LaunchContext &ctx) {
  if (buckets_.empty())
    return;
  pending_ = true;
  if (!overlap_)
    flush(ctx);
}

void ParamGatherer::beforeForward(int64_t chunk, int64_t microbatch,
                                  const LaunchContext &ctx) {
  issueAll(ctx);
  afterNode(chunk, microbatch, size_t(-1));
}

void ParamGatherer::afterNode(int64_t chunk, int64_t microbatch, size_t node) {
  if (waited_ >= issued_ || chunk < 0 ||
      size_t(chunk) >= firstMicrobatch_.size() ||
      firstMicrobatch_[chunk] != microbatch)
    return;
  size_t end = waited_;
  while (end < issued_ && buckets_[end]->read.chunk == chunk &&
         buckets_[end]->read.node <= node + 1)
    ++end;
  waitThrough(end);
}

void ParamGatherer::finish() { waitThrough(issued_); }

void ParamGatherer::flush(const LaunchContext &ctx) {
  issueAll(ctx);
  finish();
}

} // namespace strata
