// Helpers of the hand-written kernels (first in the module's text): math
// overloads by element type, infinities, and block-wide reductions in a
// fixed order.

__device__ float strata_exp(float x) { return expf(x); }
__device__ double strata_exp(double x) { return exp(x); }
__device__ float strata_sqrt(float x) { return sqrtf(x); }
__device__ double strata_sqrt(double x) { return sqrt(x); }

// +infinity of T (no <cmath> macros under NVRTC).
template <typename T> __device__ T strata_inf() {
  return T(__int_as_float(0x7f800000));
}

// The launch contract of the kernels that reduce through a block tree: 1-D
// blocks of a power of two, at most 256 threads (their shared arrays);
// others would read past them or leave threads out, so they trap.
__device__ void strata_require_tree_block() {
  if (blockDim.y != 1 || blockDim.z != 1 || blockDim.x > 256 ||
      (blockDim.x & (blockDim.x - 1)) != 0)
    __trap();
}

// The sum (or max) of v over the block, returned to every thread. 1-D
// blocks whose size is a power of two; `red` holds blockDim.x values. The
// tree's order depends only on the block size, so results are the same
// whatever the grid. Every thread of the block must call it.
template <typename T> __device__ T strata_block_sum(T v, T *red) {
  strata_require_tree_block();
  unsigned t = threadIdx.x;
  red[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s)
      red[t] += red[t + s];
    __syncthreads();
  }
  T r = red[0];
  __syncthreads();
  return r;
}
template <typename T> __device__ T strata_block_max(T v, T *red) {
  strata_require_tree_block();
  unsigned t = threadIdx.x;
  red[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s)
      red[t] = red[t + s] > red[t] ? red[t + s] : red[t];
    __syncthreads();
  }
  T r = red[0];
  __syncthreads();
  return r;
}
