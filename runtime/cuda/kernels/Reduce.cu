// reduce_sum, reduce_max and reduce_mean over any set of axes. Output
// element o is the reduction of the elements at base(o) + sum r_d
// redStride[d] over the reduced index space (redRank dims), kept dims
// giving base(o). Accumulation in double, as runtime/kernels/Reduce.cpp
// (max: NaN sticks); the order is fixed by the launch shape alone:
//   - strata_reduce_*: one thread per output, reduced elements in order;
//   - strata_reduce_block_*: one block per output (power-of-two blocks of
//     at most 256), thread t taking elements t, t + blockDim, ... then a
//     tree through shared memory.
// Both grid-stride over outputs.

struct ReduceDims {
  long long keptSize[8], keptStride[8], redSize[8], redStride[8];
  long long outputs, count;
  int keptRank, redRank, op; // op: 0 sum, 1 max, 2 mean
};

__device__ double strata_reduce_step(int op, double acc, double v) {
  if (op != 1)
    return acc + v;
  if (acc != acc)
    return acc;
  return v > acc || v != v ? v : acc;
}

__device__ long long strata_reduce_offset(const long long *size,
                                          const long long *stride, int rank,
                                          long long e) {
  long long off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    off += e % size[d] * stride[d];
    e /= size[d];
  }
  return off;
}

template <typename T>
__device__ void strata_reduce_impl(const T *x, T *y, ReduceDims r) {
  for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       o < r.outputs; o += (long long)blockDim.x * gridDim.x) {
    const T *base =
        x + strata_reduce_offset(r.keptSize, r.keptStride, r.keptRank, o);
    double acc = r.op == 1 ? -(double)strata_inf<double>() : 0.0;
    for (long long e = 0; e < r.count; ++e)
      acc = strata_reduce_step(
          r.op, acc,
          (double)base[strata_reduce_offset(r.redSize, r.redStride, r.redRank,
                                            e)]);
    y[o] = (T)(r.op == 2 ? acc / (double)r.count : acc);
  }
}

template <typename T>
__device__ void strata_reduce_block_impl(const T *x, T *y, ReduceDims r) {
  __shared__ double red[256];
  for (long long o = blockIdx.x; o < r.outputs; o += gridDim.x) {
    const T *base =
        x + strata_reduce_offset(r.keptSize, r.keptStride, r.keptRank, o);
    double acc = r.op == 1 ? -(double)strata_inf<double>() : 0.0;
    for (long long e = threadIdx.x; e < r.count; e += blockDim.x)
      acc = strata_reduce_step(
          r.op, acc,
          (double)base[strata_reduce_offset(r.redSize, r.redStride, r.redRank,
                                            e)]);
    red[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s)
        red[threadIdx.x] =
            strata_reduce_step(r.op, red[threadIdx.x], red[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0)
      y[o] = (T)(r.op == 2 ? red[0] / (double)r.count : red[0]);
    __syncthreads();
  }
}

extern "C" __global__ void strata_reduce_f32(const float *x, float *y,
                                             ReduceDims r) {
  strata_reduce_impl(x, y, r);
}
extern "C" __global__ void strata_reduce_f64(const double *x, double *y,
                                             ReduceDims r) {
  strata_reduce_impl(x, y, r);
}
extern "C" __global__ void strata_reduce_block_f32(const float *x, float *y,
                                                   ReduceDims r) {
  strata_reduce_block_impl(x, y, r);
}
extern "C" __global__ void strata_reduce_block_f64(const double *x, double *y,
                                                   ReduceDims r) {
  strata_reduce_block_impl(x, y, r);
}
