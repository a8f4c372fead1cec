//===- LayoutLaunchers.cpp - Launchers of data movement, reductions, rope -===//
//
// transpose, broadcast, slice, concat and shard_slice become strided copies
// (kernels/Layout.cu); pick_label and one_hot (kernels/Partition.cu);
// reductions over any axes (kernels/Reduce.cu) pick a thread or a block per
// output, or two passes over chunks, by the counts; iota; rope through a
// cos/sin table in scratch (kernels/Rope.cu).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Launchers.h"

#include <algorithm>

namespace strata::cuda::launchers {
namespace {

constexpr int kMaxRank = 8; // kernels/Layout.cu, kernels/Reduce.cu

/// kernels/Layout.cu's StridedCopy, laid out alike.
struct StridedCopy {
  long long size[kMaxRank], xStride[kMaxRank], yStride[kMaxRank];
  long long xOffset, yOffset, count;
  int rank;
};

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t, 8> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t, 8> s(shape.size(), 1);
  for (int d = int(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

/// A copy over iteration shape `shape`, writing row-major into `y`'s
/// layout `yStrides` (from `yOffset`) and reading `x` with `xStrides`.
StridedCopy stridedCopy(llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<int64_t> xStrides,
                        llvm::ArrayRef<int64_t> yStrides, int64_t xOffset = 0,
                        int64_t yOffset = 0) {
  StridedCopy c{};
  c.rank = int(shape.size());
  c.count = 1;
  for (int d = 0; d < c.rank; ++d) {
    c.size[d] = shape[d];
    c.xStride[d] = xStrides[d];
    c.yStride[d] = yStrides[d];
    c.count *= shape[d];
  }
  c.xOffset = xOffset;
  c.yOffset = yOffset;
  return c;
}

llvm::Error copy(const OpLaunch &a, const void *x, void *y, StridedCopy c,
                 DType dt) {
  auto f = a.kernels.kernel(dtypeBytes(dt) == 8 ? "strata_copy_b8"
                                                : "strata_copy_b4");
  if (!f)
    return f.takeError();
  void *params[] = {&x, &y, &c};
  return launch1d(a, *f, c.count, params);
}

int64_t normDim(int64_t dim, int64_t rank) {
  return dim < 0 ? dim + rank : dim;
}

/// kernels/Reduce.cu's ReduceDims, laid out alike.
struct ReduceDims {
  long long keptSize[kMaxRank], keptStride[kMaxRank], redSize[kMaxRank],
      redStride[kMaxRank];
  long long outputs, count;
  int keptRank, redRank, op;
};
/// Reduced counts from which a block (of kReduceThreads) takes each output.
constexpr int64_t kBlockReduce = 256;
constexpr unsigned kReduceThreads = 256;
/// Fewer outputs than this, of more than kChunk elements each, reduce in two
/// passes over chunks of kChunk elements (blocks over chunks, then a block
/// per output over its chunks' values): a single block per output would
/// leave most of the GPU idle.
constexpr int64_t kFewOutputs = 1024, kChunk = 32768;

/// kernels/Rope.cu's RopeParams, laid out alike.
struct RopeParams {
  double theta, factor, lowFreqFactor, highFreqFactor, sign;
  long long B, S, H, D, posOffset, originalMaxPositions;
};

/// Whether `r` reduces in two passes, and the bytes of their partial values.
bool twoPass(const ReduceDims &r) {
  return r.count > kChunk && r.outputs > 0 && r.outputs < kFewOutputs;
}
int64_t partialBytes(const ReduceDims &r) {
  return r.outputs * ((r.count + kChunk - 1) / kChunk) * 8;
}

/// The reduction of `node` (reduce_sum, reduce_max, reduce_mean) over x.
ReduceDims reduceDims(const TensorType &x, const Node &node) {
  IntList axes = node.attrs.getInts("axes");
  if (axes.empty())
    for (int64_t d = 0; d < x.rank(); ++d)
      axes.push_back(d);
  llvm::SmallVector<bool, 8> reduced(x.rank(), false);
  for (int64_t ax : axes)
    reduced[normDim(ax, x.rank())] = true;
  auto xs = stridesOf(x.shape);
  ReduceDims r{};
  r.outputs = r.count = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (reduced[d]) {
      r.redSize[r.redRank] = x.shape[d];
      r.redStride[r.redRank++] = xs[d];
      r.count *= x.shape[d];
    } else {
      r.keptSize[r.keptRank] = x.shape[d];
      r.keptStride[r.keptRank++] = xs[d];
      r.outputs *= x.shape[d];
    }
  }
  r.op = node.op == OpKind::ReduceSum   ? 0
         : node.op == OpKind::ReduceMax ? 1
                                        : 2;
  return r;
}

/// The two-pass reduction of `r` (kernels/Reduce.cu), partial values in
/// scratch.
llvm::Error reduceTwoPass(const OpLaunch &a, ReduceDims r) {
  DType dt = a.inType(0).dtype;
  auto partF = typed(a, "strata_reduce_part", dt);
  auto finishF = typed(a, "strata_reduce_finish", dt);
  if (!partF || !finishF)
    return llvm::joinErrors(partF.takeError(), finishF.takeError());
  long long chunk = kChunk, chunks = (r.count + chunk - 1) / chunk;
  auto part = a.kernels.scratch(a.stream, partialBytes(r));
  if (!part)
    return part.takeError();
  const void *in = a.operands[0];
  void *out = a.results[0], *p = *part;
  void *partParams[] = {&in, &p, &r, &chunk};
  if (auto e = launch(a, *partF,
                      {unsigned(std::min<long long>(chunks, 65535)),
                       unsigned(r.outputs), 1},
                      {kReduceThreads, 1, 1}, partParams))
    return e;
  void *finishParams[] = {&p, &out, &r, &chunk};
  return launch(a, *finishF, {unsigned(r.outputs), 1, 1},
                {kReduceThreads, 1, 1}, finishParams);
}

} // namespace

llvm::Error transposeK(const OpLaunch &a) {
  const TensorType &x = a.inType(0), &y = a.outType(0);
  IntList perm = a.node.attrs.getInts("perm");
  auto xs = stridesOf(x.shape);
  llvm::SmallVector<int64_t, 8> xStrides;
  for (int64_t p : perm)
    xStrides.push_back(xs[normDim(p, x.rank())]);
  return copy(a, a.operands[0], a.results[0],
              stridedCopy(y.shape, xStrides, stridesOf(y.shape)), y.dtype);
}

llvm::Error broadcastK(const OpLaunch &a) {
  const TensorType &x = a.inType(0), &y = a.outType(0);
  auto xs = stridesOf(x.shape);
  // Right-aligned, as NumPy: size-1 and missing dims repeat (stride 0).
  llvm::SmallVector<int64_t, 8> xStrides(y.rank(), 0);
  for (int64_t d = 0; d < x.rank(); ++d) {
    int64_t yd = y.rank() - x.rank() + d;
    if (x.shape[d] != 1 && x.shape[d] != y.shape[yd])
      return fail(a, "cannot broadcast dim " + llvm::Twine(d) + " of size " +
                         llvm::Twine(x.shape[d]));
    xStrides[yd] = x.shape[d] == 1 ? 0 : xs[d];
  }
  return copy(a, a.operands[0], a.results[0],
              stridedCopy(y.shape, xStrides, stridesOf(y.shape)), y.dtype);
}

llvm::Error sliceK(const OpLaunch &a) {
  const TensorType &x = a.inType(0), &y = a.outType(0);
  int64_t dim = normDim(a.node.attrs.getInt("dim"), x.rank());
  auto xs = stridesOf(x.shape);
  return copy(a, a.operands[0], a.results[0],
              stridedCopy(y.shape, xs, stridesOf(y.shape),
                          a.node.attrs.getInt("start") * xs[dim]),
              y.dtype);
}

llvm::Error concatK(const OpLaunch &a) {
  const TensorType &y = a.outType(0);
  int64_t dim = normDim(a.node.attrs.getInt("dim"), y.rank());
  auto ys = stridesOf(y.shape);
  int64_t at = 0;
  for (size_t j = 0; j < a.operands.size(); ++j) {
    const TensorType &x = a.inType(int(j));
    if (auto e =
            copy(a, a.operands[j], a.results[0],
                 stridedCopy(x.shape, stridesOf(x.shape), ys, 0, at * ys[dim]),
                 y.dtype))
      return e;
    at += x.shape[dim];
  }
  return llvm::Error::success();
}

llvm::Error iotaK(const OpLaunch &a) {
  const TensorType &t = a.outType(0);
  auto f = typed(a, "strata_iota", t.dtype);
  if (!f)
    return f.takeError();
  int64_t dim = normDim(a.node.attrs.getInt("dim"), t.rank());
  void *out = a.results[0];
  long long n = t.numElements(), size = t.shape[dim],
            inner = numElements(
                llvm::ArrayRef<int64_t>(t.shape).drop_front(dim + 1));
  void *params[] = {&out, &n, &inner, &size};
  return launch1d(a, *f, n, params);
}

int64_t reduceScratch(const TensorType &x, const Node &node) {
  ReduceDims r = reduceDims(x, node);
  return twoPass(r) ? partialBytes(r) : 0;
}

llvm::Error reduceK(const OpLaunch &a) {
  const TensorType &x = a.inType(0);
  ReduceDims r = reduceDims(x, a.node);
  const void *in = a.operands[0];
  void *out = a.results[0];
  if (twoPass(r))
    return reduceTwoPass(a, r);
  bool block = r.count >= kBlockReduce;
  auto f = typed(a, block ? "strata_reduce_block" : "strata_reduce", x.dtype);
  if (!f)
    return f.takeError();
  void *params[] = {&in, &out, &r};
  if (!block)
    return launch1d(a, *f, r.outputs, params);
  return launch(a, *f,
                {unsigned(std::clamp<long long>(r.outputs, 1, 65535)), 1, 1},
                {kReduceThreads, 1, 1}, params);
}

int64_t ropeScratch(const TensorType &x) {
  return std::max<int64_t>(2 * x.shape[1] * (x.shape[3] / 2), 1) *
         dtypeBytes(x.dtype);
}

llvm::Error ropeK(const OpLaunch &a) {
  const TensorType &x = a.inType(0);
  auto tableF = typed(a, "strata_rope_table", x.dtype);
  auto ropeF = typed(a, "strata_rope", x.dtype);
  if (!tableF || !ropeF)
    return llvm::joinErrors(tableF.takeError(), ropeF.takeError());
  const Attrs &at = a.node.attrs;
  RopeParams p{};
  p.theta = at.getFloat("theta", 10000.0);
  p.sign = at.getBool("inverse") ? -1.0 : 1.0;
  p.B = x.shape[0], p.S = x.shape[1], p.H = x.shape[2], p.D = x.shape[3];
  p.posOffset = at.getInt("pos_offset") + shardOffset(a, a.node.results[0], 1);
  if (at.has("scaling")) { // {scaling="llama3", ...} (ir/Ops.def)
    p.factor = at.getFloat("factor");
    p.lowFreqFactor = at.getFloat("low_freq_factor");
    p.highFreqFactor = at.getFloat("high_freq_factor");
    p.originalMaxPositions = at.getInt("original_max_positions");
    if (p.originalMaxPositions > 0 && !(p.factor > 0 && p.lowFreqFactor > 0 &&
                                        p.highFreqFactor > p.lowFreqFactor))
      return fail(a, "llama3 scaling needs factor > 0 and high_freq_factor > "
                     "low_freq_factor > 0");
  }
  long long pairs = p.S * (p.D / 2);
  auto table = a.kernels.scratch(a.stream, ropeScratch(x));
  if (!table)
    return table.takeError();
  void *t = *table;
  void *tableParams[] = {&t, &p};
  if (auto e = launch1d(a, *tableF, pairs, tableParams))
    return e;
  const void *in = a.operands[0];
  void *out = a.results[0];
  void *params[] = {&in, &out, &t, &p};
  return launch1d(a, *ropeF, p.B * p.H * pairs, params);
}

llvm::Error shardSliceK(const OpLaunch &a) {
  if (!a.ctx.mesh)
    return fail(a, "shard_slice needs the launch's mesh");
  const TensorType &x = a.inType(0), &y = a.outType(0);
  int64_t dim = normDim(a.node.attrs.getInt("dim"), x.rank());
  int64_t index = 0; // the block's index over `axes`, major to minor
  for (const std::string &axis : a.node.attrs.getStrings("axes"))
    index = index * a.ctx.mesh->axisSize(axis) +
            a.ctx.mesh->coord(a.ctx.rank, axis);
  auto xs = stridesOf(x.shape);
  return copy(a, a.operands[0], a.results[0],
              stridedCopy(y.shape, xs, stridesOf(y.shape),
                          index * y.shape[dim] * xs[dim]),
              y.dtype);
}

llvm::Error pickLabelK(const OpLaunch &a) {
  auto f = typed(a, "strata_pick_label", a.inType(0).dtype);
  if (!f)
    return f.takeError();
  const TensorType &x = a.inType(0);
  const void *in = a.operands[0], *labels = a.operands[1];
  void *out = a.results[0];
  long long N = a.inType(1).numElements(), C = x.shape.back(),
            c0 = shardOffset(a, a.node.operands[0], x.rank() - 1);
  void *params[] = {&in, &labels, &out, &N, &C, &c0};
  return launch1d(a, *f, N, params);
}

llvm::Error oneHotK(const OpLaunch &a) {
  const TensorType &y = a.outType(0);
  auto f = typed(a, "strata_one_hot", y.dtype);
  if (!f)
    return f.takeError();
  const void *labels = a.operands[0];
  void *out = a.results[0];
  long long N = a.inType(0).numElements(), C = y.shape.back(),
            c0 = shardOffset(a, a.node.results[0], y.rank() - 1);
  void *params[] = {&labels, &out, &N, &C, &c0};
  return launch1d(a, *f, N * C, params);
}

} // namespace strata::cuda::launchers
