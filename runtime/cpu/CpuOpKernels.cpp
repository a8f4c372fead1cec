//===- CpuOpKernels.cpp - The CPU kernel of every op
//-----------------------===//
//
// One entry per op of ir/Ops.def (static_assert keeps the table complete),
// each a thin adapter from (node, buffers) to runtime/kernels. Float ops run
// in f32 and f64 (f64 serves finite-difference checks); bf16 and f16 ops
// run the f32 kernel on widened copies (runWidened).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuDevice.h"

#include "runtime/comm/CollectiveKernels.h"
#include "runtime/cpu/FusedKernels.h"
#include "runtime/kernels/Kernels.h"

#include <cmath>
#include <cstring>
#include <span>

namespace strata {
namespace {
namespace k = kernels;

/// Everything a kernel adapter sees.
struct Args {
  const Graph &g;
  const Node &node;
  llvm::ArrayRef<const void *> in;
  llvm::ArrayRef<void *> out;
  const LaunchContext &ctx;

  const TensorType &inType(int i) const { return g.type(node.operands[i]); }
  const TensorType &outType(int i) const { return g.type(node.results[i]); }
  std::span<const int64_t> inShape(int i) const {
    const Shape &s = inType(i).shape;
    return {s.data(), s.size()};
  }
  std::span<const int64_t> outShape(int i) const {
    const Shape &s = outType(i).shape;
    return {s.data(), s.size()};
  }
  template <typename T> const T *i(int n) const {
    return static_cast<const T *>(in[n]);
  }
  template <typename T> T *o(int n) const { return static_cast<T *>(out[n]); }
  const Attrs &attrs() const { return node.attrs; }
};

using KernelFn = llvm::Error (*)(const Args &);

llvm::Error ok() { return llvm::Error::success(); }
llvm::Error fail(const Args &a, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::Twine(opName(a.node.op)) + " (" +
                                     a.node.scope + "): " + msg);
}

int64_t rows(llvm::ArrayRef<int64_t> shape) {
  return shape.empty() ? 1 : numElements(shape.drop_back());
}

bool isFloat16(DType t) { return t == DType::BF16 || t == DType::F16; }

void toFloat(DType t, const void *x, float *y, int64_t n) {
  if (t == DType::BF16)
    k::bf16ToFloat(static_cast<const uint16_t *>(x), y, n);
  else
    k::halfToFloat(static_cast<const uint16_t *>(x), y, n);
}
void fromFloat(DType t, const float *x, void *y, int64_t n) {
  if (t == DType::BF16)
    k::floatToBf16(x, static_cast<uint16_t *>(y), n);
  else
    k::floatToHalf(x, static_cast<uint16_t *>(y), n);
}

// A 16-bit op runs its f32 body on f32 copies: 16-bit operands are widened,
// 16-bit results are computed in f32 and rounded once when stored (kernels
// keep their accumulators and row statistics in f32 either way). Other
// operands and results (ids, f32 scalars) are passed as they are.
template <template <typename> class Body>
llvm::Error runWidened(const Args &a) {
  std::vector<std::vector<float>> wide(a.in.size() + a.out.size());
  llvm::SmallVector<const void *, 6> in(a.in.begin(), a.in.end());
  llvm::SmallVector<void *, 3> out(a.out.begin(), a.out.end());
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorType &t = a.inType(int(i));
    if (!isFloat16(t.dtype))
      continue;
    wide[i].resize(t.numElements());
    toFloat(t.dtype, in[i], wide[i].data(), t.numElements());
    in[i] = wide[i].data();
  }
  for (size_t r = 0; r < out.size(); ++r) {
    if (!isFloat16(a.outType(int(r)).dtype))
      continue;
    auto &w = wide[a.in.size() + r];
    w.resize(a.outType(int(r)).numElements());
    out[r] = w.data();
  }
  if (auto e = Body<float>::run(Args{a.g, a.node, in, out, a.ctx}))
    return e;
  for (size_t r = 0; r < out.size(); ++r)
    if (const TensorType &t = a.outType(int(r)); isFloat16(t.dtype))
      fromFloat(t.dtype, static_cast<const float *>(out[r]), a.out[r],
                t.numElements());
  return ok();
}

