//===- GradCheckTest.cpp - Autodiff against finite differences, in f64 ----===//
//
// For every differentiable op: a tiny f64 graph loss = reduce_sum(op(x...) * R)
// (R a fixed random data input, so every output element weighs differently),
// the autodiff pass, the CPU interpreter, and central differences of the
// forward graph for every element of every param.
//
// Tolerance. Central differences with h = 1e-6 err by h^2 |f'''| / 6 ~ 1e-12
// (truncation) plus ~ eps64 |loss| / h ~ 2e-16 * 50 / 1e-6 = 1e-8 (rounding),
// since |loss| stays below ~50 here. We require |analytic - numeric| <=
// 1e-6 (1 + |numeric|): 100x above that noise, far below the O(0.1) error of a
// wrong rule. Inputs stay away from kinks (|x| in [0.5, 1.5] for relu, random
// pairs for maximum/minimum, reduce_max), where f is smooth within h.
//
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "ir/IRText.h"
#include "ir/Verifier.h"
#include "passes/autodiff/Autodiff.h"
#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

namespace strata {
namespace {

/// How an input of a case is filled.
enum class Dist {
  Signed,   // param, uniform in +-[0.5, 1.5]
  Positive, // param, uniform in [0.5, 1.5] (log, sqrt, rsqrt, div)
  Ids,      // i32 data, uniform in [0, range)
};

struct InputSpec {
  std::string name;
  Shape shape;
  Dist dist = Dist::Signed;
  int64_t range = 0;
};

using Body = std::function<ValueId(Builder &, llvm::ArrayRef<ValueId>)>;

struct GradCase {
  std::string name;
  std::vector<InputSpec> inputs;
  Body body;
};

constexpr double kH = 1e-6;
constexpr double kTol = 1e-6;

std::string where(const Graph &g, ValueId v, int64_t flat) {
  const Shape &s = g.type(v).shape;
  llvm::SmallVector<int64_t, 4> idx(s.size());
  for (int64_t d = int64_t(s.size()) - 1; d >= 0; --d) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  std::string out = "%" + g.value(v).name + "[";
  for (size_t d = 0; d < idx.size(); ++d)
    out += (d ? "," : "") + std::to_string(idx[d]);
  return out + "]";
}

// gtest prints a case by its name.
void PrintTo(const GradCase &c, std::ostream *os) { *os << c.name; }

class GradCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradCheck, MatchesCentralDifferences) {
  const GradCase &c = GetParam();
  std::mt19937_64 rng(0x5eed);
  std::uniform_real_distribution<double> mag(0.5, 1.5);

  Graph g;
  g.name = "gradcheck";
  llvm::SmallVector<ValueId> ins;
  std::vector<HostTensor> values;
  for (const InputSpec &in : c.inputs) {
    bool ids = in.dist == Dist::Ids;
    TensorType t{ids ? DType::I32 : DType::F64, in.shape};
    Attrs attrs;
    if (!ids)
      attrs.set("param", true);
    ins.push_back(g.addInput(in.name, t, attrs));
    HostTensor h(t);
    for (int64_t i = 0; i < h.numElements(); ++i) {
      if (ids) {
        h.set(i, double(rng() % uint64_t(in.range)));
      } else {
        double sign = in.dist == Dist::Signed && rng() % 2 ? -1.0 : 1.0;
        h.set(i, sign * mag(rng));
      }
    }
    values.push_back(std::move(h));
  }
  Builder b(g);
  b.setScope("f");
  ValueId y = c.body(b, ins);
  ValueId r = g.addInput("r", g.type(y));
  HostTensor rv(g.type(y));
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int64_t i = 0; i < rv.numElements(); ++i)
    rv.set(i, unit(rng));
  values.push_back(rv);
  b.setScope("loss");
  g.setOutputs({b.reduceSum(b.mul(y, r), {})});

