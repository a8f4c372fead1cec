//===- OpKernels.cpp - Hand-written CUDA kernels of the ops ---------------===//
#include "runtime/cuda/OpKernels.h"

#include <algorithm>

namespace strata::cuda {

namespace {

// The kernel sources, one text (runtime/cuda/CMakeLists.txt embeds them).
const char kCreate[] =
#include "runtime/cuda/kernels/CreateText.inc"
    ;

llvm::Error fail(const OpLaunch &a, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::Twine(opName(a.node.op)) + " (" +
                                     a.node.scope + "): " + msg);
}

/// The kernel named `base` + "_" + the dtype's suffix.
llvm::Expected<Function> typed(const OpLaunch &a, llvm::StringRef base,
                               DType dt) {
  const char *suffix = dt == DType::F32   ? "f32"
                       : dt == DType::F64 ? "f64"
                       : dt == DType::I32 ? "i32"
                                          : nullptr;
  if (!suffix)
    return fail(a, "no kernel for dtype " + dtypeName(dt));
  return a.kernels.kernel((base + "_" + suffix).str());
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

} // namespace

llvm::Error launch1d(const OpLaunch &a, Function f, int64_t count,
                     void **params, unsigned threads) {
  unsigned blocks =
      unsigned(std::clamp<int64_t>((count + threads - 1) / threads, 1, 65535));
  return a.kernels.driver().launch(f, {blocks, 1, 1}, {threads, 1, 1}, 0,
                                   a.stream, params);
}

OpLauncher opLauncher(const Graph &g, const Node &node) {
  switch (node.op) {
  case OpKind::Fill: {
    DType dt = g.type(node.results[0]).dtype;
    return dt == DType::F32 || dt == DType::F64 || dt == DType::I32 ? fillK
                                                                    : nullptr;
  }
  default:
    return nullptr;
  }
}

llvm::StringRef opKernelSource() {
  static const std::string text = std::string(kCreate);
  return text;
}

} // namespace strata::cuda
