//===- CudaDevice.cpp - The CUDA backend behind runtime/Device.h ----------===//
#include "runtime/cuda/CudaDevice.h"

#include "codegen/Renderer.h"
#include "ir/Op.h"
#include "runtime/cuda/AdamWBatch.h"
#include "runtime/cuda/MatmulGemm.h"
#include "runtime/cuda/Widen.h"
#include "runtime/cuda/nccl/NcclGroups.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace strata {

namespace {

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

struct CudaEvent : Event {
  cuda::Driver *driver;
  cuda::EventHandle handle;
  ~CudaEvent() override { llvm::consumeError(driver->destroyEvent(handle)); }
};

/// A kernel codegen rendered: its plan and launch contract
/// (codegen/Renderer.h), and for a single op, which of the node's operands
/// each body input is (a fused node's body inputs are its operands).
struct GeneratedKernel {
  codegen::KernelPlan plan;
  codegen::CudaLaunch launch;
  cuda::Function main = nullptr, sums = nullptr;
  std::vector<size_t> operandOfInput;
  /// A fused matmul cuBLASLt's epilogue computes alone (MatmulGemm.h);
  /// cleared if cuBLASLt refuses it (the generated epilogue then runs).
  mutable std::optional<cuda::EpiloguePlan> epilogue;
};

/// The generated kernels of one graph: fused nodes by body, other nodes by
/// node; and the workspace of their column sums (the graph's launches run
/// in stream order).
class CudaKernelModule : public KernelModule {
public:
  ~CudaKernelModule() override {
    if (partial)
      llvm::consumeError(driver->free(partial));
  }
  cuda::Driver *driver = nullptr;
  std::string source; // the CUDA C of `module`
  std::unique_ptr<cuda::Module> module;
  std::map<const void *, GeneratedKernel> kernels;
  std::vector<std::shared_ptr<Graph>> singleOpBodies;
  cuda::DevicePtr partial = 0;
  int64_t partialDoubles = 0;
  /// The muls an AdamW update folds (AdamWBatch.h).
  llvm::DenseMap<const Node *, const Node *> foldedMuls;
  /// 16-bit nodes, run on f32 copies (Widen.h): the node retyped f32, and
  /// its hand-written kernel (null: a generated one, in `kernels`).
  struct Widened {
    std::shared_ptr<Graph> body;
    cuda::OpLauncher launcher = nullptr;
    bool native = false; // its generated kernel takes the 16-bit buffers
  };
  std::map<const Node *, Widened> widened;
};

/// Whether cuBLASLt runs a matmul of these types: f32 or f64, or 16-bit
/// inputs (f32 compute) to a result of their type or f32.
bool gemmTypes(DType ab, DType c) {
  if (ab == DType::F32 || ab == DType::F64)
    return c == ab;
  return cuda::isFloat16(ab) && (c == ab || c == DType::F32);
}

/// A plan of `body` the CUDA backend runs: an anchor matmul must be of the
/// GEMM's types (gemmTypes).
std::optional<codegen::KernelPlan> cudaPlan(const Graph &body) {
  auto plan = codegen::planKernel(body);
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return std::nullopt;
  }
  if (plan->anchor >= 0) {
    const Node &mm = body.node(plan->anchor);
    DType ab = body.type(mm.operands[0]).dtype;
    if (body.type(mm.operands[1]).dtype != ab ||
        !gemmTypes(ab, body.type(mm.results[0]).dtype))
      return std::nullopt;
  }
  return std::move(*plan);
}

/// Ops whose kernel depends on the launch's rank (ir/Ops.def).
bool rankDependent(OpKind op) {
  return op == OpKind::ShardSlice || op == OpKind::PickLabel ||
         op == OpKind::OneHot || op == OpKind::Dropout ||
         op == OpKind::DropoutGrad;
}

} // namespace