// Dispatches a float kernel body over f32 / f64 by the first operand's dtype
// (or the first result's, for ops without operands); bf16 and f16 run the
// f32 body on widened copies.
template <template <typename> class Body>
llvm::Error floatDispatch(const Args &a) {
  DType dt = a.node.operands.empty() ? a.outType(0).dtype : a.inType(0).dtype;
  if (a.node.op == OpKind::CrossEntropyGrad)
    dt = a.inType(1).dtype;
  if (dt == DType::F32)
    return Body<float>::run(a);
  if (dt == DType::F64)
    return Body<double>::run(a);
  if (isFloat16(dt))
    return runWidened<Body>(a);
  return fail(a, "unsupported dtype " + dtypeName(dt));
}

k::UnaryOp unaryOpOf(const Node &n) {
  switch (n.op) {
  case OpKind::Neg:
    return k::UnaryOp::Neg;
  case OpKind::Exp:
    return k::UnaryOp::Exp;
  case OpKind::Log:
    return k::UnaryOp::Log;
  case OpKind::Sqrt:
    return k::UnaryOp::Sqrt;
  case OpKind::Rsqrt:
    return k::UnaryOp::Rsqrt;
  case OpKind::Tanh:
    return k::UnaryOp::Tanh;
  case OpKind::Sigmoid:
    return k::UnaryOp::Sigmoid;
  case OpKind::Relu:
  case OpKind::ReluGrad:
    return k::UnaryOp::Relu;
  case OpKind::Silu:
  case OpKind::SiluGrad:
    return k::UnaryOp::Silu;
  case OpKind::Square:
    return k::UnaryOp::Square;
  case OpKind::Gelu:
  case OpKind::GeluGrad:
    return n.attrs.getString("approx", "tanh") == "none" ? k::UnaryOp::GeluErf
                                                         : k::UnaryOp::GeluTanh;
  default:
    llvm_unreachable("not a unary op");
  }
}

k::BinaryOp binaryOpOf(OpKind op) {
  switch (op) {
  case OpKind::Add:
    return k::BinaryOp::Add;
  case OpKind::Sub:
    return k::BinaryOp::Sub;
  case OpKind::Mul:
    return k::BinaryOp::Mul;
  case OpKind::Div:
    return k::BinaryOp::Div;
  case OpKind::Maximum:
    return k::BinaryOp::Max;
  case OpKind::Minimum:
    return k::BinaryOp::Min;
  default:
    llvm_unreachable("not a binary op");
  }
}