  Graph fwd = g;
  ASSERT_FALSE(bool(verifyGraph(fwd)));
  llvm::Error e = differentiate(g);
  ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
  if (llvm::Error v = verifyGraph(g))
    FAIL() << llvm::toString(std::move(v)) << "\n" << graphToString(g);

  CpuDevice dev;
  auto bwdInterp = Executable::create(g, dev);
  ASSERT_TRUE(bool(bwdInterp)) << llvm::toString(bwdInterp.takeError());
  auto fwdInterp = Executable::create(fwd, dev);
  ASSERT_TRUE(bool(fwdInterp)) << llvm::toString(fwdInterp.takeError());
  auto outs = (*bwdInterp)->runHost(values);
  ASSERT_TRUE(bool(outs)) << llvm::toString(outs.takeError());
  auto lossAt = [&](std::vector<HostTensor> &vals) {
    auto o = (*fwdInterp)->runHost(vals);
    EXPECT_TRUE(bool(o)) << llvm::toString(o.takeError());
    return o ? (*o)[0].get(0) : NAN;
  };

  size_t gradIndex = 1;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].dist == Dist::Ids)
      continue;
    const HostTensor &grad = (*outs)[gradIndex++];
    ASSERT_EQ(grad.type(), g.type(ins[i]));
    double worst = -1, worstA = 0, worstN = 0;
    int64_t worstAt = 0;
    for (int64_t j = 0; j < grad.numElements(); ++j) {
      double x0 = values[i].get(j);
      values[i].set(j, x0 + kH);
      double up = lossAt(values);
      values[i].set(j, x0 - kH);
      double down = lossAt(values);
      values[i].set(j, x0);
      double numeric = (up - down) / (2 * kH), analytic = grad.get(j);
      double err = std::abs(analytic - numeric) / (1 + std::abs(numeric));
      if (err > worst) {
        worst = err;
        worstAt = j;
        worstA = analytic;
        worstN = numeric;
      }
    }
    std::string at = where(g, ins[i], worstAt);
    std::printf("[gradcheck] %-24s worst %.2e at %s (analytic %.9g, numeric "
                "%.9g)\n",
                c.name.c_str(), worst, at.c_str(), worstA, worstN);
    EXPECT_LE(worst, kTol) << "worst element " << at << ": analytic " << worstA
                           << ", numeric " << worstN << "\n"
                           << graphToString(g);
  }
}

// Shorthands for the case table.
InputSpec in(std::string name, Shape shape, Dist d = Dist::Signed) {
  return {std::move(name), std::move(shape), d, 0};
}
InputSpec ids(std::string name, Shape shape, int64_t range) {
  return {std::move(name), std::move(shape), Dist::Ids, range};
}
Body op(OpKind k, Attrs attrs = {}) {
  return [k, attrs](Builder &b, llvm::ArrayRef<ValueId> xs) {
    return b.create1(k, xs, attrs);
  };
}
ValueId gptLayer(Builder &b, llvm::ArrayRef<ValueId> p);