llvm::Expected<std::unique_ptr<CudaDevice>>
CudaDevice::create(std::unique_ptr<cuda::Driver> driver, int index) {
  std::unique_ptr<CudaDevice> d(new CudaDevice(std::move(driver), index));
  auto s = d->driver_->createStream();
  if (!s)
    return s.takeError();
  d->streams_.push_back(*s);
  auto ops =
      d->driver_->loadModule(cuda::opKernelSource(), "runtime/cuda/kernels");
  if (!ops)
    return ops.takeError();
  d->opKernels_ =
      std::make_unique<cuda::OpKernelModule>(*d->driver_, std::move(*ops));
  auto scale = d->opKernels_->kernel("strata_scale");
  if (!scale)
    return scale.takeError();
  d->scale_ = *scale;
  CudaDevice *self = d.get();
  d->adamw_ = std::make_unique<cuda::AdamWBatch>(
      *d->opKernels_,
      [self](const Node &mul, llvm::ArrayRef<const void *> operands,
             void *result, const LaunchContext &ctx) {
        return self->launchGenerated(mul, operands, {result}, ctx);
      });
  return d;
}

CudaDevice::CudaDevice(std::unique_ptr<cuda::Driver> driver, int index)
    : driver_(std::move(driver)), index_(index) {}

CudaDevice::~CudaDevice() {
  llvm::consumeError(synchronize());
  adamw_.reset(); // frees its tables
  for (const WidenBuffer &w : widenScratch_)
    llvm::consumeError(driver_->free(w.ptr));
  if (staging_)
    llvm::consumeError(driver_->freeHost(staging_));
  for (size_t i = 1; i < streams_.size(); ++i)
    llvm::consumeError(driver_->destroyStream(streams_[i]));
}

std::string CudaDevice::name() const {
  return driver_->kind().str() + ":" + std::to_string(index_);
}

/// `node` (not fused) as a generated single-op kernel: its body, named
/// `name`, with the body's plan; none if another path runs it or codegen
/// cannot plan it alone.
struct SingleOpKernel {
  std::shared_ptr<Graph> body;
  codegen::KernelPlan plan; // of *body
  std::vector<size_t> operandOfInput;
};
static std::optional<SingleOpKernel>
singleOpKernel(const Graph &g, const Node &node, const std::string &name) {
  if (node.op == OpKind::Fused || node.op == OpKind::Reshape ||
      node.op == OpKind::MatMul || isCollective(node.op) ||
      node.results.empty() || cuda::opLauncher(g, node) ||
      cuda::hasFloat16(g, node))
    return std::nullopt;
  if (rankDependent(node.op) && g.mesh)
    return std::nullopt; // their offsets come with the launch
  SingleOpKernel k;
  k.body = cuda::singleOpBody(g, node, name, k.operandOfInput);
  auto plan = cudaPlan(*k.body);
  if (!plan)
    return std::nullopt;
  k.plan = std::move(*plan);
  return k;
}

/// A 16-bit `node` (not a matmul, reshape or collective) as its f32 kernel
/// on f32 copies (Widen.h): hand-written (`launcher`) or generated
/// (`plan`); none if the f32 node has no kernel either.
struct WidenedKernel {
  std::shared_ptr<Graph> body;
  cuda::OpLauncher launcher = nullptr;
  codegen::KernelPlan plan;
  std::vector<size_t> operandOfInput;
  bool native = false; // the plan loads and stores the 16-bit buffers
};