template <typename T> struct Unary {
  static llvm::Error run(const Args &a) {
    k::unaryFwd(unaryOpOf(a.node), a.i<T>(0), a.o<T>(0),
                a.inType(0).numElements());
    return ok();
  }
};
template <typename T> struct UnaryGrad {
  static llvm::Error run(const Args &a) {
    k::unaryBwd(unaryOpOf(a.node), a.i<T>(0), a.i<T>(1), a.o<T>(0),
                a.inType(0).numElements());
    return ok();
  }
};
template <typename T> struct ScaleK {
  static llvm::Error run(const Args &a) {
    k::scale(a.i<T>(0), a.o<T>(0), a.inType(0).numElements(),
             a.attrs().getFloat("value", 1.0));
    return ok();
  }
};
template <typename T> struct Binary {
  static llvm::Error run(const Args &a) {
    k::binaryFwd(binaryOpOf(a.node.op), a.i<T>(0), a.inShape(0), a.i<T>(1),
                 a.inShape(1), a.o<T>(0), a.outShape(0));
    return ok();
  }
};
template <typename T> struct FillK {
  static llvm::Error run(const Args &a) {
    T v = static_cast<T>(a.attrs().getFloat("value"));
    T *y = a.o<T>(0);
    for (int64_t j = 0, n = a.outType(0).numElements(); j < n; ++j)
      y[j] = v;
    return ok();
  }
};
template <typename T> struct ReduceK {
  static llvm::Error run(const Args &a) {
    IntList axes = a.attrs().getInts("axes");
    if (axes.empty())
      for (int64_t d = 0; d < a.inType(0).rank(); ++d)
        axes.push_back(d);
    k::ReduceOp op = a.node.op == OpKind::ReduceSum   ? k::ReduceOp::Sum
                     : a.node.op == OpKind::ReduceMax ? k::ReduceOp::Max
                                                      : k::ReduceOp::Mean;
    k::reduce(op, a.i<T>(0), a.inShape(0), std::span<const int64_t>(axes),
              a.o<T>(0));
    return ok();
  }
};
template <typename T> struct MatMulK {
  static llvm::Error run(const Args &a) {
    const TensorType &A = a.inType(0), &B = a.inType(1), &C = a.outType(0);
    k::GemmArgs g;
    g.transA = a.attrs().getBool("transpose_a");
    g.transB = a.attrs().getBool("transpose_b");
    g.M = C.shape[C.rank() - 2];
    g.N = C.shape[C.rank() - 1];
    g.K = A.shape[A.rank() - (g.transA ? 2 : 1)];
    g.batch = rows(llvm::ArrayRef<int64_t>(C.shape).drop_back());
    g.strideB = B.rank() == 2 ? 0 : -1;
    if (a.in.size() == 3) { // C = acc + A B: beta = 1 over the accumulator
      if (a.in[2] != a.out[0])
        std::memcpy(a.o<T>(0), a.i<T>(2), C.numElements() * sizeof(T));
      g.beta = 1;
    }
    k::matmul(a.i<T>(0), a.i<T>(1), a.o<T>(0), g);
    return ok();
  }
};
template <typename T> struct TransposeK {
  static llvm::Error run(const Args &a) {
    IntList perm = a.attrs().getInts("perm");
    k::transpose(a.i<T>(0), a.inShape(0), std::span<const int64_t>(perm),
                 a.o<T>(0));
    return ok();
  }
};
template <typename T> struct BroadcastK {
  static llvm::Error run(const Args &a) {
    k::broadcastTo(a.i<T>(0), a.inShape(0), a.o<T>(0), a.outShape(0));
    return ok();
  }
};
template <typename T> struct SliceK {
  static llvm::Error run(const Args &a) {
    int64_t dim = a.attrs().getInt("dim");
    if (dim < 0)
      dim += a.inType(0).rank();
    k::slice(a.i<T>(0), a.inShape(0), dim, a.attrs().getInt("start"),
             a.attrs().getInt("size"), a.o<T>(0));
    return ok();
  }
};
template <typename T> struct ConcatK {
  static llvm::Error run(const Args &a) {
    int64_t dim = a.attrs().getInt("dim");
    if (dim < 0)
      dim += a.outType(0).rank();
    llvm::SmallVector<const T *, 4> xs;
    llvm::SmallVector<int64_t, 4> sizes;
    for (size_t j = 0; j < a.in.size(); ++j) {
      xs.push_back(a.i<T>(j));
      sizes.push_back(a.inType(j).shape[dim]);
    }
    k::concat(std::span<const T *const>(xs.data(), xs.size()),
              std::span<const int64_t>(sizes.data(), sizes.size()),
              a.outShape(0), dim, a.o<T>(0));
    return ok();
  }
};
template <typename T> struct LayerNormK {
  static llvm::Error run(const Args &a) {
    int64_t C = a.inType(0).shape.back();
    k::layerNormFwd(a.i<T>(0), a.i<T>(1), a.i<T>(2), a.o<T>(0),
                    rows(a.inType(0).shape), C,
                    a.attrs().getFloat("eps", 1e-5));
    return ok();
  }
};
template <typename T> struct LayerNormGradK {
  static llvm::Error run(const Args &a) {
    int64_t C = a.inType(1).shape.back();
    k::layerNormBwd(a.i<T>(0), a.i<T>(1), a.i<T>(2), a.o<T>(0), a.o<T>(1),
                    a.o<T>(2), rows(a.inType(1).shape), C,
                    a.attrs().getFloat("eps", 1e-5));
    return ok();
  }
};
template <typename T> struct RmsNormK {
  static llvm::Error run(const Args &a) {
    k::rmsNormFwd(a.i<T>(0), a.i<T>(1), a.o<T>(0), rows(a.inType(0).shape),
                  a.inType(0).shape.back(), a.attrs().getFloat("eps", 1e-5));
    return ok();
  }
};
template <typename T> struct RmsNormGradK {
  static llvm::Error run(const Args &a) {
    k::rmsNormBwd(a.i<T>(0), a.i<T>(1), a.i<T>(2), a.o<T>(0), a.o<T>(1),
                  rows(a.inType(1).shape), a.inType(1).shape.back(),
                  a.attrs().getFloat("eps", 1e-5));
    return ok();
  }
};
template <typename T> struct SoftmaxK {
  static llvm::Error run(const Args &a) {
    k::softmaxFwd(a.i<T>(0), a.o<T>(0), rows(a.inType(0).shape),
                  a.inType(0).shape.back());
    return ok();
  }
};
template <typename T> struct SoftmaxGradK {
  static llvm::Error run(const Args &a) {
    k::softmaxBwd(a.i<T>(0), a.i<T>(1), a.o<T>(0), rows(a.inType(0).shape),
                  a.inType(0).shape.back());
    return ok();
  }
};
template <typename T> struct CrossEntropyK {
  static llvm::Error run(const Args &a) {
    if (a.inType(1).dtype != DType::I32)
      return fail(a, "labels must be i32");
    int64_t V = a.inType(0).shape.back();
    *a.o<T>(0) = k::crossEntropyFwd(a.i<T>(0), a.i<int32_t>(1),
                                    rows(a.inType(0).shape), V);
    return ok();
  }
};
template <typename T> struct CrossEntropyGradK {
  static llvm::Error run(const Args &a) {
    if (a.inType(2).dtype != DType::I32)
      return fail(a, "labels must be i32");
    int64_t V = a.inType(1).shape.back();
    k::crossEntropyBwd(*a.i<T>(0), a.i<T>(1), a.i<int32_t>(2), a.o<T>(0),
                       rows(a.inType(1).shape), V);
    return ok();
  }
};