std::vector<GradCase> cases() {
  using O = OpKind;
  Shape s23{2, 3}, s234{2, 3, 4};
  std::vector<GradCase> cs = {
      // Elementwise unary.
      {"neg", {in("x", s23)}, op(O::Neg)},
      {"exp", {in("x", s23)}, op(O::Exp)},
      {"log", {in("x", s23, Dist::Positive)}, op(O::Log)},
      {"sqrt", {in("x", s23, Dist::Positive)}, op(O::Sqrt)},
      {"rsqrt", {in("x", s23, Dist::Positive)}, op(O::Rsqrt)},
      {"tanh", {in("x", s23)}, op(O::Tanh)},
      {"sigmoid", {in("x", s23)}, op(O::Sigmoid)},
      {"relu", {in("x", s234)}, op(O::Relu)},
      {"gelu_tanh",
       {in("x", s23)},
       op(O::Gelu, {{"approx", std::string("tanh")}})},
      {"gelu_erf",
       {in("x", s23)},
       op(O::Gelu, {{"approx", std::string("none")}})},
      {"silu", {in("x", s23)}, op(O::Silu)},
      {"square", {in("x", s23)}, op(O::Square)},
      {"scale", {in("x", s23)}, op(O::Scale, {{"value", -1.7}})},
      // f64 -> f64: checks the rule's wiring; f32 would drown FD in rounding.
      {"cast", {in("x", s23)}, op(O::Cast, {{"dtype", std::string("f64")}})},
      // Elementwise binary, with and without broadcasting.
      {"add_same", {in("a", s23), in("b", s23)}, op(O::Add)},
      {"add_bcast_trailing", {in("a", s234), in("b", {4})}, op(O::Add)},
      {"add_bcast_both", {in("a", {2, 1, 4}), in("b", {3, 1})}, op(O::Add)},
      {"sub_bcast", {in("a", s234), in("b", {3, 1})}, op(O::Sub)},
      {"mul_same", {in("a", s23), in("b", s23)}, op(O::Mul)},
      {"mul_bcast", {in("a", s234), in("b", {1, 3, 1})}, op(O::Mul)},
      {"div_bcast", {in("a", s234), in("b", {4}, Dist::Positive)}, op(O::Div)},
      {"maximum_bcast", {in("a", s23), in("b", {3})}, op(O::Maximum)},
      {"minimum", {in("a", s234), in("b", s234)}, op(O::Minimum)},
      // Reductions.
      {"reduce_sum_axis",
       {in("x", s234)},
       op(O::ReduceSum, {{"axes", IntList{1}}})},
      {"reduce_sum_keepdim",
       {in("x", s234)},
       op(O::ReduceSum, {{"axes", IntList{-1}}, {"keepdim", true}})},
      {"reduce_sum_all", {in("x", s234)}, op(O::ReduceSum)},
      {"reduce_mean",
       {in("x", s234)},
       op(O::ReduceMean, {{"axes", IntList{0, 2}}})},
      {"reduce_max_axis",
       {in("x", s234)},
       op(O::ReduceMax, {{"axes", IntList{1}}})},
      {"reduce_max_all", {in("x", s234)}, op(O::ReduceMax)},
      // Matmul: transposes, batches, and a rank-2 rhs shared over batches.
      {"matmul", {in("a", {3, 4}), in("b", {4, 5})}, op(O::MatMul)},
      {"matmul_ta",
       {in("a", {4, 3}), in("b", {4, 5})},
       op(O::MatMul, {{"transpose_a", true}})},
      {"matmul_tb",
       {in("a", {3, 4}), in("b", {5, 4})},
       op(O::MatMul, {{"transpose_b", true}})},
      {"matmul_ta_tb",
       {in("a", {4, 3}), in("b", {5, 4})},
       op(O::MatMul, {{"transpose_a", true}, {"transpose_b", true}})},
      {"matmul_batched_tb",
       {in("a", s234), in("b", {2, 5, 4})},
       op(O::MatMul, {{"transpose_b", true}})},
      {"matmul_shared_rhs", {in("a", s234), in("b", {4, 5})}, op(O::MatMul)},
      {"matmul_shared_rhs_tb",
       {in("a", s234), in("b", {5, 4})},
       op(O::MatMul, {{"transpose_b", true}})},
      {"matmul_shared_rhs_ta",
       {in("a", {2, 4, 3}), in("b", {4, 5})},
       op(O::MatMul, {{"transpose_a", true}})},
      {"matmul_shared_rhs_ta_tb",
       {in("a", {2, 4, 3}), in("b", {5, 4})},
       op(O::MatMul, {{"transpose_a", true}, {"transpose_b", true}})},
      {"matmul_shared_rhs_rank4",
       {in("a", {2, 2, 3, 4}), in("b", {4, 5})},
       op(O::MatMul)},
      // With an accumulator (grad-accumulation-fusion's form): acc + a b.
      {"matmul_acc",
       {in("a", {3, 4}), in("b", {4, 5}), in("acc", {3, 5})},
       op(O::MatMul)},
      {"matmul_acc_shared_rhs_ta",
       {in("a", {2, 4, 3}), in("b", {4, 5}), in("acc", {2, 3, 5})},
       op(O::MatMul, {{"transpose_a", true}})},
      // Shape ops.
      {"reshape", {in("x", s234)}, op(O::Reshape, {{"shape", IntList{6, 4}}})},
      {"transpose",
       {in("x", s234)},
       op(O::Transpose, {{"perm", IntList{2, 0, 1}}})},
      {"broadcast",
       {in("x", {3, 1})},
       op(O::Broadcast, {{"shape", IntList{2, 3, 4}}})},
      {"slice_middle",
       {in("x", {2, 4, 3})},
       op(O::Slice,
          {{"dim", int64_t(1)}, {"start", int64_t(1)}, {"size", int64_t(2)}})},
      {"slice_prefix_negdim",
       {in("x", {2, 4, 3})},
       op(O::Slice,
          {{"dim", int64_t(-1)}, {"start", int64_t(0)}, {"size", int64_t(2)}})},
      {"concat",
       {in("a", {2, 1, 3}), in("b", {2, 2, 3}), in("c", {2, 3, 3})},
       op(O::Concat, {{"dim", int64_t(1)}})},
      // Embedding: ids repeat, so scatter_add must accumulate.
      {"gather", {in("table", {5, 3}), ids("ids", {2, 4}, 5)}, op(O::Gather)},
      {"scatter_add",
       {in("dy", {2, 4, 3}), ids("ids", {2, 4}, 5)},
       op(O::ScatterAdd, {{"rows", int64_t(5)}})},
      // Composite ops.
      {"layer_norm",
       {in("x", s234), in("w", {4}), in("b", {4})},
       op(O::LayerNorm, {{"eps", 1e-5}})},
      {"rms_norm",
       {in("x", s234), in("w", {4})},
       op(O::RmsNorm, {{"eps", 1e-5}})},
      {"softmax", {in("x", {2, 5})}, op(O::Softmax)},
      {"attention_causal_gqa",
       {in("q", {1, 3, 4, 2}), in("k", {1, 3, 2, 2}), in("v", {1, 3, 2, 2})},
       op(O::Attention, {{"causal", true}, {"scale", 0.7}})},
      {"attention_full_mha",
       {in("q", {2, 3, 2, 2}), in("k", {2, 3, 2, 2}), in("v", {2, 3, 2, 2})},
       op(O::Attention, {{"scale", 0.5}})},
      {"rope", {in("x", {1, 3, 2, 4})}, op(O::Rope, {{"theta", 10000.0}})},
      {"rope_offset",
       {in("x", {1, 3, 2, 4})},
       op(O::Rope, {{"theta", 100.0}, {"pos_offset", int64_t(5)}})},
      // Llama-3.1 frequencies (kept, blended and divided pairs at D = 16,
      // L = 64): the gradient rope carries the same scaling attributes.
      {"rope_llama3",
       {in("x", {1, 3, 2, 16})},
       op(O::Rope, {{"theta", 10000.0},
                    {"pos_offset", int64_t(40)},
                    {"scaling", std::string("llama3")},
                    {"factor", 8.0},
                    {"low_freq_factor", 1.0},
                    {"high_freq_factor", 4.0},
                    {"original_max_positions", int64_t(64)}})},
      {"dropout",
       {in("x", s234)},
       op(O::Dropout, {{"p", 0.25}, {"stream", int64_t(3)}})},
      {"cross_entropy",
       {in("logits", {2, 3, 5}), ids("labels", {2, 3}, 5)},
       op(O::CrossEntropy)},
      // Several uses of one value: contributions are summed.
      {"fanout",
       {in("x", s23)},
       [](Builder &b,
          llvm::ArrayRef<ValueId>
              x) { return b.mul(x[0], b.create1(OpKind::Tanh, {x[0]})); }},
      {"same_operand_twice",
       {in("x", s23)},
       [](Builder &b, llvm::ArrayRef<ValueId> x) { return b.mul(x[0], x[0]); }},
      // A tiny GPT layer: tied embedding, layer norm, attention, MLP, loss.
      {"gpt_layer",
       {in("wte", {7, 4}), in("ln.w", {4}), in("ln.b", {4}),
        in("qkv.w", {4, 12}), in("fc.w", {4, 4}), in("fc.b", {4}),
        ids("tokens", {2, 3}, 7), ids("labels", {2, 3}, 7)},
       gptLayer},
  };
  return cs;
}

