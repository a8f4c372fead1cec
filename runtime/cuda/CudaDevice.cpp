//===- CudaDevice.cpp - The CUDA backend behind runtime/Device.h ----------===//
#include "runtime/cuda/CudaDevice.h"

#include "codegen/Renderer.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

namespace strata {

namespace {

const char kBuiltins[] =
#include "runtime/cuda/kernels/BuiltinsText.inc"
    ;

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

struct CudaEvent : Event {
  cuda::Driver *driver;
  cuda::EventHandle handle;
  ~CudaEvent() override { llvm::consumeError(driver->destroyEvent(handle)); }
};

/// A fused node's kernel: its plan and launch contract (codegen/Renderer.h).
struct FusedKernel {
  codegen::KernelPlan plan;
  codegen::CudaLaunch launch;
  cuda::Function main = nullptr, sums = nullptr;
};

/// The kernels of one graph's fused nodes, by body, and the workspace of
/// their column sums (the graph's launches run in stream order).
class CudaKernelModule : public KernelModule {
public:
  ~CudaKernelModule() override {
    if (partial)
      llvm::consumeError(driver->free(partial));
  }
  cuda::Driver *driver = nullptr;
  std::unique_ptr<cuda::Module> module;
  std::map<const Graph *, FusedKernel> kernels;
  cuda::DevicePtr partial = 0;
};

/// Whether the CUDA backend has a kernel for fused node `node` today: a
/// plan without an anchor matmul (cuBLASLt comes later).
bool fusedSupported(const Node &node) {
  if (!node.body)
    return false;
  auto plan = codegen::planKernel(*node.body);
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return false;
  }
  return plan->anchor < 0;
}

} // namespace

llvm::Expected<std::unique_ptr<CudaDevice>>
CudaDevice::create(std::unique_ptr<cuda::Driver> driver, int index) {
  std::unique_ptr<CudaDevice> d(new CudaDevice(std::move(driver), index));
  auto s = d->driver_->createStream();
  if (!s)
    return s.takeError();
  d->streams_.push_back(*s);
  auto m =
      d->driver_->loadModule(kBuiltins, "runtime/cuda/kernels/Builtins.cu");
  if (!m)
    return m.takeError();
  d->builtins_ = std::move(*m);
  auto acc = d->driver_->function(*d->builtins_, "strata_accumulate");
  if (!acc)
    return acc.takeError();
  auto scale = d->driver_->function(*d->builtins_, "strata_scale");
  if (!scale)
    return scale.takeError();
  d->accumulate_ = *acc;
  d->scale_ = *scale;
  return std::move(d);
}

CudaDevice::~CudaDevice() {
  llvm::consumeError(synchronize());
  for (size_t i = 1; i < streams_.size(); ++i)
    llvm::consumeError(driver_->destroyStream(streams_[i]));
}

std::string CudaDevice::name() const {
  return driver_->kind().str() + ":" + std::to_string(index_);
}

bool CudaDevice::supports(const Graph &g, const Node &node) const {
  return node.op == OpKind::Fused && fusedSupported(node);
}

llvm::Expected<std::unique_ptr<KernelModule>>
CudaDevice::prepare(const Graph &g) {
  std::vector<const Graph *> bodies;
  std::vector<codegen::KernelPlan> plans;
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::Fused || !n.body ||
        llvm::is_contained(bodies, n.body.get()))
      continue;
    auto plan = codegen::planKernel(*n.body);
    if (!plan)
      return plan.takeError();
    bodies.push_back(n.body.get());
    plans.push_back(std::move(*plan));
  }
  if (plans.empty())
    return nullptr;
  codegen::KernelSource source =
      codegen::renderKernels(plans, codegen::Target::Cuda);
  auto module = driver_->loadModule(source.text, "@" + g.name + " kernels");
  if (!module)
    return module.takeError();
  auto m = std::make_unique<CudaKernelModule>();
  m->driver = driver_.get();
  m->module = std::move(*module);
  int64_t partialDoubles = 0;
  for (size_t k = 0; k < plans.size(); ++k) {
    FusedKernel f;
    f.launch = codegen::cudaLaunchOf(plans[k]);
    auto main = driver_->function(*m->module, source.symbols[k]);
    if (!main)
      return main.takeError();
    f.main = *main;
    if (!plans[k].sums.empty()) {
      auto sums = driver_->function(*m->module, source.symbols[k] + "_sums");
      if (!sums)
        return sums.takeError();
      f.sums = *sums;
    }
    partialDoubles = std::max(partialDoubles, f.launch.partialDoubles);
    f.plan = std::move(plans[k]);
    m->kernels[bodies[k]] = std::move(f);
  }
  if (partialDoubles) {
    auto p = driver_->allocate(partialDoubles * int64_t(sizeof(double)));
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

void CudaDevice::launchElementwise(cuda::Function f, int64_t count,
                                   void **params, StreamId s) {
  constexpr int64_t kThreads = 256, kMaxBlocks = 65535;
  unsigned blocks = unsigned(
      std::clamp<int64_t>((count + kThreads - 1) / kThreads, 1, kMaxBlocks));
  note(driver_->launch(f, {blocks, 1, 1}, {unsigned(kThreads), 1, 1}, 0,
                       stream(s), params));
}

void CudaDevice::enqueueAccumulate(void *acc, const void *x, int64_t count,
                                   StreamId s) {
  long long n = count;
  void *params[] = {&acc, &x, &n};
  launchElementwise(accumulate_, count, params, s);
}

void CudaDevice::enqueueScale(void *x, int64_t count, float factor,
                              StreamId s) {
  long long n = count;
  void *params[] = {&x, &n, &factor};
  launchElementwise(scale_, count, params, s);
}

void CudaDevice::launch(const Graph &g, const Node &node,
                        llvm::ArrayRef<const void *> operands,
                        llvm::ArrayRef<void *> results,
                        const LaunchContext &ctx) {
  if (node.op == OpKind::Fused)
    return note(launchFused(node, operands, results, ctx));
  note(err(name() + " has no kernel for '" + opName(node.op) + "' (" +
           node.scope + ")"));
}

llvm::Error CudaDevice::launchFused(const Node &node,
                                    llvm::ArrayRef<const void *> operands,
                                    llvm::ArrayRef<void *> results,
                                    const LaunchContext &ctx) {
  const auto *m = static_cast<const CudaKernelModule *>(ctx.module);
  auto it = m ? m->kernels.find(node.body.get())
              : decltype(m->kernels)::const_iterator();
  if (!m || it == m->kernels.end())
    return err("fused node (" + node.scope +
               ") was not prepared for this device (Device::prepare)");
  const FusedKernel &k = it->second;
  const codegen::KernelPlan &p = k.plan;
  // Parameters in the order of codegen/Renderer.h's CUDA convention.
  std::vector<const void *> ptrs;
  for (const codegen::KernelLoad &l : p.loads)
    ptrs.push_back(operands[l.operand]);
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
  cuda::StreamHandle s = stream(ctx.stream);
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
  std::lock_guard<std::mutex> lock(mu_);
  if (firstError_.empty())
    return llvm::Error::success();
  std::string msg = std::move(firstError_);
  firstError_.clear();
  return err(msg);
}

} // namespace strata