/// Where this device's block of value `v` sits in the global (unsharded)
/// tensor: global shape and per-dim offsets, from the value's sharding and the
/// launch's (mesh, rank). A value without sharding is its own global tensor.
struct GlobalBlock {
  llvm::SmallVector<int64_t, 4> shape, offsets;
};
GlobalBlock globalBlock(const Args &a, ValueId v) {
  const Value &val = a.g.value(v);
  GlobalBlock b;
  b.shape.assign(val.type.shape.begin(), val.type.shape.end());
  b.offsets.assign(b.shape.size(), 0);
  if (!val.sharding || !a.ctx.mesh)
    return b;
  for (size_t d = 0; d < val.sharding->dims.size() && d < b.shape.size(); ++d) {
    int64_t index = 0, count = 1;
    for (const std::string &axis : val.sharding->dims[d]) { // major to minor
      index = index * a.ctx.mesh->axisSize(axis) +
              a.ctx.mesh->coord(a.ctx.rank, axis);
      count *= a.ctx.mesh->axisSize(axis);
    }
    b.offsets[d] = index * b.shape[d];
    b.shape[d] *= count;
  }
  return b;
}

template <typename T> struct GatherK {
  static llvm::Error run(const Args &a) {
    if (a.inType(1).dtype != DType::I32)
      return fail(a, "ids must be i32");
    const TensorType &table = a.inType(0);
    int64_t vocabStart = globalBlock(a, a.node.operands[0]).offsets[0];
    k::embeddingFwd(a.i<T>(0), a.i<int32_t>(1), a.o<T>(0),
                    a.inType(1).numElements(), table.shape[0], table.shape[1],
                    vocabStart);
    return ok();
  }
};
template <typename T> struct ScatterAddK {
  static llvm::Error run(const Args &a) {
    if (a.inType(1).dtype != DType::I32)
      return fail(a, "ids must be i32");
    const TensorType &out = a.outType(0);
    int64_t vocabStart = globalBlock(a, a.node.results[0]).offsets[0];
    std::memset(a.out[0], 0, out.numElements() * sizeof(T));
    k::embeddingBwd(a.i<T>(0), a.i<int32_t>(1), a.o<T>(0),
                    a.inType(1).numElements(), out.shape[0], out.shape[1],
                    vocabStart);
    return ok();
  }
};
k::AttentionDims attentionDims(const TensorType &q, const TensorType &kv) {
  return {q.shape[0], q.shape[1], q.shape[2], kv.shape[2], q.shape[3]};
}
double attentionScale(const Args &a, const TensorType &q) {
  return a.attrs().getFloat("scale", 1.0 / std::sqrt(double(q.shape[3])));
}
template <typename T> struct AttentionK {
  static llvm::Error run(const Args &a) {
    const TensorType &q = a.inType(0);
    k::attentionFwd(a.i<T>(0), a.i<T>(1), a.i<T>(2), a.o<T>(0),
                    attentionDims(q, a.inType(1)), a.attrs().getBool("causal"),
                    attentionScale(a, q), a.attrs().getInt("window", 0));
    return ok();
  }
};
template <typename T> struct AttentionGradK {
  static llvm::Error run(const Args &a) {
    const TensorType &q = a.inType(1);
    k::attentionBwd(a.i<T>(0), a.i<T>(1), a.i<T>(2), a.i<T>(3), a.o<T>(0),
                    a.o<T>(1), a.o<T>(2), attentionDims(q, a.inType(2)),
                    a.attrs().getBool("causal"), attentionScale(a, q),
                    a.attrs().getInt("window", 0));
    return ok();
  }
};
template <typename T> struct RopeK {
  static llvm::Error run(const Args &a) {
    const Shape &s = a.inType(0).shape;
    double theta = a.attrs().getFloat("theta", 10000.0);
    int64_t pos = a.attrs().getInt("pos_offset") +
                  globalBlock(a, a.node.results[0]).offsets[1];
    k::RopeScaling sc; // {scaling="llama3", ...} (ir/Ops.def); else none
    if (a.attrs().has("scaling")) {
      sc.factor = a.attrs().getFloat("factor");
      sc.lowFreqFactor = a.attrs().getFloat("low_freq_factor");
      sc.highFreqFactor = a.attrs().getFloat("high_freq_factor");
      sc.originalMaxPositions = a.attrs().getInt("original_max_positions");
    }
    if (a.attrs().getBool("inverse"))
      k::ropeBwd(a.i<T>(0), a.o<T>(0), s[0], s[1], s[2], s[3], theta, pos, sc);
    else
      k::ropeFwd(a.i<T>(0), a.o<T>(0), s[0], s[1], s[2], s[3], theta, pos, sc);
    return ok();
  }
};
template <typename T> struct DropoutK {
  static llvm::Error run(const Args &a) {
    GlobalBlock b = globalBlock(a, a.node.results[0]);
    auto fn =
        a.node.op == OpKind::Dropout ? &k::dropoutFwd<T> : &k::dropoutBwd<T>;
    fn(a.i<T>(0), a.o<T>(0), a.outShape(0),
       std::span<const int64_t>(b.shape.data(), b.shape.size()),
       std::span<const int64_t>(b.offsets.data(), b.offsets.size()),
       a.attrs().getFloat("p"), uint32_t(a.ctx.seed),
       uint32_t(a.attrs().getInt("stream")), a.ctx.step);
    return ok();
  }
};
// Vocab-parallel cross-entropy pieces: the class offset c0 is the block of
// the vocab dim this rank holds (pick_label: its x's, one_hot: its result's).
template <typename T> struct PickLabelK {
  static llvm::Error run(const Args &a) {
    if (a.inType(1).dtype != DType::I32)
      return fail(a, "labels must be i32");
    int64_t C = a.inType(0).shape.back();
    int64_t c0 = globalBlock(a, a.node.operands[0]).offsets.back();
    k::pickLabel(a.i<T>(0), a.i<int32_t>(1), a.o<T>(0),
                 a.inType(1).numElements(), C, c0);
    return ok();
  }
};
llvm::Error oneHotK(const Args &a) {
  if (a.inType(0).dtype != DType::I32)
    return fail(a, "labels must be i32");
  int64_t C = a.outType(0).shape.back();
  int64_t c0 = globalBlock(a, a.node.results[0]).offsets.back();
  int64_t n = a.inType(0).numElements();
  if (a.outType(0).dtype == DType::F32)
    k::oneHot(a.i<int32_t>(0), a.o<float>(0), n, C, c0);
  else if (a.outType(0).dtype == DType::F64)
    k::oneHot(a.i<int32_t>(0), a.o<double>(0), n, C, c0);
  else
    return fail(a, "unsupported dtype " + dtypeName(a.outType(0).dtype));
  return ok();
}
// This rank's block of `dim`: block index = its coordinates over `axes`,
// major to minor. Copies bytes, so any dtype.
llvm::Error shardSliceK(const Args &a) {
  if (!a.ctx.mesh)
    return fail(a, "shard_slice needs the launch's mesh");
  const TensorType &in = a.inType(0);
  int64_t dim = a.attrs().getInt("dim");
  if (dim < 0)
    dim += in.rank();
  int64_t index = 0;
  for (const std::string &axis : a.attrs().getStrings("axes"))
    index = index * a.ctx.mesh->axisSize(axis) +
            a.ctx.mesh->coord(a.ctx.rank, axis);
  int64_t size = a.outType(0).shape[dim];
  int64_t inner =
      numElements(llvm::ArrayRef<int64_t>(in.shape).drop_front(dim + 1)) *
      dtypeBytes(in.dtype);
  int64_t outer =
      numElements(llvm::ArrayRef<int64_t>(in.shape).take_front(dim));
  const char *x = static_cast<const char *>(a.in[0]);
  char *y = static_cast<char *>(a.out[0]);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(y + o * size * inner,
                x + (o * in.shape[dim] + index * size) * inner, size * inner);
  return ok();
}
template <typename T> struct AdamWK {
  static llvm::Error run(const Args &a) {
    int64_t n = a.inType(0).numElements();
    k::AdamWConfig cfg;
    cfg.lr = double(*a.i<T>(4));
    cfg.beta1 = a.attrs().getFloat("beta1", 0.9);
    cfg.beta2 = a.attrs().getFloat("beta2", 0.999);
    cfg.eps = a.attrs().getFloat("eps", 1e-8);
    cfg.weightDecay = a.attrs().getFloat("weight_decay", 0.0);
    int64_t t = int64_t(std::llround(double(*a.i<T>(5))));
    if (t < 1)
      return fail(a, "step must be >= 1, got " + llvm::Twine(t));
    k::adamwStep(a.i<T>(0), a.i<T>(1), a.i<T>(2), a.i<T>(3), a.o<T>(0),
                 a.o<T>(1), a.o<T>(2), n, t, cfg);
    return ok();
  }
};