// Composes many rules; wte is used twice (embedding and tied LM head) and the
// residual stream fans out, so contributions are summed. Returns a [1] tensor.
ValueId gptLayer(Builder &b, llvm::ArrayRef<ValueId> p) {
  ValueId wte = p[0], lnw = p[1], lnb = p[2], qkvw = p[3], fcw = p[4],
          fcb = p[5], tokens = p[6], labels = p[7];
  ValueId x = b.create1(OpKind::Gather, {wte, tokens}); // [2,3,4]
  ValueId h = b.create1(OpKind::LayerNorm, {x, lnw, lnb}, {{"eps", 1e-5}});
  ValueId qkv = b.reshape(b.matmul(h, qkvw), {2, 3, 6, 2});
  auto part = [&](int64_t i) {
    return b.create1(
        OpKind::Slice, {qkv},
        {{"dim", int64_t(2)}, {"start", 2 * i}, {"size", int64_t(2)}});
  };
  ValueId a = b.create1(OpKind::Attention, {part(0), part(1), part(2)},
                        {{"causal", true}, {"scale", 0.7}});
  x = b.add(x, b.reshape(a, {2, 3, 4}));
  ValueId m = b.create1(OpKind::Gelu, {b.add(b.matmul(x, fcw), fcb)},
                        {{"approx", std::string("tanh")}});
  x = b.add(x, m);
  ValueId logits = b.matmul(x, wte, false, true); // [2,3,7]
  ValueId loss = b.create1(OpKind::CrossEntropy, {logits, labels});
  return b.reshape(loss, {1});
}

