//===- MatmulGemm.cpp - IR matmuls as cuBLASLt GEMMs ----------------------===//
#include "runtime/cuda/MatmulGemm.h"

#include "llvm/ADT/STLExtras.h"

namespace strata::cuda {

Gemm matmulGemm(const Graph &g, const Node &mm, const void *a, const void *b,
                void *c) {
  const Shape &as = g.type(mm.operands[0]).shape,
              &bs = g.type(mm.operands[1]).shape;
  const TensorType &ct = g.type(mm.results[0]);
  bool ta = mm.attrs.getBool("transpose_a"),
       tb = mm.attrs.getBool("transpose_b");
  int64_t M = ct.shape[ct.shape.size() - 2], N = ct.shape.back();
  int64_t K = ta ? as[as.size() - 2] : as.back();
  Gemm gm;
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
  gm.ab = g.type(mm.operands[0]).dtype;
  gm.c = ct.dtype;
  gm.A = DevicePtr(b);
  gm.B = DevicePtr(a);
  gm.C = DevicePtr(c);
  return gm;
}

namespace {

bool tanhGelu(const Node &n) {
  return n.attrs.getString("approx", "tanh") != "none";
}

/// Index of `v` among `list`, or -1.
int32_t indexIn(llvm::ArrayRef<ValueId> list, ValueId v) {
  auto it = llvm::find(list, v);
  return it == list.end() ? -1 : int32_t(it - list.begin());
}

/// Whether `outputs` are exactly `a` and `b`, in either order.
bool returnsPair(llvm::ArrayRef<ValueId> outputs, ValueId a, ValueId b) {
  return outputs.size() == 2 && indexIn(outputs, a) >= 0 &&
         indexIn(outputs, b) >= 0;
}

} // namespace

std::optional<EpiloguePlan> matchEpilogue(const Graph &body) {
  llvm::ArrayRef<Node> nodes = body.nodes();
  if (nodes.size() < 2 || nodes.size() > 3 || nodes[0].op != OpKind::MatMul)
    return std::nullopt;
  const Node &mm = nodes[0];
  ValueId prod = mm.results[0];
  const TensorType &t = body.type(prod);
  EpiloguePlan p;
  p.inputA = indexIn(body.inputs(), mm.operands[0]);
  p.inputB = indexIn(body.inputs(), mm.operands[1]);
  // One GEMM over every row: b a matrix, a not transposed (rows contiguous).
  if (p.inputA < 0 || p.inputB < 0 || body.type(mm.operands[1]).rank() != 2 ||
      mm.attrs.getBool("transpose_a") || t.rank() < 2 ||
      (t.dtype != DType::F32 && t.dtype != DType::F64) ||
      body.type(mm.operands[0]).dtype != t.dtype)
    return std::nullopt;
  int64_t N = t.shape.back();
  auto isBias = [&](ValueId v) {
    const TensorType &b = body.type(v);
    return indexIn(body.inputs(), v) >= 0 && b.rank() == 1 &&
           b.shape[0] == N && b.dtype == t.dtype;
  };
  const Node &second = nodes[1];
  if (second.op == OpKind::Add && second.operands.size() == 2) {
    int which = second.operands[0] == prod ? 1 : 0;
    ValueId bias = second.operands[which];
    if (second.operands[1 - which] != prod || !isBias(bias))
      return std::nullopt;
    p.biasInput = indexIn(body.inputs(), bias);
    ValueId sum = second.results[0];
    if (nodes.size() == 2 && body.outputs().size() == 1 &&
        body.outputs()[0] == sum) {
      p.epilogue = Epilogue::Bias;
      p.out = 0;
      return p;
    }
    if (nodes.size() != 3 || N % 8)
      return std::nullopt;
    const Node &gelu = nodes[2];
    if (gelu.op != OpKind::Gelu || !tanhGelu(gelu) ||
        gelu.operands[0] != sum ||
        !returnsPair(body.outputs(), sum, gelu.results[0]))
      return std::nullopt;
    p.epilogue = Epilogue::GeluAuxBias;
    p.out = indexIn(body.outputs(), gelu.results[0]);
    p.auxResult = indexIn(body.outputs(), sum);
    return p;
  }
  if (second.op != OpKind::GeluGrad || !tanhGelu(second) ||
      second.operands[0] != prod || N % 8)
    return std::nullopt;
  ValueId pre = second.operands[1];
  p.auxInput = indexIn(body.inputs(), pre);
  if (p.auxInput < 0 || body.type(pre) != t)
    return std::nullopt;
  ValueId grad = second.results[0];
  if (nodes.size() == 2) {
    if (body.outputs().size() != 1 || body.outputs()[0] != grad)
      return std::nullopt;
    p.epilogue = Epilogue::DGelu;
    p.out = 0;
    return p;
  }
  const Node &sum = nodes[2];
  auto axes = sum.attrs.getInts("axes");
  bool allButLast = int64_t(axes.size()) == t.rank() - 1;
  for (size_t i = 0; allButLast && i < axes.size(); ++i)
    allButLast = axes[i] == int64_t(i);
  if (sum.op != OpKind::ReduceSum || sum.operands[0] != grad || !allButLast ||
      sum.attrs.getBool("keepdims") ||
      !returnsPair(body.outputs(), grad, sum.results[0]))
    return std::nullopt;
  p.epilogue = Epilogue::DGeluBGrad;
  p.out = indexIn(body.outputs(), grad);
  p.biasResult = indexIn(body.outputs(), sum.results[0]);
  return p;
}

Gemm epilogueGemm(const Graph &body, const EpiloguePlan &plan,
                  llvm::ArrayRef<const void *> operands,
                  llvm::ArrayRef<void *> results) {
  const Node &mm = body.nodes()[0];
  Gemm g = matmulGemm(body, mm, operands[plan.inputA], operands[plan.inputB],
                      results[plan.out]);
  g.n *= g.batch; // every row of a (contiguous: not transposed)
  g.batch = 1;
  g.strideB = g.strideC = 0;
  g.epilogue = plan.epilogue;
  if (plan.biasInput >= 0)
    g.bias = DevicePtr(operands[plan.biasInput]);
  if (plan.biasResult >= 0)
    g.bias = DevicePtr(results[plan.biasResult]);
  if (plan.auxInput >= 0)
    g.aux = DevicePtr(operands[plan.auxInput]);
  if (plan.auxResult >= 0)
    g.aux = DevicePtr(results[plan.auxResult]);
  if (g.aux)
    g.ldAux = g.m;
  return g;
}

} // namespace strata::cuda
