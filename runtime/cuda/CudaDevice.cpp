//===- CudaDevice.cpp - The CUDA backend behind runtime/Device.h ----------===//
#include "runtime/cuda/CudaDevice.h"

#include "codegen/Renderer.h"
#include "ir/Op.h"
#include "passes/pipeline/GraphCopy.h"
#include "runtime/cuda/nccl/NcclGroups.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
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
  std::unique_ptr<cuda::Module> module;
  std::map<const void *, GeneratedKernel> kernels;
  std::vector<std::shared_ptr<Graph>> singleOpBodies;
  cuda::DevicePtr partial = 0;
  int64_t partialDoubles = 0;
};

/// Node `n` of `g` alone as a kernel body, named `name`: its distinct
/// operands as inputs, its results as outputs. `operandOfInput` receives
/// the operand position of each input.
std::shared_ptr<Graph> singleOpBody(const Graph &g, const Node &n,
                                    const std::string &name,
                                    std::vector<size_t> &operandOfInput) {
  auto body = std::make_shared<Graph>();
  body->name = name;
  GraphCopier copy(g, *body);
  for (size_t k = 0; k < n.operands.size(); ++k)
    if (copy.mapped(n.operands[k]) == kNoValue) {
      copy.addInput(n.operands[k]);
      operandOfInput.push_back(k);
    }
  int32_t b = copy.copyNode(int32_t(&n - g.nodes().data()));
  body->setOutputs(body->node(b).results);
  return body;
}

/// A plan of `body` the CUDA backend runs: an anchor matmul must be f32 or
/// f64 (the GEMM's types).
std::optional<codegen::KernelPlan> cudaPlan(const Graph &body) {
  auto plan = codegen::planKernel(body);
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return std::nullopt;
  }
  if (plan->anchor >= 0) {
    DType dt = body.type(body.node(plan->anchor).results[0]).dtype;
    if (dt != DType::F32 && dt != DType::F64)
      return std::nullopt;
  }
  return std::move(*plan);
}

/// The GEMM of matmul `mm` of `g` (ir/Ops.def: row-major a[..., M, K], b
/// [..., K, N] or [K, N], each maybe transposed) on column-major cuBLASLt:
/// C^T = op(b)^T op(a)^T, so b is cuBLASLt's A and a its B.
cuda::Gemm matmulGemm(const Graph &g, const Node &mm, const void *a,
                      const void *b, void *c) {
  const Shape &as = g.type(mm.operands[0]).shape,
              &bs = g.type(mm.operands[1]).shape;
  const TensorType &ct = g.type(mm.results[0]);
  bool ta = mm.attrs.getBool("transpose_a"),
       tb = mm.attrs.getBool("transpose_b");
  int64_t M = ct.shape[ct.shape.size() - 2], N = ct.shape.back();
  int64_t K = ta ? as[as.size() - 2] : as.back();
  cuda::Gemm gm;
  gm.m = N;
  gm.n = M;
  gm.k = K;
  gm.transA = tb;
  gm.lda = tb ? K : N;
  gm.transB = ta;
  gm.ldb = ta ? M : K;
  gm.ldc = N;
  gm.batch = ct.numElements() / (M * N);
  gm.strideA = bs.size() == 2 ? 0 : K * N;
  gm.strideB = M * K;
  gm.strideC = M * N;
  gm.f64 = ct.dtype == DType::F64;
  gm.A = cuda::DevicePtr(b);
  gm.B = cuda::DevicePtr(a);
  gm.C = cuda::DevicePtr(c);
  return gm;
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
  return d;
}

CudaDevice::CudaDevice(std::unique_ptr<cuda::Driver> driver, int index)
    : driver_(std::move(driver)), index_(index) {}

CudaDevice::~CudaDevice() {
  llvm::consumeError(synchronize());
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
      node.results.empty() || cuda::opLauncher(g, node))
    return std::nullopt;
  if (rankDependent(node.op) && g.mesh)
    return std::nullopt; // their offsets come with the launch
  SingleOpKernel k;
  k.body = singleOpBody(g, node, name, k.operandOfInput);
  auto plan = cudaPlan(*k.body);
  if (!plan)
    return std::nullopt;
  k.plan = std::move(*plan);
  return k;
}