INSTANTIATE_TEST_SUITE_P(AllOps, GradCheck, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

// Every op that has a gradient rule appears in some case above.
TEST(GradCheckCoverage, EveryDifferentiableOpHasACase) {
  std::vector<bool> seen(kNumOps, false);
  for (const GradCase &c : cases()) {
    Graph g;
    llvm::SmallVector<ValueId> ins;
    for (const InputSpec &in : c.inputs)
      ins.push_back(g.addInput(
          in.name, {in.dist == Dist::Ids ? DType::I32 : DType::F64, in.shape}));
    Builder b(g);
    c.body(b, ins);
    for (const Node &n : g.nodes())
      seen[int(n.op)] = true;
  }
  for (int k = 0; k < kNumOps; ++k) {
    OpKind op = OpKind(k);
    // No operands (fill, iota) or no gradient (grad ops, optimizer,
    // collectives, rank-dependent ops, fused kernels: the pass rejects
    // them, AutodiffTest).
    bool exempt = op == OpKind::Fill || op == OpKind::Iota ||
                  op == OpKind::GeluGrad || op == OpKind::SiluGrad ||
                  op == OpKind::ReluGrad || op == OpKind::LayerNormGrad ||
                  op == OpKind::RmsNormGrad || op == OpKind::SoftmaxGrad ||
                  op == OpKind::AttentionGrad || op == OpKind::DropoutGrad ||
                  op == OpKind::CrossEntropyGrad || op == OpKind::AdamWUpdate ||
                  isCollective(op) || isPartitionOp(op) || op == OpKind::Fused;
    EXPECT_TRUE(seen[k] || exempt)
        << opName(op).str() << " has no gradient check";
  }
}

} // namespace
} // namespace strata
