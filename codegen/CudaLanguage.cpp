//===- CudaLanguage.cpp - The CUDA target: what differs from C++ ----------===//
//
// NVRTC compiles without the C++ standard headers, so the prelude names the
// fixed-width integer types itself. A kernel is one thread per element over
// a grid-stride loop on the flat index, with typed pointer parameters (what
// cuLaunchKernel passes); broadcast operands index by div/mod of the flat
// index. Math functions take their C names with the f suffix for float, the
// CPU kernels' kexp/ktanh becoming CUDA's exp/tanh. A kernel with column
// sums runs one thread per column instead, walking that column's rows in
// order into f64 sums (deterministic, no atomics), then storing them.
// A row kernel runs one warp per row, lane l taking columns l, l + 32, ...
// (scratch rows are per-lane arrays of ceil(C / 32)), row sums combined by
// butterfly shuffles in f64. With column sums each warp owns a block of
// consecutive rows and writes its f64 sums into a workspace, which a second
// kernel adds up in warp order (deterministic, no atomics): cudaLaunchOf.
//
//===----------------------------------------------------------------------===//
#include "codegen/Language.h"
#include "codegen/Renderer.h"

#include <algorithm>

namespace strata::codegen {

void CudaLanguage::prelude(llvm::raw_ostream &os) const {
  os << "typedef int int32_t;\ntypedef unsigned int uint32_t;\n"
     << "typedef long long int64_t;\ntypedef unsigned long long uint64_t;\n\n"
     << "#define STRATA_FN __device__ __forceinline__\n";
}

void CudaLanguage::signature(llvm::raw_ostream &os, const KernelPlan &p) const {
  os << "extern \"C\" __global__ void " << p.name << "(";
  for (size_t k = 0; k < p.loads.size(); ++k)
    os << "const " << valueCType(p, p.loads[k].value) << " *in" << k << ", ";
  for (size_t k = 0; k < p.stores.size(); ++k)
    os << valueCType(p, p.stores[k]) << " *out" << k << ", ";
  if (p.isRowKernel() && !p.sums.empty())
    os << "double *partial, ";
  os << "int64_t n,\n    uint64_t seed, uint64_t step) {\n";
}

std::string CudaLanguage::loopBegin(llvm::raw_ostream &os,
                                    const KernelPlan &p) const {
  if (p.sums.empty()) {
    os << "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; "
          "i < n;\n"
       << "       i += (int64_t)blockDim.x * gridDim.x) {\n";
    return "    ";
  }
  int64_t cols = p.inner(), rows = p.numElements() / cols;
  os << "  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c "
        "< "
     << cols << ";\n"
     << "       c += (int64_t)blockDim.x * gridDim.x) {\n";
  for (const KernelSum &s : p.sums)
    os << "    double sum" << s.store << " = 0.0;\n";
  os << "    for (int64_t r = 0; r < " << rows << "; ++r) {\n"
     << "      const int64_t i = r * " << cols << " + c;\n";
  return "      ";
}

void CudaLanguage::loopEnd(llvm::raw_ostream &os, const KernelPlan &p) const {
  if (p.sums.empty()) {
    os << "  }\n}\n";
    return;
  }
  os << "    }\n";
  for (const KernelSum &s : p.sums)
    os << "    out" << s.store << "[c] = (" << valueCType(p, p.stores[s.store])
       << ")sum" << s.store << ";\n";
  os << "  }\n}\n";
}

std::string CudaLanguage::accumulate(const KernelPlan &p, size_t store,
                                     const std::string &v) const {
  if (p.isRowKernel())
    return "acc" + std::to_string(store) + "[j] += (double)" + v + ";";
  return "sum" + std::to_string(store) + " += (double)" + v + ";";
}

std::string CudaLanguage::loadIndex(const KernelPlan &p,
                                    const KernelLoad &l) const {
  return stridedIndex("i", p.dims, l.strides);
}

std::string CudaLanguage::math(llvm::StringRef fn, DType t) const {
  std::string name = fn.str();
  if (fn == "kexp" || fn == "ktanh")
    name = fn.drop_front().str(); // CUDA's own
  return t == DType::F32 ? name + "f" : name;
}

namespace {

constexpr int64_t kWarp = 32, kRowThreads = 128, kMaxSumWarps = 1024;

int64_t lanesPerRow(const KernelPlan &p) {
  return (p.inner() + kWarp - 1) / kWarp;
}
int64_t rowsOf(const KernelPlan &p) { return p.numElements() / p.inner(); }
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

CudaLaunch cudaLaunchOf(const KernelPlan &p) {
  CudaLaunch l;
  auto grid = [](int64_t blocks) {
    return unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, 4096)));
  };
  if (!p.isRowKernel()) {
    l.threads = 256;
    l.blocks = grid(ceilDiv(p.sums.empty() ? p.numElements() : p.inner(), 256));
    return l;
  }
  l.threads = unsigned(kRowThreads);
  int64_t warpsPerBlock = kRowThreads / kWarp;
  if (p.sums.empty()) {
    l.blocks = grid(ceilDiv(rowsOf(p), warpsPerBlock));
    return l;
  }
  l.warps = std::min(rowsOf(p), kMaxSumWarps);
  l.blocks = unsigned(ceilDiv(l.warps, warpsPerBlock));
  l.partialDoubles = int64_t(p.sums.size()) * l.warps * p.inner();
  l.sumThreads = 256;
  l.sumBlocks = grid(ceilDiv(p.inner(), 256));
  return l;
}

