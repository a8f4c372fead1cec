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
//
//===----------------------------------------------------------------------===//
#include "codegen/Language.h"

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
  os << "  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < "
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

std::string CudaLanguage::accumulate(const KernelPlan &, size_t store,
                                     const std::string &v) const {
  return "sum" + std::to_string(store) + " += (double)" + v + ";";
}

std::string CudaLanguage::loadIndex(const KernelPlan &p,
                                    const KernelLoad &l) const {
  return stridedIndex("i", p.dims, l.strides);
}

std::string CudaLanguage::math(llvm::StringRef fn, DType t) const {
  std::string name = fn.str();
  if (fn == "kexp" || fn == "ktanh") name = fn.drop_front().str();  // CUDA's own
  return t == DType::F32 ? name + "f" : name;
}

} // namespace strata::codegen