// Collectives: the rank's communicators come with the launch (runtime/comm).
llvm::Error collectiveK(const Args &a) {
  return runCollective(a.g, a.node, a.in[0], a.out[0], a.ctx.comms);
}

// Pipeline messages between ranks along `axes` (runtime/comm).
llvm::Error sendK(const Args &a) {
  return runPointToPoint(a.g, a.node, a.in[0], nullptr, a.ctx.comms,
                         a.ctx.microbatch);
}
llvm::Error recvK(const Args &a) {
  return runPointToPoint(a.g, a.node, nullptr, a.out[0], a.ctx.comms,
                         a.ctx.microbatch);
}

llvm::Error fusedK(const Args &a) {
  return runFusedKernel(a.g, a.node, a.in, a.out, a.ctx);
}

// Ops that only move bytes.
llvm::Error copyK(const Args &a) {
  std::memcpy(a.out[0], a.in[0], a.outType(0).bytes());
  return ok();
}

llvm::Error iotaK(const Args &a) {
  const TensorType &t = a.outType(0);
  int64_t dim = a.attrs().getInt("dim");
  if (dim < 0)
    dim += t.rank();
  int64_t inner =
      numElements(llvm::ArrayRef<int64_t>(t.shape).drop_front(dim + 1));
  int64_t size = t.shape[dim];
  for (int64_t j = 0, n = t.numElements(); j < n; ++j) {
    int64_t v = (j / inner) % size;
    if (t.dtype == DType::I32)
      a.o<int32_t>(0)[j] = int32_t(v);
    else if (t.dtype == DType::I64)
      a.o<int64_t>(0)[j] = v;
    else if (t.dtype == DType::F32)
      a.o<float>(0)[j] = float(v);
    else if (t.dtype == DType::F64)
      a.o<double>(0)[j] = double(v);
    else
      return fail(a, "unsupported dtype");
  }
  return ok();
}

