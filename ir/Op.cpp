//===- Op.cpp - The op table and shape inference
//---------------------------===//
//
// One switch per table column; every switch covers every op (the compiler
// warns on a missing case since none has a default).
//
//===----------------------------------------------------------------------===//
#include "ir/Op.h"

#include "llvm/ADT/StringMap.h"

#include <numeric>

namespace strata {

namespace {
struct OpInfo {
  const char *name;
  int numOperands;
  int numResults;
};
constexpr OpInfo kOpInfo[] = {
#define OP(Enum, Name, NumOperands, NumResults) {Name, NumOperands, NumResults},
#include "ir/Ops.def"
};
static_assert(sizeof(kOpInfo) / sizeof(kOpInfo[0]) == kNumOps);
} // namespace

llvm::StringRef opName(OpKind k) { return kOpInfo[int(k)].name; }
int opNumOperands(OpKind k) { return kOpInfo[int(k)].numOperands; }
int opNumResults(OpKind k) { return kOpInfo[int(k)].numResults; }

std::optional<OpKind> parseOpName(llvm::StringRef name) {
  static const llvm::StringMap<OpKind> table = [] {
    llvm::StringMap<OpKind> m;
    for (int i = 0; i < kNumOps; ++i)
      m[kOpInfo[i].name] = OpKind(i);
    return m;
  }();
  auto it = table.find(name);
  if (it == table.end())
    return std::nullopt;
  return it->second;
}

bool isElementwiseUnary(OpKind k) {
  return k >= OpKind::Neg && k <= OpKind::Cast;
}
bool isElementwiseBinary(OpKind k) {
  return k >= OpKind::Add && k <= OpKind::Minimum;
}
bool isCollective(OpKind k) {
  return k >= OpKind::AllReduce && k <= OpKind::Recv;
}
bool isPartitionOp(OpKind k) {
  return k >= OpKind::ShardSlice && k <= OpKind::OneHot;
}
int rowOpOperands(OpKind k) {
  switch (k) {
  case OpKind::Softmax:
  case OpKind::LayerNorm:
  case OpKind::RmsNorm:
    return 1;
  case OpKind::SoftmaxGrad:
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad:
    return 2;
  default:
    return 0;
  }
}

std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                     llvm::ArrayRef<int64_t> b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {
using Types = llvm::SmallVector<TensorType, 1>;

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string shapeStr(llvm::ArrayRef<int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// Normalizes a possibly negative axis; -1 if out of range.
int64_t normAxis(int64_t axis, int64_t rank) {
  if (axis < 0)
    axis += rank;
  return axis >= 0 && axis < rank ? axis : -1;
}

llvm::Error sameType(const TensorType &a, const TensorType &b,
                     const char *what) {
  if (a != b)
    return err(llvm::Twine(what) + " must have the same type, got " + a.str() +
               " and " + b.str());
  return llvm::Error::success();
}

// Product of the sizes of the mesh axes named by attribute "axes".
llvm::Expected<int64_t> groupSize(const Attrs &attrs, const Mesh *mesh) {
  StrList axes = attrs.getStrings("axes");
  if (axes.empty())
    return err("collective needs a non-empty 'axes' attribute");
  if (!mesh)
    return err("collective over axes needs a graph mesh");
  int64_t n = 1;
  for (const std::string &a : axes) {
    if (mesh->axisIndex(a) < 0)
      return err("mesh has no axis '" + a + "'");
    n *= mesh->axisSize(a);
  }
  return n;
}

llvm::Expected<Types> inferImpl(OpKind k, llvm::ArrayRef<TensorType> in,
                                const Attrs &attrs, const Mesh *mesh) {
  auto firstType = [&]() -> Types { return {in[0]}; };
  switch (k) {
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
  case OpKind::Scale:
    if (!isFloat(in[0].dtype))
      return err("operand must be a float tensor");
    return firstType();
  case OpKind::Cast: {
    auto dt = parseDType(attrs.getString("dtype"));
    if (!dt)
      return err("cast needs a valid 'dtype' attribute");
    return Types{TensorType{*dt, in[0].shape}};
  }
  case OpKind::GeluGrad:
  case OpKind::SiluGrad:
  case OpKind::ReluGrad:
  case OpKind::SoftmaxGrad:
    if (auto e = sameType(in[0], in[1], "dy and x"))
      return e;
    return firstType();
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Maximum:
  case OpKind::Minimum: {
    if (in[0].dtype != in[1].dtype)
      return err("operand dtypes differ: " + in[0].str() + " and " +
                 in[1].str());
    auto s = broadcastShapes(in[0].shape, in[1].shape);
    if (!s)
      return err("shapes " + shapeStr(in[0].shape) + " and " +
                 shapeStr(in[1].shape) + " do not broadcast");
    return Types{TensorType{in[0].dtype, *s}};
  }
  case OpKind::Fill:
  case OpKind::Iota: {
    auto dt =
        parseDType(attrs.getString("dtype", k == OpKind::Iota ? "i32" : "f32"));
    if (!dt)
      return err("invalid 'dtype' attribute");
    IntList shape = attrs.getInts("shape");
    for (int64_t d : shape)
      if (d <= 0)
        return err("shape dims must be positive");
    if (k == OpKind::Iota &&
        normAxis(attrs.getInt("dim"), int64_t(shape.size())) < 0)
      return err("iota 'dim' out of range");
    return Types{TensorType{*dt, Shape(shape.begin(), shape.end())}};
  }
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMean: {
    int64_t r = in[0].rank();
    IntList axes = attrs.getInts("axes");
    llvm::SmallVector<bool, 8> reduced(r, axes.empty());
    for (int64_t a : axes) {
      int64_t n = normAxis(a, r);
      if (n < 0)
        return err("reduction axis " + std::to_string(a) +
                   " out of range for rank " + std::to_string(r));
      reduced[n] = true;
    }
    bool keep = attrs.getBool("keepdim");
    Shape out;
    for (int64_t i = 0; i < r; ++i) {
      if (!reduced[i])
        out.push_back(in[0].shape[i]);
      else if (keep)
        out.push_back(1);
    }
    return Types{TensorType{in[0].dtype, out}};
  }
  case OpKind::MatMul: {
    if (in.size() != 2 && in.size() != 3)
      return err("matmul takes 2 operands (a, b) or 3 (a, b, acc), got " +
                 std::to_string(in.size()));
    const TensorType &a = in[0], &b = in[1];
    if (a.rank() < 2 || b.rank() < 2)
      return err("matmul operands need rank >= 2");
    if (a.dtype != b.dtype)
      return err("matmul operand dtypes differ");
    bool ta = attrs.getBool("transpose_a"), tb = attrs.getBool("transpose_b");
    int64_t m = a.shape[a.rank() - (ta ? 1 : 2)];
    int64_t ka = a.shape[a.rank() - (ta ? 2 : 1)];
    int64_t kb = b.shape[b.rank() - (tb ? 1 : 2)];
    int64_t n = b.shape[b.rank() - (tb ? 2 : 1)];
    if (ka != kb)
      return err("contraction dims differ: " + a.str() + " and " + b.str() +
                 (ta || tb ? " (with transposes)" : ""));
    if (b.rank() > 2 &&
        !llvm::equal(llvm::ArrayRef<int64_t>(a.shape).drop_back(2),
                     llvm::ArrayRef<int64_t>(b.shape).drop_back(2)))
      return err("batch dims differ: " + a.str() + " and " + b.str());
    Shape out(a.shape.begin(), a.shape.end() - 2);
    out.push_back(m);
    out.push_back(n);
    TensorType product{a.dtype, out};
    if (in.size() == 3) {
      // 16-bit operands may accumulate into f32 (Megatron's main_grad).
      if ((a.dtype == DType::BF16 || a.dtype == DType::F16) &&
          in[2].dtype == DType::F32)
        product.dtype = DType::F32;
      if (in[2] != product)
        return err("matmul accumulator " + in[2].str() +
                   " is not the product's type " + product.str() +
                   (a.dtype == DType::BF16 || a.dtype == DType::F16
                        ? " (or f32)"
                        : ""));
    }
    return Types{product};
  }
  case OpKind::Reshape: {
    IntList shape = attrs.getInts("shape");
    std::optional<int64_t> count = checkedNumElements(shape);
    if (!count || *count != in[0].numElements())
      return err("reshape from " + shapeStr(in[0].shape) + " to " +
                 shapeStr(shape) + " changes the element count");
    return Types{TensorType{in[0].dtype, Shape(shape.begin(), shape.end())}};
  }
  case OpKind::Transpose: {
    IntList perm = attrs.getInts("perm");
    if (int64_t(perm.size()) != in[0].rank())
      return err("'perm' length differs from operand rank");
    llvm::SmallVector<bool, 8> seen(perm.size());
    Shape out;
    for (int64_t p : perm) {
      if (p < 0 || p >= in[0].rank() || seen[p])
        return err("'perm' is not a permutation");
      seen[p] = true;
      out.push_back(in[0].shape[p]);
    }
    return Types{TensorType{in[0].dtype, out}};
  }
  case OpKind::Broadcast: {
    IntList shape = attrs.getInts("shape");
    auto s = broadcastShapes(in[0].shape, shape);
    if (!s || !llvm::equal(*s, shape))
      return err("cannot broadcast " + shapeStr(in[0].shape) + " to " +
                 shapeStr(shape));
    return Types{TensorType{in[0].dtype, *s}};
  }
  case OpKind::Slice: {
    int64_t d = normAxis(attrs.getInt("dim"), in[0].rank());
    int64_t start = attrs.getInt("start"), size = attrs.getInt("size");
    if (d < 0)
      return err("slice 'dim' out of range");
    if (start < 0 || size <= 0 || start + size > in[0].shape[d])
      return err("slice [" + std::to_string(start) + ", " +
                 std::to_string(start + size) + ") out of bounds of dim size " +
                 std::to_string(in[0].shape[d]));
    TensorType t = in[0];
    t.shape[d] = size;
    return Types{t};
  }
  case OpKind::Concat: {
    if (in.empty())
      return err("concat needs at least one operand");
    int64_t d = normAxis(attrs.getInt("dim"), in[0].rank());
    if (d < 0)
      return err("concat 'dim' out of range");
    TensorType t = in[0];
    for (size_t i = 1; i < in.size(); ++i) {
      if (in[i].dtype != t.dtype || in[i].rank() != t.rank())
        return err("concat operands differ in dtype or rank");
      for (int64_t j = 0; j < t.rank(); ++j)
        if (j != d && in[i].shape[j] != t.shape[j])
          return err("concat operands differ outside the concat dim");
      t.shape[d] += in[i].shape[d];
    }
    return Types{t};
  }
  case OpKind::Gather: {
    if (in[0].rank() != 2)
      return err("gather table must be rank 2 [V,H]");
    if (in[1].dtype != DType::I32 && in[1].dtype != DType::I64)
      return err("gather ids must be i32 or i64");
    Shape out = in[1].shape;
    out.push_back(in[0].shape[1]);
    return Types{TensorType{in[0].dtype, out}};
  }
  case OpKind::ScatterAdd: {
    if (in[1].dtype != DType::I32 && in[1].dtype != DType::I64)
      return err("scatter_add ids must be i32 or i64");
    if (in[0].rank() != in[1].rank() + 1 ||
        !llvm::equal(llvm::ArrayRef<int64_t>(in[0].shape).drop_back(),
                     in[1].shape))
      return err("scatter_add dy " + in[0].str() + " does not match ids " +
                 in[1].str());
    int64_t rows = attrs.getInt("rows");
    if (rows <= 0)
      return err("scatter_add needs a positive 'rows'");
    return Types{TensorType{in[0].dtype, {rows, in[0].shape.back()}}};
  }
  case OpKind::LayerNorm:
  case OpKind::RmsNorm: {
    int64_t c = in[0].rank() ? in[0].shape.back() : 0;
    for (size_t i = 1; i < in.size(); ++i)
      if (in[i].rank() != 1 || in[i].shape[0] != c ||
          in[i].dtype != in[0].dtype)
        return err("norm weight/bias must be " +
                   std::string(dtypeName(in[0].dtype)) + "[" +
                   std::to_string(c) + "], got " + in[i].str());
    return firstType();
  }
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad: {
    if (auto e = sameType(in[0], in[1], "dy and x"))
      return e;
    Types out{in[1]};
    for (size_t i = 2; i < in.size(); ++i)
      out.push_back(in[i]);
    return out;
  }
  case OpKind::Softmax:
    if (in[0].rank() < 1)
      return err("softmax needs rank >= 1");
    return firstType();
  case OpKind::Attention:
  case OpKind::AttentionGrad: {
    size_t o = k == OpKind::AttentionGrad ? 1 : 0;
    const TensorType &q = in[o], &kk = in[o + 1], &v = in[o + 2];
    if (q.rank() != 4 || kk.rank() != 4 || v != kk)
      return err(
          "attention wants q[B,S,Hq,D], k and v [B,S,Hkv,D] of one type");
    if (q.shape[0] != kk.shape[0] || q.shape[3] != kk.shape[3])
      return err("q " + q.str() + " and k " + kk.str() + " differ in B or D");
    if (q.shape[2] % kk.shape[2] != 0)
      return err("query heads " + std::to_string(q.shape[2]) +
                 " not a multiple of kv heads " + std::to_string(kk.shape[2]));
    if (q.shape[1] != kk.shape[1])
      return err("self-attention needs equal q and kv lengths, got " +
                 std::to_string(q.shape[1]) + " and " +
                 std::to_string(kk.shape[1]));
    if (o) {
      if (auto e = sameType(in[0], q, "dout and q"))
        return e;
      return Types{q, kk, v};
    }
    return Types{q};
  }
  case OpKind::Rope: {
    if (in[0].rank() != 4 || in[0].shape[3] % 2)
      return err("rope wants x[B,S,H,D] with even D, got " + in[0].str());
    bool scaled = attrs.has("scaling");
    if (scaled && attrs.getString("scaling") != "llama3")
      return err("rope 'scaling' must be \"llama3\" (the only frequency "
                 "scaling strata implements)");
    for (const char *a : {"factor", "low_freq_factor", "high_freq_factor",
                          "original_max_positions"})
      if (attrs.has(a) != scaled)
        return err(
            llvm::Twine("rope '") + a + "' " +
            (scaled ? "is required by scaling=\"llama3\""
                    : "is a scaling attribute: it needs scaling=\"llama3\""));
    if (scaled && !(attrs.getFloat("factor") > 0 &&
                    attrs.getFloat("low_freq_factor") > 0 &&
                    attrs.getFloat("high_freq_factor") >
                        attrs.getFloat("low_freq_factor") &&
                    attrs.getInt("original_max_positions") > 0))
      return err("rope llama3 scaling needs factor > 0, high_freq_factor > "
                 "low_freq_factor > 0 and original_max_positions > 0");
    return firstType();
  }
  case OpKind::Dropout:
  case OpKind::DropoutGrad: {
    double p = attrs.getFloat("p");
    if (p < 0 || p >= 1)
      return err("dropout 'p' must be in [0, 1)");
    return firstType();
  }
  case OpKind::CrossEntropy:
  case OpKind::CrossEntropyGrad: {
    size_t o = k == OpKind::CrossEntropyGrad ? 1 : 0;
    const TensorType &logits = in[o], &labels = in[o + 1];
    if (labels.dtype != DType::I32 && labels.dtype != DType::I64)
      return err("labels must be i32 or i64");
    if (logits.rank() != labels.rank() + 1 ||
        !llvm::equal(llvm::ArrayRef<int64_t>(logits.shape).drop_back(),
                     labels.shape))
      return err("logits " + logits.str() + " do not match labels " +
                 labels.str());
    if (o) {
      if (in[0].rank() != 0)
        return err("dloss must be a scalar");
      return Types{logits};
    }
    return Types{TensorType{logits.dtype, {}}};
  }
  case OpKind::AdamWUpdate:
    for (int i = 1; i < 4; ++i)
      if (auto e = sameType(in[0], in[i], "p, g, m and v"))
        return e;
    if (in[4].rank() != 0 || in[5].rank() != 0)
      return err("lr and step must be scalars");
    return Types{in[0], in[2], in[3]};
  case OpKind::AllReduce:
  case OpKind::BroadcastFrom: {
    auto n = groupSize(attrs, mesh);
    if (!n)
      return n.takeError();
    return firstType();
  }
  case OpKind::AllGather:
  case OpKind::ReduceScatter: {
    auto n = groupSize(attrs, mesh);
    if (!n)
      return n.takeError();
    int64_t d = normAxis(attrs.getInt("dim"), in[0].rank());
    if (d < 0)
      return err("'dim' out of range");
    TensorType t = in[0];
    if (k == OpKind::AllGather) {
      t.shape[d] *= *n;
    } else {
      if (t.shape[d] % *n)
        return err("dim size " + std::to_string(t.shape[d]) +
                   " not divisible by group size " + std::to_string(*n));
      t.shape[d] /= *n;
    }
    return Types{t};
  }
  case OpKind::AllToAll: {
    auto n = groupSize(attrs, mesh);
    if (!n)
      return n.takeError();
    int64_t s = normAxis(attrs.getInt("split_dim"), in[0].rank());
    int64_t c = normAxis(attrs.getInt("concat_dim"), in[0].rank());
    if (s < 0 || c < 0)
      return err("split/concat dim out of range");
    TensorType t = in[0];
    if (t.shape[s] % *n)
      return err("split dim not divisible by group size");
    t.shape[s] /= *n;
    t.shape[c] *= *n;
    return Types{t};
  }
  case OpKind::ShardSlice: {
    auto n = groupSize(attrs, mesh);
    if (!n)
      return n.takeError();
    int64_t d = normAxis(attrs.getInt("dim"), in[0].rank());
    if (d < 0)
      return err("'dim' out of range");
    TensorType t = in[0];
    if (t.shape[d] % *n)
      return err("dim size " + std::to_string(t.shape[d]) +
                 " not divisible by group size " + std::to_string(*n));
    t.shape[d] /= *n;
    return Types{t};
  }
  case OpKind::PickLabel: {
    const TensorType &x = in[0], &labels = in[1];
    if (!isFloat(x.dtype))
      return err("pick_label x must be a float tensor");
    if (labels.dtype != DType::I32 && labels.dtype != DType::I64)
      return err("labels must be i32 or i64");
    if (x.rank() != labels.rank() + 1 ||
        !llvm::equal(llvm::ArrayRef<int64_t>(x.shape).drop_back(),
                     labels.shape))
      return err("x " + x.str() + " does not match labels " + labels.str());
    return Types{TensorType{x.dtype, labels.shape}};
  }
  case OpKind::OneHot: {
    if (in[0].dtype != DType::I32 && in[0].dtype != DType::I64)
      return err("labels must be i32 or i64");
    auto dt = parseDType(attrs.getString("dtype", "f32"));
    if (!dt || !isFloat(*dt))
      return err("one_hot needs a float 'dtype'");
    int64_t classes = attrs.getInt("classes");
    if (classes <= 0)
      return err("one_hot needs a positive 'classes'");
    Shape out = in[0].shape;
    out.push_back(classes);
    return Types{TensorType{*dt, out}};
  }
  case OpKind::Send:
    return Types{};
  case OpKind::Fused:
    return err("fused result types come from its body (verifyFusedNode)");
  case OpKind::Recv: {
    auto dt = parseDType(attrs.getString("dtype", "f32"));
    if (!dt)
      return err("invalid 'dtype' attribute");
    IntList shape = attrs.getInts("shape");
    return Types{TensorType{*dt, Shape(shape.begin(), shape.end())}};
  }
  }
  return err("unknown op");
}
} // namespace

llvm::Expected<Types> inferResultTypes(OpKind k,
                                       llvm::ArrayRef<TensorType> operands,
                                       const Attrs &attrs, const Mesh *mesh) {
  int want = opNumOperands(k);
  if (want >= 0 && int(operands.size()) != want)
    return err(opName(k) + " takes " + std::to_string(want) +
               " operands, got " + std::to_string(operands.size()));
  return inferImpl(k, operands, attrs, mesh);
}

} // namespace strata