static std::optional<WidenedKernel>
widenedKernel(const Graph &g, const Node &node, const std::string &name) {
  if (!cuda::hasFloat16(g, node) || node.op == OpKind::Fused ||
      node.op == OpKind::Reshape || node.op == OpKind::MatMul ||
      isCollective(node.op) || node.results.empty())
    return std::nullopt;
  WidenedKernel k;
  k.body = cuda::widenedBody(g, node, name, k.operandOfInput);
  k.body->mesh = g.mesh; // the rank's offsets of rank-dependent kernels
  k.body->partitioned = g.partitioned;
  if ((k.launcher = cuda::opLauncher(*k.body, k.body->node(0))))
    return k;
  if (rankDependent(node.op) && g.mesh)
    return std::nullopt;
  auto plan = cudaPlan(*k.body);
  if (!plan)
    return std::nullopt;
  k.plan = std::move(*plan);
  // An elementwise kernel reads and writes the 16-bit buffers itself (the
  // renderer's 16-bit loads and stores, f32 in registers); row kernels,
  // column sums and anchors run on f32 copies.
  codegen::KernelPlan &p = k.plan;
  if (p.isRowKernel() || !p.sums.empty() || p.anchor >= 0)
    return k;
  for (const codegen::KernelLoad &l : p.loads)
    if (DType dt = g.type(node.operands[k.operandOfInput[l.operand]]).dtype;
        cuda::isFloat16(dt))
      p.storage16.push_back({l.value, dt});
  for (size_t r = 0; r < p.stores.size(); ++r)
    if (DType dt = g.type(node.results[r]).dtype; cuda::isFloat16(dt))
      p.storage16.push_back({p.stores[r], dt});
  k.native = true;
  return k;
}

/// What running `g` takes beyond its buffers: the largest f32 copies of a
/// 16-bit node, the largest hand-written kernel scratch, the column-sum
/// partials of its generated kernels, the staging copies of its sends, and
/// per group and size the most packing buffers one collective takes.
struct GraphWorkspace {
  int64_t widen = 0, opScratch = 0, partial = 0, sends = 0;
  std::map<std::pair<std::string, int64_t>, int64_t> packing;
};
static GraphWorkspace workspaceOf(const Graph &g) {
  GraphWorkspace w;
  for (const Node &n : g.nodes()) {
    if (n.op == OpKind::Send)
      w.sends += g.type(n.operands[0]).bytes();
    std::map<int64_t, int64_t> sizes;
    for (int64_t bytes : CudaDevice::packingBuffers(g, n))
      ++sizes[bytes];
    if (sizes.empty())
      continue;
    std::string group = llvm::join(n.attrs.getStrings("axes"), ",");
    for (auto [bytes, count] : sizes) {
      int64_t &most = w.packing[{group, bytes}];
      most = std::max(most, count);
    }
  }
  auto partials = [&](const codegen::KernelPlan &p) {
    w.partial = std::max(w.partial, codegen::cudaLaunchOf(p).partialDoubles *
                                        int64_t(sizeof(double)));
  };
  for (const Node &n : g.nodes()) {
    if (n.op == OpKind::Fused) {
      if (n.body)
        if (auto plan = cudaPlan(*n.body))
          partials(*plan);
    } else if (auto k = widenedKernel(g, n, "probe")) {
      if (!k->native)
        w.widen = std::max(w.widen, cuda::widenLayout(g, n).bytes);
      if (k->launcher)
        w.opScratch = std::max(
            w.opScratch, cuda::opScratchBytes(*k->body, k->body->node(0)));
      else
        partials(k->plan);
    } else if (auto op = singleOpKernel(g, n, "probe")) {
      partials(op->plan);
    } else {
      w.opScratch = std::max(w.opScratch, cuda::opScratchBytes(g, n));
    }
  }
  return w;
}

int64_t CudaDevice::workspaceBytes(llvm::ArrayRef<const Graph *> graphs) {
  int64_t widen = 0, opScratch = 0, partials = 0, sends = 0, packing = 0;
  std::map<std::pair<std::string, int64_t>, int64_t> buffers;
  std::map<const Graph *, GraphWorkspace> of; // a program runs many times
  for (const Graph *g : graphs) {
    auto [it, first] = of.try_emplace(g);
    if (first)
      it->second = workspaceOf(*g);
    const GraphWorkspace &w = it->second;
    widen = std::max(widen, w.widen);
    opScratch = std::max(opScratch, w.opScratch);
    if (first)
      partials += w.partial;
    sends += w.sends;
    for (const auto &[key, count] : w.packing)
      buffers[key] = std::max(buffers[key], count);
  }
  for (const auto &[key, count] : buffers)
    packing += key.second * count;
  return cuda::kGemmWorkspaceBytes + widen + opScratch + partials + sends +
         packing;
}

