//===- Widen.cpp - Single ops as kernel bodies; 16-bit ops on f32 kernels -===//
#include "runtime/cuda/Widen.h"

#include "passes/pipeline/GraphCopy.h"

#include "llvm/ADT/STLExtras.h"

namespace strata::cuda {

bool hasFloat16(const Graph &g, const Node &n) {
  auto is16 = [&](ValueId v) { return isFloat16(g.type(v).dtype); };
  return llvm::any_of(n.operands, is16) || llvm::any_of(n.results, is16);
}

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

std::shared_ptr<Graph> widenedBody(const Graph &g, const Node &n,
                                   const std::string &name,
                                   std::vector<size_t> &operandOfInput) {
  auto body = singleOpBody(g, n, name, operandOfInput);
  for (size_t v = 0; v < body->numValues(); ++v) {
    TensorType &t = body->value(ValueId(v)).type;
    if (isFloat16(t.dtype))
      t.dtype = DType::F32;
  }
  Node &w = body->node(0);
  std::string dt = w.attrs.getString("dtype");
  if (dt == "bf16" || dt == "f16")
    w.attrs.set("dtype", std::string("f32"));
  return body;
}

static llvm::Error convert(const OpKernelModule &kernels, StreamHandle stream,
                           const char *kernel, const void *x, void *y,
                           int64_t count) {
  auto f = kernels.kernel(kernel);
  if (!f)
    return f.takeError();
  long long n = count;
  void *params[] = {&x, &y, &n};
  return launch1d(kernels.driver(), stream, *f, count, params);
}

llvm::Error widen(const OpKernelModule &kernels, StreamHandle stream, DType dt,
                  const void *x, void *y, int64_t count) {
  return convert(kernels, stream,
                 dt == DType::BF16 ? "strata_widen_bf16" : "strata_widen_f16",
                 x, y, count);
}

llvm::Error narrow(const OpKernelModule &kernels, StreamHandle stream, DType dt,
                   const void *x, void *y, int64_t count) {
  return convert(kernels, stream,
                 dt == DType::BF16 ? "strata_narrow_bf16" : "strata_narrow_f16",
                 x, y, count);
}

WidenLayout widenLayout(const Graph &g, const Node &n) {
  WidenLayout l;
  auto place = [&](ValueId v) {
    const TensorType &t = g.type(v);
    if (!isFloat16(t.dtype)) {
      l.offset.push_back(-1);
      return;
    }
    l.offset.push_back(l.bytes);
    l.bytes += (t.numElements() * 4 + 255) / 256 * 256;
  };
  for (ValueId v : n.operands)
    place(v);
  for (ValueId v : n.results)
    place(v);
  return l;
}

} // namespace strata::cuda