llvm::Error castK(const Args &a) {
  DType from = a.inType(0).dtype, to = a.outType(0).dtype;
  int64_t n = a.inType(0).numElements();
  // 16-bit <-> f32 are the casts of mixed precision: bulk conversions.
  if (isFloat16(from) && to == DType::F32) {
    toFloat(from, a.in[0], a.o<float>(0), n);
    return ok();
  }
  if (from == DType::F32 && isFloat16(to)) {
    fromFloat(to, a.i<float>(0), a.out[0], n);
    return ok();
  }
  auto load = [&](int64_t j) -> double {
    switch (from) {
    case DType::F32:
      return a.i<float>(0)[j];
    case DType::F64:
      return a.i<double>(0)[j];
    case DType::BF16:
      return k::bf16ToFloat(a.i<uint16_t>(0)[j]);
    case DType::F16:
      return k::halfToFloat(a.i<uint16_t>(0)[j]);
    case DType::I32:
      return a.i<int32_t>(0)[j];
    case DType::I64:
      return double(a.i<int64_t>(0)[j]);
    default:
      return 0;
    }
  };
  for (int64_t j = 0; j < n; ++j) {
    double v = load(j);
    switch (to) {
    case DType::F32:
      a.o<float>(0)[j] = float(v);
      break;
    case DType::F64:
      a.o<double>(0)[j] = v;
      break;
    // Via f32, as PyTorch casts f64 to 16 bits (double rounding is at most
    // one 16-bit ulp in rare ties; no plan casts f64 to 16 bits).
    case DType::BF16:
      a.o<uint16_t>(0)[j] = k::floatToBf16(float(v));
      break;
    case DType::F16:
      a.o<uint16_t>(0)[j] = k::floatToHalf(float(v));
      break;
    case DType::I32:
      a.o<int32_t>(0)[j] = int32_t(v);
      break;
    case DType::I64:
      a.o<int64_t>(0)[j] = int64_t(v);
      break;
    default:
      return fail(a, "unsupported cast");
    }
  }
  return ok();
}