bool CudaDevice::supports(const Graph &g, const Node &node) const {
  if (node.op == OpKind::Fused)
    return node.body && cudaPlan(*node.body).has_value();
  if (node.op == OpKind::Reshape || cuda::opLauncher(g, node))
    return true; // a view, or a hand-written kernel
  if (node.op == OpKind::MatMul)
    return g.type(node.operands[0]).dtype == g.type(node.operands[1]).dtype &&
           gemmTypes(g.type(node.operands[0]).dtype,
                     g.type(node.results[0]).dtype);
  if (isCollective(node.op)) // NCCL (emulated over Gloo in interpret mode)
    return true;
  if (cuda::hasFloat16(g, node))
    return widenedKernel(g, node, "probe").has_value();
  return singleOpKernel(g, node, "probe").has_value();
}

llvm::Expected<std::unique_ptr<KernelModule>>
CudaDevice::prepare(const Graph &g) {
  auto m = std::make_unique<CudaKernelModule>();
  m->driver = driver_.get();
  std::vector<const void *> keys;
  std::vector<GeneratedKernel> kernels;
  for (const Node &n : g.nodes()) {
    GeneratedKernel k;
    const void *key = &n;
    if (n.op == OpKind::Fused) {
      key = n.body.get();
      if (!n.body || llvm::is_contained(keys, key))
        continue;
      auto plan = codegen::planKernel(*n.body);
      if (!plan)
        return plan.takeError();
      k.plan = std::move(*plan);
      k.epilogue = cuda::matchEpilogue(*n.body);
    } else if (auto w =
                   widenedKernel(g, n,
                                 "op" + std::to_string(&n - g.nodes().data()) +
                                     "_" + opName(n.op).str() + "_f32")) {
      m->widened[&n] = {w->body, w->launcher, w->native};
      if (w->launcher)
        continue;
      m->singleOpBodies.push_back(w->body);
      k.plan = std::move(w->plan);
      k.operandOfInput = std::move(w->operandOfInput);
    } else if (auto op =
                   singleOpKernel(g, n,
                                  "op" + std::to_string(&n - g.nodes().data()) +
                                      "_" + opName(n.op).str())) {
      m->singleOpBodies.push_back(std::move(op->body));
      k.plan = std::move(op->plan);
      k.operandOfInput = std::move(op->operandOfInput);
    } else {
      continue;
    }
    keys.push_back(key);
    kernels.push_back(std::move(k));
  }
  // The default stream's scratch, sized for this graph before it runs
  // (workspaceBytes counts one buffer of each).
  GraphWorkspace w = workspaceOf(g);
  if (auto e = opKernels_->reserve(stream(kDefaultStream), w.opScratch))
    return std::move(e);
  if (auto e = reserveWiden(stream(kDefaultStream), w.widen))
    return std::move(e);
  m->foldedMuls = cuda::foldableMuls(g);
  if (kernels.empty())
    return m->foldedMuls.empty() && m->widened.empty()
               ? nullptr
               : std::unique_ptr<KernelModule>(std::move(m));
  std::vector<codegen::KernelPlan> plans;
  for (const GeneratedKernel &k : kernels)
    plans.push_back(k.plan);
  codegen::KernelSource source =
      codegen::renderKernels(plans, codegen::Target::Cuda);
  auto module = driver_->loadModule(source.text, "@" + g.name + " kernels");
  if (!module)
    return module.takeError();
  m->module = std::move(*module);
  m->source = std::move(source.text);
  for (size_t i = 0; i < kernels.size(); ++i) {
    GeneratedKernel &k = kernels[i];
    k.launch = codegen::cudaLaunchOf(k.plan);
    auto main = driver_->function(*m->module, source.symbols[i]);
    if (!main)
      return main.takeError();
    k.main = *main;
    if (!k.plan.sums.empty()) {
      auto sums = driver_->function(*m->module, source.symbols[i] + "_sums");
      if (!sums)
        return sums.takeError();
      k.sums = *sums;
    }
    m->partialDoubles = std::max(m->partialDoubles, k.launch.partialDoubles);
    m->kernels[keys[i]] = std::move(k);
  }
  if (m->partialDoubles) {
    auto p = driver_->allocate(m->partialDoubles * int64_t(sizeof(double)));
    if (!p)
      return p.takeError();
    m->partial = *p;
  }
  return std::unique_ptr<KernelModule>(std::move(m));
}

