// reduce_sum, reduce_max and reduce_mean over any set of axes. Output
// element o is the reduction of the elements at base(o) + sum r_d
// redStride[d] over the reduced index space (redRank dims), kept dims
// giving base(o). Accumulation in double, as runtime/kernels/Reduce.cpp
// (max: NaN sticks); the order is fixed by the launch shape alone:
//   - strata_reduce_*: one thread per output, reduced elements in order;
//   - strata_reduce_block_*: one block per output (power-of-two blocks of
//     at most 256), thread t taking elements t, t + blockDim, ... then a
//     tree through shared memory;
//   - for few outputs of many elements, two passes: strata_reduce_part_*
//     reduces chunk c of output o (block (c, o), as a block above) into
//     part[o * chunks + c] (double), then strata_reduce_finish_* reduces
//     each output's chunks (a block per output).
// All grid-stride over outputs.

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
          (double)
              base[strata_reduce_offset(r.redSize, r.redStride, r.redRank, e)]);
    y[o] = (T)(r.op == 2 ? acc / (double)r.count : acc);
  }
}

// The block's reduction (every thread gets it) of acc over its threads.
__device__ double strata_reduce_tree(int op, double acc) {
  __shared__ double red[256];
  strata_require_tree_block();
  red[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      red[threadIdx.x] =
          strata_reduce_step(op, red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  double r = red[0];
  __syncthreads();
  return r;
}

// Elements [lo, hi) of output o, reduced by the block.
template <typename T>
__device__ double strata_reduce_range(const T *x, const ReduceDims &r,
                                      long long o, long long lo, long long hi) {
  const T *base =
      x + strata_reduce_offset(r.keptSize, r.keptStride, r.keptRank, o);
  double acc = r.op == 1 ? -(double)strata_inf<double>() : 0.0;
  for (long long e = lo + threadIdx.x; e < hi; e += blockDim.x)
    acc = strata_reduce_step(
        r.op, acc,
        (double)
            base[strata_reduce_offset(r.redSize, r.redStride, r.redRank, e)]);
  return strata_reduce_tree(r.op, acc);
}

template <typename T>
__device__ void strata_reduce_block_impl(const T *x, T *y, ReduceDims r) {
  for (long long o = blockIdx.x; o < r.outputs; o += gridDim.x) {
    double acc = strata_reduce_range(x, r, o, 0, r.count);
    if (threadIdx.x == 0)
      y[o] = (T)(r.op == 2 ? acc / (double)r.count : acc);
  }
}

template <typename T>
__device__ void strata_reduce_part_impl(const T *x, double *part, ReduceDims r,
                                        long long chunk) {
  long long chunks = (r.count + chunk - 1) / chunk;
  for (long long o = blockIdx.y; o < r.outputs; o += gridDim.y)
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
      long long hi = (c + 1) * chunk < r.count ? (c + 1) * chunk : r.count;
      double acc = strata_reduce_range(x, r, o, c * chunk, hi);
      if (threadIdx.x == 0)
        part[o * chunks + c] = acc;
    }
}

template <typename T>
__device__ void strata_reduce_finish_impl(const double *part, T *y,
                                          ReduceDims r, long long chunk) {
  long long chunks = (r.count + chunk - 1) / chunk;
  for (long long o = blockIdx.x; o < r.outputs; o += gridDim.x) {
    double acc = r.op == 1 ? -(double)strata_inf<double>() : 0.0;
    for (long long c = threadIdx.x; c < chunks; c += blockDim.x)
      acc = strata_reduce_step(r.op, acc, part[o * chunks + c]);
    acc = strata_reduce_tree(r.op, acc);
    if (threadIdx.x == 0)
      y[o] = (T)(r.op == 2 ? acc / (double)r.count : acc);
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
extern "C" __global__ void __launch_bounds__(256)
    strata_reduce_block_f32(const float *x, float *y, ReduceDims r) {
  strata_reduce_block_impl(x, y, r);
}
extern "C" __global__ void __launch_bounds__(256)
    strata_reduce_block_f64(const double *x, double *y, ReduceDims r) {
  strata_reduce_block_impl(x, y, r);
}
extern "C" __global__ void __launch_bounds__(256)
    strata_reduce_part_f32(const float *x, double *part, ReduceDims r,
                           long long chunk) {
  strata_reduce_part_impl(x, part, r, chunk);
}
extern "C" __global__ void __launch_bounds__(256)
    strata_reduce_part_f64(const double *x, double *part, ReduceDims r,
                           long long chunk) {
  strata_reduce_part_impl(x, part, r, chunk);
}
extern "C" __global__ void __launch_bounds__(256)
    strata_reduce_finish_f32(const double *part, float *y, ReduceDims r,
                             long long chunk) {
  strata_reduce_finish_impl(part, y, r, chunk);
}
extern "C" __global__ void __launch_bounds__(256)
    strata_reduce_finish_f64(const double *part, double *y, ReduceDims r,
                             long long chunk) {
  strata_reduce_finish_impl(part, y, r, chunk);
}
