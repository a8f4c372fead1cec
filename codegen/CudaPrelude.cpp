//===- CudaPrelude.cpp - Helpers at the top of each CUDA source -----------===//
//
// NVRTC compiles without the C++ standard headers, so under NVRTC the
// prelude names the fixed-width integer types itself (nvcc gets <cstdint>).
// Then the group loads and stores (CudaLanguage.cpp) and, where there are
// row kernels, the block-wide row reductions. The helpers use only what
// interpret mode's SIMT header (runtime/cuda/interpret/Simt.h) provides too.
//
//===----------------------------------------------------------------------===//
#include "codegen/Language.h"

namespace strata::codegen {

void CudaLanguage::prelude(llvm::raw_ostream &os) const {
  os << R"(#ifdef __CUDACC_RTC__
// NVRTC has no C++ standard headers.
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <cstdint>
#endif

#ifdef __CUDACC__
// A kernel's element loop defines i, c and j; not every kernel reads all.
#pragma nv_diag_suppress 177
#endif

#define STRATA_FN __device__ __forceinline__

// A group of consecutive elements: one 128-bit (64-bit) access when `vec`,
// else one access per element; the same values either way.
STRATA_FN bool strata_aligned(const void *p, unsigned bytes) {
  return ((unsigned long long)p & (bytes - 1)) == 0;
}
STRATA_FN void strata_load(float (&a)[4], const float *p, bool vec) {
  if (vec) {
    const float4 t = *reinterpret_cast<const float4 *>(p);
    a[0] = t.x, a[1] = t.y, a[2] = t.z, a[3] = t.w;
  } else {
    a[0] = p[0], a[1] = p[1], a[2] = p[2], a[3] = p[3];
  }
}
STRATA_FN void strata_load(float (&a)[2], const float *p, bool vec) {
  if (vec) {
    const float2 t = *reinterpret_cast<const float2 *>(p);
    a[0] = t.x, a[1] = t.y;
  } else {
    a[0] = p[0], a[1] = p[1];
  }
}
STRATA_FN void strata_load(double (&a)[2], const double *p, bool vec) {
  if (vec) {
    const double2 t = *reinterpret_cast<const double2 *>(p);
    a[0] = t.x, a[1] = t.y;
  } else {
    a[0] = p[0], a[1] = p[1];
  }
}
STRATA_FN void strata_store(float *p, const float (&a)[4], bool vec) {
  if (vec)
    *reinterpret_cast<float4 *>(p) = make_float4(a[0], a[1], a[2], a[3]);
  else
    p[0] = a[0], p[1] = a[1], p[2] = a[2], p[3] = a[3];
}
STRATA_FN void strata_store(float *p, const float (&a)[2], bool vec) {
  if (vec)
    *reinterpret_cast<float2 *>(p) = make_float2(a[0], a[1]);
  else
    p[0] = a[0], p[1] = a[1];
}
STRATA_FN void strata_store(double *p, const double (&a)[2], bool vec) {
  if (vec)
    *reinterpret_cast<double2 *>(p) = make_double2(a[0], a[1]);
  else
    p[0] = a[0], p[1] = a[1];
}
)";
}

void CudaLanguage::rowPrelude(llvm::raw_ostream &os) const {
  os << R"(
// Row kernels: a row's sum (max) over the NW warps of its block: butterfly
// shuffles in each warp (all lanes get the same bits), then the warps' values
// in warp order. Every thread of the block must call it.
template <int NW> STRATA_FN double strata_block_sum(double v, double *red) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  if (NW == 1)
    return v;
  if ((threadIdx.x & 31) == 0)
    red[threadIdx.x >> 5] = v;
  __syncthreads();
  double s = red[0];
  for (int w = 1; w < NW; ++w)
    s += red[w];
  __syncthreads();
  return s;
}
template <int NW, typename T> STRATA_FN T strata_block_max(T v, double *red) {
  for (int o = 16; o > 0; o >>= 1) {
    T other = __shfl_xor_sync(0xffffffffu, v, o);
    v = other > v ? other : v;
  }
  if (NW == 1)
    return v;
  if ((threadIdx.x & 31) == 0)
    red[threadIdx.x >> 5] = (double)v;
  __syncthreads();
  T m = (T)red[0];
  for (int w = 1; w < NW; ++w)
    m = (T)red[w] > m ? (T)red[w] : m;
  __syncthreads();
  return m;
}
)";
}

} // namespace strata::codegen