bool CudaDevice::supports(const Graph &g, const Node &node) const {
  if (node.op == OpKind::Fused)
    return node.body && cudaPlan(*node.body).has_value();
  if (node.op == OpKind::Reshape || cuda::opLauncher(g, node))
    return true; // a view, or a hand-written kernel
  if (node.op == OpKind::MatMul) {
    DType dt = g.type(node.results[0]).dtype;
    return dt == DType::F32 || dt == DType::F64;
  }
  if (isCollective(node.op)) // NCCL (emulated over Gloo in interpret mode)
    return true;
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
  if (kernels.empty())
    return nullptr;
  std::vector<codegen::KernelPlan> plans;
  for (const GeneratedKernel &k : kernels)
    plans.push_back(k.plan);
  codegen::KernelSource source =
      codegen::renderKernels(plans, codegen::Target::Cuda);
  auto module = driver_->loadModule(source.text, "@" + g.name + " kernels");
  if (!module)
    return module.takeError();
  m->module = std::move(*module);
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
  note(driver_->record(static_cast<CudaEvent &>(event).handle, stream(s)));
}

void CudaDevice::wait(StreamId s, Event &event) {
  note(driver_->wait(stream(s), static_cast<CudaEvent &>(event).handle));
}

void CudaDevice::enqueueHost(std::function<llvm::Error()> work, StreamId s) {
  note(driver_->launchHost(std::move(work), stream(s)));
}

void CudaDevice::enqueueCopy(CopyKind kind, void *dst, const void *src,
                             int64_t bytes, StreamId s) {
  auto d = cuda::DevicePtr(dst), from = cuda::DevicePtr(src);
  switch (kind) {
  case CopyKind::HostToDevice:
    return note(driver_->copyToDevice(d, src, bytes, stream(s)));
  case CopyKind::DeviceToHost:
    return note(driver_->copyToHost(dst, from, bytes, stream(s)));
  case CopyKind::DeviceToDevice:
    return note(driver_->copyOnDevice(d, from, bytes, stream(s)));
  }
}

void CudaDevice::enqueueFill(void *dst, int64_t bytes, int value, StreamId s) {
  note(driver_->fill(cuda::DevicePtr(dst), uint8_t(value), bytes, stream(s)));
}

void CudaDevice::enqueueScale(void *x, int64_t count, float factor,
                              StreamId s) {
  long long n = count;
  void *params[] = {&x, &n, &factor};
  note(cuda::launch1d(*driver_, stream(s), scale_, count, params));
}

void CudaDevice::launch(const Graph &g, const Node &node,
                        llvm::ArrayRef<const void *> operands,
                        llvm::ArrayRef<void *> results,
                        const LaunchContext &ctx) {
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
  if (node.op == OpKind::MatMul)
    return note(
        driver_->gemm(matmulGemm(g, node, operands[0], operands[1], results[0]),
                      stream(ctx.stream)));
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
  if (p.anchor >= 0) { // the matmul into its result first
    const Graph &body = *p.body;
    const Node &mm = body.node(p.anchor);
    auto inputOf = [&](ValueId v) {
      return operandOf(llvm::find(body.inputs(), v) - body.inputs().begin());
    };
    if (auto e = driver_->gemm(matmulGemm(body, mm, inputOf(mm.operands[0]),
                                          inputOf(mm.operands[1]),
                                          results[p.anchorResult]),
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
  for (cuda::StreamHandle s : streams_)
    note(driver_->synchronize(s));
  if (nccl_)
    note(nccl_->release());
  std::lock_guard<std::mutex> lock(mu_);
  if (firstError_.empty())
    return llvm::Error::success();
  std::string msg = std::move(firstError_);
  firstError_.clear();
  return err(msg);
}

} // namespace strata
