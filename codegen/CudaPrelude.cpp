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
)" << cudaFloat16Helpers();
}

const char *cudaFloat16Helpers() {
  return R"(
// bf16 / f16 storage, f32 math: runtime/kernels/Float16.h's conversions bit
// for bit (round to nearest even; NaN stays a quiet NaN), on 16-bit patterns.
__device__ __forceinline__ float strata_bf16_to_float(unsigned short h) {
  return __int_as_float((int)((unsigned)h << 16));
}
__device__ __forceinline__ unsigned short strata_float_to_bf16(float f) {
  unsigned u = (unsigned)__float_as_int(f);
  if (f != f)
    return 0x7fc0;
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
// Maratyszcza's FP16 conversions (exact, subnormals included).
__device__ __forceinline__ float strata_half_to_float(unsigned short h) {
  unsigned w = (unsigned)h << 16;
  unsigned sign = w & 0x80000000u;
  unsigned twoW = w + w;
  float normalized =
      __int_as_float((int)((twoW >> 4) + (0xE0u << 23))) * 0x1.0p-112f;
  float denormalized =
      __int_as_float((int)((twoW >> 17) | (126u << 23))) - 0.5f;
  unsigned bits = twoW < (1u << 27) ? (unsigned)__float_as_int(denormalized)
                                    : (unsigned)__float_as_int(normalized);
  return __int_as_float((int)(sign | bits));
}
__device__ __forceinline__ unsigned short strata_float_to_half(float f) {
  float base = (fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
  unsigned w = (unsigned)__float_as_int(f);
  unsigned shl1 = w + w;
  unsigned sign = w & 0x80000000u;
  unsigned bias = shl1 & 0xFF000000u;
  if (bias < 0x71000000u)
    bias = 0x71000000u;
  base = __int_as_float((int)((bias >> 1) + 0x07800000u)) + base;
  unsigned bits = (unsigned)__float_as_int(base);
  unsigned nonsign = ((bits >> 13) & 0x7C00u) + (bits & 0x0FFFu);
  return (unsigned short)((sign >> 16) |
                          (shl1 > 0xFF000000u ? 0x7E00u : nonsign));
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