std::string CudaDevice::kernelSource(const KernelModule *m) {
  return m ? static_cast<const CudaKernelModule *>(m)->source : "";
}

void *CudaDevice::allocate(int64_t bytes) {
  auto p = driver_->allocate(bytes);
  if (!p)
    llvm::report_fatal_error(llvm::Twine(name()) + ": " +
                             llvm::toString(p.takeError()));
  return reinterpret_cast<void *>(*p);
}

std::optional<int64_t> CudaDevice::freeBytes() {
  auto info = driver_->memoryInfo();
  if (!info) {
    llvm::consumeError(info.takeError());
    return std::nullopt;
  }
  return info->first;
}

void CudaDevice::deallocate(void *ptr) {
  flushDeferred();
  note(driver_->free(cuda::DevicePtr(ptr)));
}

cuda::StreamHandle CudaDevice::stream(StreamId id) const {
  if (id < 0 || size_t(id) >= streams_.size())
    llvm::report_fatal_error(llvm::Twine(name()) + ": no stream " +
                             llvm::Twine(id));
  return streams_[id];
}

StreamId CudaDevice::createStream() {
  auto s = driver_->createStream();
  if (!s)
    llvm::report_fatal_error(llvm::Twine(name()) + ": " +
                             llvm::toString(s.takeError()));
  streams_.push_back(*s);
  return StreamId(streams_.size() - 1);
}

std::unique_ptr<Event> CudaDevice::createEvent() {
  auto h = driver_->createEvent();
  if (!h)
    llvm::report_fatal_error(llvm::Twine(name()) + ": " +
                             llvm::toString(h.takeError()));
  auto e = std::make_unique<CudaEvent>();
  e->driver = driver_.get();
  e->handle = *h;
  return e;
}

void CudaDevice::record(Event &event, StreamId s) {
  flushDeferred();
  note(driver_->record(static_cast<CudaEvent &>(event).handle, stream(s)));
}

void CudaDevice::wait(StreamId s, Event &event) {
  flushDeferred();
  note(driver_->wait(stream(s), static_cast<CudaEvent &>(event).handle));
}

void CudaDevice::enqueueHost(std::function<llvm::Error()> work, StreamId s) {
  flushDeferred();
  note(driver_->launchHost(std::move(work), stream(s)));
}

void CudaDevice::enqueueCopy(CopyKind kind, void *dst, const void *src,
                             int64_t bytes, StreamId s) {
  flushDeferred();
  auto d = cuda::DevicePtr(dst), from = cuda::DevicePtr(src);
  switch (kind) {
  case CopyKind::HostToDevice:
    return note(driver_->copyToDevice(d, staged(src, bytes), bytes, stream(s)));
  case CopyKind::DeviceToHost:
    return note(driver_->copyToHost(dst, from, bytes, stream(s)));
  case CopyKind::DeviceToDevice:
    return note(driver_->copyOnDevice(d, from, bytes, stream(s)));
  }
}