void CudaLanguage::rowPrelude(llvm::raw_ostream &os) const {
  os << R"(
// Row kernels: a row's sum (max) over the 32 lanes of its warp.
STRATA_FN double strata_warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename T> STRATA_FN T strata_warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) {
    T other = __shfl_xor_sync(0xffffffffu, v, o);
    v = other > v ? other : v;
  }
  return v;
}
)";
}

std::string CudaLanguage::rowLoopBegin(llvm::raw_ostream &os,
                                       const KernelPlan &p) const {
  std::string rows = std::to_string(rowsOf(p));
  os << "  const int lane = threadIdx.x & 31;\n"
     << "  const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + "
        "threadIdx.x) >> 5;\n";
  if (p.sums.empty()) {
    os << "  for (int64_t r = warp; r < " << rows
       << "; r += ((int64_t)gridDim.x * blockDim.x) >> 5) {\n";
    return "    ";
  }
  CudaLaunch l = cudaLaunchOf(p);
  int64_t perWarp = ceilDiv(rowsOf(p), l.warps);
  os << "  if (warp >= " << l.warps << ") return;\n";
  for (const KernelSum &s : p.sums)
    os << "  double acc" << s.store << "[" << lanesPerRow(p) << "];\n"
       << "  for (int j = 0; j < " << lanesPerRow(p) << "; ++j) acc" << s.store
       << "[j] = 0.0;\n";
  os << "  for (int64_t r = warp * " << perWarp << "; r < (warp + 1) * "
     << perWarp << " && r < " << rows << "; ++r) {\n";
  return "    ";
}

void CudaLanguage::rowLoopEnd(llvm::raw_ostream &os,
                              const KernelPlan &p) const {
  os << "  }\n";
  if (p.sums.empty()) {
    os << "}\n";
    return;
  }
  CudaLaunch l = cudaLaunchOf(p);
  std::string C = std::to_string(p.inner()), W = std::to_string(l.warps);
  os << "  for (int j = 0; j < " << lanesPerRow(p) << "; ++j) {\n"
     << "    const int64_t c = lane + 32 * j;\n"
     << "    if (c >= " << C << ") break;\n";
  for (size_t s = 0; s < p.sums.size(); ++s)
    os << "    partial[(" << s << " * " << W << " + warp) * " << C
       << " + c] = acc" << p.sums[s].store << "[j];\n";
  os << "  }\n}\n\n";
  // The second kernel: the warps' sums, in warp order.
  os << "extern \"C\" __global__ void " << p.name
     << "_sums(const double *partial";
  for (const KernelSum &s : p.sums)
    os << ", " << valueCType(p, p.stores[s.store]) << " *out" << s.store;
  os << ") {\n"
     << "  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c "
        "< "
     << C << ";\n"
     << "       c += (int64_t)blockDim.x * gridDim.x) {\n";
  for (size_t s = 0; s < p.sums.size(); ++s) {
    int32_t k = p.sums[s].store;
    os << "    double sum" << k << " = 0.0;\n"
       << "    for (int64_t w = 0; w < " << W << "; ++w)\n"
       << "      sum" << k << " += partial[(" << s << " * " << W << " + w) * "
       << C << " + c];\n"
       << "    out" << k << "[c] = (" << valueCType(p, p.stores[k]) << ")sum"
       << k << ";\n";
  }
  os << "  }\n}\n";
}

std::string CudaLanguage::colLoopBegin(llvm::raw_ostream &os,
                                       const KernelPlan &p,
                                       const std::string &indent,
                                       llvm::ArrayRef<std::string>,
                                       bool) const {
  std::string C = std::to_string(p.inner());
  os << indent << "for (int j = 0; j < " << lanesPerRow(p) << "; ++j) {\n"
     << indent << "  const int64_t c = lane + 32 * j;\n"
     << indent << "  if (c >= " << C << ") break;\n"
     << indent << "  const int64_t i = r * " << C << " + c;\n";
  return indent + "  ";
}

void CudaLanguage::colLoopEnd(llvm::raw_ostream &os,
                              const std::string &indent) const {
  os << indent << "}\n";
}

void CudaLanguage::rowCombine(llvm::raw_ostream &os, const std::string &indent,
                              const std::string &var, bool max) const {
  os << indent << var << " = " << (max ? "strata_warp_max" : "strata_warp_sum")
     << "(" << var << ");\n";
}

std::string CudaLanguage::scratchDecl(const KernelPlan &p,
                                      const std::string &type,
                                      const std::string &name) const {
  return type + " " + name + "[" + std::to_string(lanesPerRow(p)) + "];";
}

std::string CudaLanguage::scratchAt(const std::string &name) const {
  return name + "[j]";
}

std::string CudaLanguage::negInfinity(DType t) const {
  return t == DType::F32 ? "-__int_as_float(0x7f800000)"
                         : "-__longlong_as_double(0x7ff0000000000000LL)";
}

} // namespace strata::codegen
