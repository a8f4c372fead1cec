//===- OpKernels.cpp - Hand-written CUDA kernels of the ops ---------------===//
//
// The launchers of runtime/cuda/kernels/*.cu: each checks what its kernels
// assume (opLauncher returns null for dtypes and shapes without a kernel),
// picks the grid and enqueues the kernels on the launch's stream.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/OpKernels.h"

#include "codegen/Renderer.h"
#include "runtime/cuda/Launchers.h"

#include <algorithm>
#include <cmath>

namespace strata::cuda {

namespace launchers {

llvm::Error fail(const OpLaunch &a, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::Twine(opName(a.node.op)) + " (" +
                                     a.node.scope + "): " + msg);
}

bool f32OrF64(DType dt) { return dt == DType::F32 || dt == DType::F64; }

llvm::Expected<Function> typed(const OpLaunch &a, llvm::StringRef base,
                               DType dt) {
  const char *suffix = dt == DType::F32   ? "f32"
                       : dt == DType::F64 ? "f64"
                       : dt == DType::I32 ? "i32"
                       : dt == DType::I64 ? "i64"
                                          : nullptr;
  if (!suffix)
    return fail(a, "no kernel for dtype " + dtypeName(dt));
  return a.kernels.kernel((base + "_" + suffix).str());
}

llvm::Error launch(const OpLaunch &a, Function f, Dim3 grid, Dim3 block,
                   void **params) {
  return a.kernels.driver().launch(f, grid, block, 0, a.stream, params);
}

int64_t shardOffset(const OpLaunch &a, ValueId v, size_t dim) {
  const Value &val = a.g.value(v);
  if (!val.sharding || !a.ctx.mesh || dim >= val.sharding->dims.size())
    return 0;
  int64_t index = 0;
  for (const std::string &axis : val.sharding->dims[dim]) // major to minor
    index = index * a.ctx.mesh->axisSize(axis) +
            a.ctx.mesh->coord(a.ctx.rank, axis);
  return index * val.type.shape[dim];
}

} // namespace launchers