const void *CudaDevice::staged(const void *src, int64_t bytes) {
  constexpr int64_t kStagingBytes = 64 << 10, kLargest = 256;
  std::lock_guard<std::mutex> lock(stagingMu_);
  if (bytes > kLargest || stagingUsed_ + kLargest > kStagingBytes)
    return src; // large, or the pool is full until the next synchronize
  if (!staging_) {
    auto p = driver_->allocateHost(kStagingBytes);
    if (!p) {
      llvm::consumeError(p.takeError()); // a pageable copy works too
      return src;
    }
    staging_ = static_cast<char *>(*p);
  }
  char *slot = staging_ + stagingUsed_;
  std::memcpy(slot, src, size_t(bytes));
  stagingUsed_ += (bytes + 15) / 16 * 16;
  return slot;
}

void CudaDevice::enqueueFill(void *dst, int64_t bytes, int value, StreamId s) {
  flushDeferred();
  note(driver_->fill(cuda::DevicePtr(dst), uint8_t(value), bytes, stream(s)));
}

void CudaDevice::enqueueScale(void *x, int64_t count, float factor,
                              StreamId s) {
  flushDeferred();
  long long n = count;
  void *params[] = {&x, &n, &factor};
  note(cuda::launch1d(*driver_, stream(s), scale_, count, params));
}

void CudaDevice::launch(const Graph &g, const Node &node,
                        llvm::ArrayRef<const void *> operands,
                        llvm::ArrayRef<void *> results,
                        const LaunchContext &ctx) {
  const auto *m = static_cast<const CudaKernelModule *>(ctx.module);
  {
    std::lock_guard<std::mutex> lock(adamwMu_);
    cuda::StreamHandle s = stream(ctx.stream);
    auto taken = adamw_->take(g, node, operands, results, ctx, s,
                              m ? &m->foldedMuls : nullptr);
    if (!taken)
      return note(taken.takeError());
    if (*taken)
      return;
    if (adamw_->conflicts(g, node, operands, results, s))
      note(adamw_->flush());
  }
  if (node.op == OpKind::Reshape) {
    if (results[0] != operands[0])
      copy(results[0], operands[0], g.type(node.results[0]).bytes(),
           ctx.stream);
    return;
  }
  if (isCollective(node.op))
    return note(launchCollective(g, node,
                                 operands.empty() ? nullptr : operands[0],
                                 results.empty() ? nullptr : results[0], ctx));
  if (node.op == OpKind::MatMul) {
    cuda::Gemm gm =
        cuda::matmulGemm(g, node, operands[0], operands[1], results[0]);
    if (operands.size() == 3) { // acc + A B: beta = 1 over the accumulator
      if (results[0] != operands[2])
        if (auto e = driver_->copyOnDevice(
                cuda::DevicePtr(results[0]), cuda::DevicePtr(operands[2]),
                g.type(node.results[0]).bytes(), stream(ctx.stream)))
          return note(std::move(e));
      gm.beta = 1;
    }
    return note(driver_->gemm(gm, stream(ctx.stream)));
  }
  if (m)
    if (auto w = m->widened.find(&node); w != m->widened.end())
      return note(w->second.native
                      ? launchGenerated(node, operands, results, ctx)
                      : launchWidened(g, node, operands, results, ctx,
                                      *w->second.body, w->second.launcher));
  if (cuda::OpLauncher l = cuda::opLauncher(g, node))
    return note(
        l({*opKernels_, g, node, operands, results, ctx, stream(ctx.stream)}));
  note(launchGenerated(node, operands, results, ctx));
}

