//===- CudaLanguage.cpp - The CUDA target: what differs from C++ ----------===//
//
// NVRTC compiles without the C++ standard headers, so the prelude names the
// fixed-width integer types itself. A kernel is one thread per element over
// a grid-stride loop on the flat index, with typed pointer parameters (what
// cuLaunchKernel passes); broadcast operands index by div/mod of the flat
// index. Math functions take their C names with the f suffix for float, the
// CPU kernels' kexp/ktanh becoming CUDA's exp/tanh.
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
                                    const KernelPlan &) const {
  os << "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i "
        "< n;\n"
     << "       i += (int64_t)blockDim.x * gridDim.x) {\n";
  return "    ";
}

void CudaLanguage::loopEnd(llvm::raw_ostream &os) const { os << "  }\n}\n"; }

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