namespace {
using namespace launchers;

// The kernel sources, one text (runtime/cuda/CMakeLists.txt embeds them);
// Common.cu, the helpers, comes first.
const char *const kSources[] = {
#include "runtime/cuda/kernels/CommonText.inc"
    ,
#include "runtime/cuda/kernels/CreateText.inc"
    ,
#include "runtime/cuda/kernels/EmbeddingText.inc"
    ,
#include "runtime/cuda/kernels/LossText.inc"
    ,
#include "runtime/cuda/kernels/AdamWText.inc"
    ,
#include "runtime/cuda/kernels/AttentionText.inc"
    ,
#include "runtime/cuda/kernels/LayoutText.inc"
    ,
#include "runtime/cuda/kernels/ReduceText.inc"
    ,
#include "runtime/cuda/kernels/RopeText.inc"
    ,
#include "runtime/cuda/kernels/PartitionText.inc"
    ,
#include "runtime/cuda/kernels/DropoutText.inc"
    ,
#include "runtime/cuda/kernels/Float16Text.inc"
    ,
#include "runtime/cuda/kernels/BuiltinsText.inc"
};

int64_t rowsOf(const TensorType &t) {
  return t.shape.empty() ? 1 : t.numElements() / t.shape.back();
}

// dropout / dropout_grad of a partitioned graph: the mask of the block's
// global indices (kernels/Dropout.cu), as the CPU draws it.
llvm::Error dropoutK(const OpLaunch &a) {
  const TensorType &t = a.outType(0);
  auto f = typed(a, "strata_dropout", t.dtype);
  if (!f)
    return f.takeError();
  struct Block {
    int rank;
    long long local[8], gstride[8], offset[8];
  } b{};
  b.rank = int(t.rank());
  if (b.rank > 8)
    return fail(a, "rank above 8");
  const Value &v = a.g.value(a.node.results[0]);
  long long stride = 1;
  for (int d = b.rank - 1; d >= 0; --d) {
    int64_t shards = 1;
    if (v.sharding && a.ctx.mesh && size_t(d) < v.sharding->dims.size())
      for (const std::string &axis : v.sharding->dims[d])
        shards *= a.ctx.mesh->axisSize(axis);
    b.local[d] = t.shape[d];
    b.offset[d] = shardOffset(a, a.node.results[0], size_t(d));
    b.gstride[d] = stride;
    stride *= t.shape[d] * shards;
  }
  double p = a.node.attrs.getFloat("p");
  unsigned long long threshold =
      (unsigned long long)std::ceil(std::ldexp(p, 32));
  double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  const void *x = a.operands[0];
  void *y = a.results[0];
  long long n = t.numElements();
  unsigned long long seed = uint32_t(a.ctx.seed),
                     stream = uint32_t(a.node.attrs.getInt("stream")),
                     step = a.ctx.step;
  void *params[] = {&x, &y, &n, &b, &threshold, &scale, &seed, &stream, &step};
  return launch1d(a, *f, n, params);
}

llvm::Error fillK(const OpLaunch &a) {
  auto f = typed(a, "strata_fill", a.outType(0).dtype);
  if (!f)
    return f.takeError();
  void *out = a.results[0];
  long long n = a.outType(0).numElements();
  double value = a.node.attrs.getFloat("value");
  void *params[] = {&out, &n, &value};
  return launch1d(a, *f, n, params);
}

// gather(table[V, H], ids) and scatter_add(dy, ids) -> [rows, H].
llvm::Error gatherK(const OpLaunch &a) {
  auto f = typed(a, "strata_gather", a.outType(0).dtype);
  if (!f)
    return f.takeError();
  const void *table = a.operands[0], *ids = a.operands[1];
  void *out = a.results[0];
  long long N = a.inType(1).numElements(), V = a.inType(0).shape[0],
            H = a.inType(0).shape[1];
  long long start = shardOffset(a, a.node.operands[0], 0);
  void *params[] = {&table, &ids, &out, &N, &V, &H, &start};
  return launch1d(a, *f, N * H, params);
}
llvm::Error scatterAddK(const OpLaunch &a) {
  auto f = typed(a, "strata_scatter_add", a.outType(0).dtype);
  if (!f)
    return f.takeError();
  const void *dy = a.operands[0], *ids = a.operands[1];
  void *out = a.results[0];
  long long N = a.inType(1).numElements(), V = a.outType(0).shape[0],
            H = a.outType(0).shape[1];
  long long start = shardOffset(a, a.node.results[0], 0);
  // Row buckets (grid.y) so that ~64K threads own the output's elements;
  // each thread reads all N ids, so the buckets stay few.
  unsigned threads = unsigned(std::clamp<long long>(H, 32, 256));
  unsigned blocksX =
      unsigned(std::clamp<long long>((H + threads - 1) / threads, 1, 65535));
  unsigned buckets = unsigned(std::clamp<long long>(
      65536 / std::max(H, 1LL), 1, std::clamp(V, 1LL, 65535LL)));
  void *params[] = {&dy, &ids, &out, &N, &V, &H, &start};
  return launch(a, *f, {blocksX, buckets, 1}, {threads, 1, 1}, params);
}

// Row kernels of the loss: one block of kRowThreads per row.
constexpr unsigned kRowThreads = 256;
unsigned rowBlocks(long long rows) {
  return unsigned(std::clamp<long long>(rows, 1, 65535));
}

/// Scratch of crossEntropyK: a loss per row of the logits; of
/// crossEntropyGradK: the count of valid labels.
int64_t crossEntropyScratch(const TensorType &logits) {
  return std::max<int64_t>(rowsOf(logits), 1) * 8;
}
constexpr int64_t kLabelCountScratch = 8;

llvm::Error crossEntropyK(const OpLaunch &a) {
  DType dt = a.inType(0).dtype;
  auto rowsF = typed(a, "strata_ce_rows", dt);
  auto meanF = typed(a, "strata_ce_mean", dt);
  if (!rowsF || !meanF)
    return llvm::joinErrors(rowsF.takeError(), meanF.takeError());
  long long N = rowsOf(a.inType(0)), V = a.inType(0).shape.back();
  auto rowLoss = a.kernels.scratch(a.stream, crossEntropyScratch(a.inType(0)));
  if (!rowLoss)
    return rowLoss.takeError();
  const void *logits = a.operands[0], *labels = a.operands[1];
  void *loss = a.results[0], *rl = *rowLoss;
  void *rowParams[] = {&logits, &labels, &rl, &N, &V};
  if (auto e = launch(a, *rowsF, {rowBlocks(N), 1, 1}, {kRowThreads, 1, 1},
                      rowParams))
    return e;
  void *meanParams[] = {&rl, &labels, &loss, &N, &V};
  return launch(a, *meanF, {1, 1, 1}, {1, 1, 1}, meanParams);
}

llvm::Error crossEntropyGradK(const OpLaunch &a) {
  DType dt = a.inType(1).dtype;
  auto count = a.kernels.kernel("strata_count_labels");
  auto gradF = typed(a, "strata_ce_grad", dt);
  if (!count || !gradF)
    return llvm::joinErrors(count.takeError(), gradF.takeError());
  long long N = rowsOf(a.inType(1)), V = a.inType(1).shape.back();
  auto valid = a.kernels.scratch(a.stream, kLabelCountScratch);
  if (!valid)
    return valid.takeError();
  const void *dloss = a.operands[0], *logits = a.operands[1],
             *labels = a.operands[2];
  void *dlogits = a.results[0], *vp = *valid;
  void *countParams[] = {&labels, &N, &V, &vp};
  if (auto e = launch(a, *count, {1, 1, 1}, {kRowThreads, 1, 1}, countParams))
    return e;
  void *params[] = {&dloss, &logits, &labels, &vp, &dlogits, &N, &V};
  return launch(a, *gradF, {rowBlocks(N), 1, 1}, {kRowThreads, 1, 1}, params);
}

llvm::Error adamwK(const OpLaunch &a) {
  auto f = typed(a, "strata_adamw", a.inType(0).dtype);
  if (!f)
    return f.takeError();
  const void *p = a.operands[0], *g = a.operands[1], *m = a.operands[2],
             *v = a.operands[3], *lr = a.operands[4], *step = a.operands[5];
  void *pOut = a.results[0], *mOut = a.results[1], *vOut = a.results[2];
  long long n = a.inType(0).numElements();
  double beta1 = a.node.attrs.getFloat("beta1", 0.9),
         beta2 = a.node.attrs.getFloat("beta2", 0.999),
         eps = a.node.attrs.getFloat("eps", 1e-8),
         wd = a.node.attrs.getFloat("weight_decay", 0.0);
  void *params[] = {&p,    &g,    &m, &v,     &lr,    &step, &pOut,
                    &mOut, &vOut, &n, &beta1, &beta2, &eps,  &wd};
  return launch1d(a, *f, n, params);
}

/// Whether every value of `ids` has dtype `dt`.
bool allOf(const Graph &g, llvm::ArrayRef<ValueId> ids, DType dt) {
  return llvm::all_of(ids, [&](ValueId v) { return g.type(v).dtype == dt; });
}

} // namespace