llvm::Error CudaDevice::launchGenerated(const Node &node,
                                        llvm::ArrayRef<const void *> operands,
                                        llvm::ArrayRef<void *> results,
                                        const LaunchContext &ctx) {
  const auto *m = static_cast<const CudaKernelModule *>(ctx.module);
  const void *key = node.op == OpKind::Fused
                        ? static_cast<const void *>(node.body.get())
                        : static_cast<const void *>(&node);
  auto it = m ? m->kernels.find(key) : decltype(m->kernels)::const_iterator();
  if (!m || it == m->kernels.end())
    return err(name() + " has no kernel for '" + opName(node.op) + "' (" +
               node.scope + ") prepared (Device::prepare)");
  const GeneratedKernel &k = it->second;
  const codegen::KernelPlan &p = k.plan;
  auto operandOf = [&](int64_t input) {
    return operands[k.operandOfInput.empty() ? size_t(input)
                                             : k.operandOfInput[input]];
  };
  cuda::StreamHandle s = stream(ctx.stream);
  if (k.epilogue) { // cuBLASLt computes the whole body
    std::vector<const void *> ins;
    for (size_t i = 0; i < p.body->inputs().size(); ++i)
      ins.push_back(operandOf(int64_t(i)));
    llvm::Error e = driver_->gemm(
        cuda::epilogueGemm(*p.body, *k.epilogue, ins, results), s);
    if (!e)
      return e;
    llvm::consumeError(std::move(e)); // not for this GEMM: the kernel runs
    k.epilogue.reset();
  }
  if (p.anchor >= 0) { // the matmul into its result first
    const Graph &body = *p.body;
    const Node &mm = body.node(p.anchor);
    auto inputOf = [&](ValueId v) {
      return operandOf(llvm::find(body.inputs(), v) - body.inputs().begin());
    };
    if (auto e = driver_->gemm(
            cuda::matmulGemm(body, mm, inputOf(mm.operands[0]),
                             inputOf(mm.operands[1]), results[p.anchorResult]),
            s))
      return e;
  }
  // Parameters in the order of codegen/Renderer.h's CUDA convention.
  std::vector<const void *> ptrs;
  for (const codegen::KernelLoad &l : p.loads)
    ptrs.push_back(l.operand < 0 ? results[p.anchorResult]
                                 : operandOf(l.operand));
  for (void *r : results)
    ptrs.push_back(r);
  if (!p.sums.empty())
    ptrs.push_back(reinterpret_cast<const void *>(m->partial));
  int64_t n = p.numElements();
  uint64_t seed = ctx.seed, step = ctx.step;
  std::vector<void *> params;
  for (const void *&q : ptrs)
    params.push_back(&q);
  params.push_back(&n);
  params.push_back(&seed);
  params.push_back(&step);
  if (auto e = driver_->launch(k.main, {k.launch.blocks, 1, 1},
                               {k.launch.threads, 1, 1}, 0, s, params.data()))
    return e;
  if (!k.sums)
    return llvm::Error::success();
  std::vector<const void *> sumPtrs{reinterpret_cast<const void *>(m->partial)};
  for (const codegen::KernelSum &sum : p.sums)
    sumPtrs.push_back(results[sum.store]);
  std::vector<void *> sumParams;
  for (const void *&q : sumPtrs)
    sumParams.push_back(&q);
  return driver_->launch(k.sums, {k.launch.sumBlocks, 1, 1},
                         {k.launch.sumThreads, 1, 1}, 0, s, sumParams.data());
}

void CudaDevice::note(llvm::Error e) {
  if (!e)
    return;
  std::lock_guard<std::mutex> lock(mu_);
  if (firstError_.empty())
    firstError_ = llvm::toString(std::move(e));
  else
    llvm::consumeError(std::move(e));
}

llvm::Error CudaDevice::synchronize() {
  flushDeferred();
  for (cuda::StreamHandle s : streams_)
    note(driver_->synchronize(s));
  if (nccl_)
    note(nccl_->release());
  {
    std::lock_guard<std::mutex> lock(stagingMu_);
    stagingUsed_ = 0; // every staged copy has run
  }
  return takeFirstError();
}

llvm::Error CudaDevice::takeFirstError() {
  std::lock_guard<std::mutex> lock(mu_);
  if (firstError_.empty())
    return llvm::Error::success();
  std::string msg = std::move(firstError_);
  firstError_.clear();
  return err(msg);
}

llvm::Error CudaDevice::synchronizeStream(StreamId id) {
  flushDeferred();
  note(driver_->synchronize(stream(id)));
  // The staging slots stay taken: other streams may not have run their
  // copies yet.
  return takeFirstError();
}

} // namespace strata