// Every op has a case and there is no default, so -Wswitch flags an op added
// to ir/Ops.def without a CPU kernel decision. nullptr = not on this device.
KernelFn kernelFor(OpKind op) {
#define FLOAT(Body) &floatDispatch<Body>
  switch (op) {
  case OpKind::Neg:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Tanh:
  case OpKind::Sigmoid:
  case OpKind::Relu:
  case OpKind::Gelu:
  case OpKind::Silu:
  case OpKind::Square:
    return FLOAT(Unary);
  case OpKind::Scale:
    return FLOAT(ScaleK);
  case OpKind::Cast:
    return castK;
  case OpKind::GeluGrad:
  case OpKind::SiluGrad:
  case OpKind::ReluGrad:
    return FLOAT(UnaryGrad);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Maximum:
  case OpKind::Minimum:
    return FLOAT(Binary);
  case OpKind::Fill:
    return FLOAT(FillK);
  case OpKind::Iota:
    return iotaK;
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMean:
    return FLOAT(ReduceK);
  case OpKind::MatMul:
    return FLOAT(MatMulK);
  case OpKind::Reshape:
    return copyK;
  case OpKind::Transpose:
    return FLOAT(TransposeK);
  case OpKind::Broadcast:
    return FLOAT(BroadcastK);
  case OpKind::Slice:
    return FLOAT(SliceK);
  case OpKind::Concat:
    return FLOAT(ConcatK);
  case OpKind::Gather:
    return FLOAT(GatherK);
  case OpKind::ScatterAdd:
    return FLOAT(ScatterAddK);
  case OpKind::LayerNorm:
    return FLOAT(LayerNormK);
  case OpKind::LayerNormGrad:
    return FLOAT(LayerNormGradK);
  case OpKind::RmsNorm:
    return FLOAT(RmsNormK);
  case OpKind::RmsNormGrad:
    return FLOAT(RmsNormGradK);
  case OpKind::Softmax:
    return FLOAT(SoftmaxK);
  case OpKind::SoftmaxGrad:
    return FLOAT(SoftmaxGradK);
  case OpKind::Attention:
    return FLOAT(AttentionK);
  case OpKind::AttentionGrad:
    return FLOAT(AttentionGradK);
  case OpKind::Rope:
    return FLOAT(RopeK);
  case OpKind::Dropout:
  case OpKind::DropoutGrad:
    return FLOAT(DropoutK);
  case OpKind::CrossEntropy:
    return FLOAT(CrossEntropyK);
  case OpKind::CrossEntropyGrad:
    return FLOAT(CrossEntropyGradK);
  case OpKind::AdamWUpdate:
    return FLOAT(AdamWK);
  case OpKind::AllReduce:
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
  case OpKind::AllToAll:
  case OpKind::BroadcastFrom:
    return collectiveK;
  case OpKind::Send:
    return sendK;
  case OpKind::Recv:
    return recvK;
  case OpKind::ShardSlice:
    return shardSliceK;
  case OpKind::PickLabel:
    return FLOAT(PickLabelK);
  case OpKind::OneHot:
    return oneHotK;
  case OpKind::Fused:
    return fusedK;
  }
#undef FLOAT
  return nullptr;
}
} // namespace

bool cpuKernelSupports(const Graph &g, const Node &node) {
  if (node.op == OpKind::Fused)
    return fusedKernelSupports(node);
  return kernelFor(node.op) != nullptr;
}

llvm::Error runCpuKernel(const Graph &g, const Node &node,
                         llvm::ArrayRef<const void *> operands,
                         llvm::ArrayRef<void *> results,
                         const LaunchContext &ctx) {
  KernelFn fn = kernelFor(node.op);
  if (!fn)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "no CPU kernel for " + opName(node.op));
  return fn(Args{g, node, operands, results, ctx});
}

} // namespace strata