llvm::Expected<void *> OpKernelModule::scratch(StreamHandle stream,
                                               int64_t bytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = llvm::find_if(scratch_,
                          [&](const Scratch &s) { return s.stream == stream; });
  if (it != scratch_.end() && it->bytes >= bytes)
    return it->ptr;
  // At least double the buffer it replaces: the replaced ones, kept until
  // the module goes, add up to less than the last.
  int64_t size = std::max<int64_t>(
      {bytes, 4096, it != scratch_.end() ? 2 * it->bytes : 0});
  auto p = driver_.allocate(size);
  if (!p)
    return p.takeError();
  buffers_.push_back(*p);
  Scratch s{stream, reinterpret_cast<void *>(*p), size};
  if (it != scratch_.end())
    *it = s;
  else
    scratch_.push_back(s);
  return s.ptr;
}

llvm::Error OpKernelModule::reserve(StreamHandle stream, int64_t bytes) const {
  if (bytes <= 0)
    return llvm::Error::success();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = llvm::find_if(scratch_,
                          [&](const Scratch &s) { return s.stream == stream; });
  if (it != scratch_.end()) {
    if (it->bytes >= bytes)
      return llvm::Error::success();
    if (auto e = driver_.synchronize(stream))
      return e;
    DevicePtr old = reinterpret_cast<DevicePtr>(it->ptr);
    if (auto e = driver_.free(old))
      return e;
    llvm::erase_value(buffers_, old);
    scratch_.erase(it);
  }
  auto p = driver_.allocate(bytes);
  if (!p)
    return p.takeError();
  buffers_.push_back(*p);
  scratch_.push_back({stream, reinterpret_cast<void *>(*p), bytes});
  return llvm::Error::success();
}

OpKernelModule::~OpKernelModule() {
  for (DevicePtr p : buffers_)
    llvm::consumeError(driver_.free(p));
}

llvm::Error launch1d(Driver &driver, StreamHandle stream, Function f,
                     int64_t count, void **params, unsigned threads) {
  unsigned blocks =
      unsigned(std::clamp<int64_t>((count + threads - 1) / threads, 1, 65535));
  return driver.launch(f, {blocks, 1, 1}, {threads, 1, 1}, 0, stream, params);
}

OpLauncher opLauncher(const Graph &g, const Node &node) {
  auto in = [&](int i) -> const TensorType & {
    return g.type(node.operands[i]);
  };
  auto out = [&](int i) -> const TensorType & {
    return g.type(node.results[i]);
  };
  switch (node.op) {
  case OpKind::Dropout:
  case OpKind::DropoutGrad: {
    // Partitioned graphs only: unpartitioned ones run codegen's kernel.
    DType dt = g.type(node.results[0]).dtype;
    return g.mesh && (dt == DType::F32 || dt == DType::F64) ? dropoutK
                                                            : nullptr;
  }
  case OpKind::Fill: {
    DType dt = out(0).dtype;
    return f32OrF64(dt) || dt == DType::I32 ? fillK : nullptr;
  }
  case OpKind::Gather:
    return f32OrF64(in(0).dtype) && in(0).rank() == 2 &&
                   in(1).dtype == DType::I32 && out(0).dtype == in(0).dtype
               ? gatherK
               : nullptr;
  case OpKind::ScatterAdd:
    return f32OrF64(in(0).dtype) && in(1).dtype == DType::I32 &&
                   out(0).rank() == 2 && out(0).dtype == in(0).dtype
               ? scatterAddK
               : nullptr;
  case OpKind::CrossEntropy:
    return f32OrF64(in(0).dtype) && in(1).dtype == DType::I32 &&
                   out(0).dtype == in(0).dtype
               ? crossEntropyK
               : nullptr;
  case OpKind::CrossEntropyGrad:
    return f32OrF64(in(1).dtype) && in(0).dtype == in(1).dtype &&
                   in(2).dtype == DType::I32 && out(0).dtype == in(1).dtype
               ? crossEntropyGradK
               : nullptr;
  case OpKind::AdamWUpdate:
    return f32OrF64(in(0).dtype) && allOf(g, node.operands, in(0).dtype) &&
                   allOf(g, node.results, in(0).dtype)
               ? adamwK
               : nullptr;
  case OpKind::Attention:
    return attentionShapes(g, node.operands[0], node.operands[1],
                           node.operands[2])
               ? attentionK
               : nullptr;
  case OpKind::AttentionGrad:
    return attentionShapes(g, node.operands[1], node.operands[2],
                           node.operands[3]) &&
                   in(0).dtype == in(1).dtype
               ? attentionGradK
               : nullptr;
  case OpKind::Transpose:
  case OpKind::Broadcast:
  case OpKind::Slice:
  case OpKind::Concat: {
    // Copies of 4- or 8-byte elements, up to rank 8 (kernels/Layout.cu).
    int64_t bytes = dtypeBytes(out(0).dtype);
    if ((bytes != 4 && bytes != 8) || out(0).rank() > 8)
      return nullptr;
    return node.op == OpKind::Transpose   ? transposeK
           : node.op == OpKind::Broadcast ? broadcastK
           : node.op == OpKind::Slice     ? sliceK
                                          : concatK;
  }
  case OpKind::Iota: {
    DType dt = out(0).dtype;
    return f32OrF64(dt) || dt == DType::I32 || dt == DType::I64 ? iotaK
                                                                : nullptr;
  }
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMean:
    return f32OrF64(in(0).dtype) && out(0).dtype == in(0).dtype &&
                   in(0).rank() <= 8
               ? reduceK
               : nullptr;
  case OpKind::Rope:
    return f32OrF64(in(0).dtype) && in(0).rank() == 4 &&
                   in(0).shape[3] % 2 == 0 && out(0).dtype == in(0).dtype
               ? ropeK
               : nullptr;
  case OpKind::ShardSlice: {
    int64_t bytes = dtypeBytes(out(0).dtype);
    return (bytes == 4 || bytes == 8) && out(0).rank() <= 8 ? shardSliceK
                                                            : nullptr;
  }
  case OpKind::PickLabel:
    return f32OrF64(in(0).dtype) && in(1).dtype == DType::I32 &&
                   out(0).dtype == in(0).dtype
               ? pickLabelK
               : nullptr;
  case OpKind::OneHot:
    return f32OrF64(out(0).dtype) && in(0).dtype == DType::I32 ? oneHotK
                                                               : nullptr;
  default:
    return nullptr;
  }
}

int64_t opScratchBytes(const Graph &g, const Node &node) {
  OpLauncher l = opLauncher(g, node);
  auto in = [&](int i) -> const TensorType & {
    return g.type(node.operands[i]);
  };
  if (l == attentionGradK)
    return attentionGradScratch(in(1));
  if (l == reduceK)
    return reduceScratch(in(0), node);
  if (l == ropeK)
    return ropeScratch(in(0));
  if (l == crossEntropyK)
    return crossEntropyScratch(in(0));
  if (l == crossEntropyGradK)
    return kLabelCountScratch;
  return 0;
}

llvm::StringRef opKernelSource() {
  static const std::string text = [] {
    // The Philox draw of the generated kernels (dropout masks), with what
    // it needs, and their bf16 / f16 conversions.
    std::string t = "#ifdef __CUDACC_RTC__\ntypedef unsigned int uint32_t;\n"
                    "typedef unsigned long long uint64_t;\n#else\n"
                    "#include <cstdint>\n#endif\n"
                    "#define STRATA_FN __device__ __forceinline__\n" +
                    codegen::philoxSource().str() + "\n" +
                    codegen::cudaFloat16Helpers();
    for (const char *s : kSources)
      t += std::string(s) + "\n";
    return t;
  }();
  return text;
}

} // namespace strata::cuda
