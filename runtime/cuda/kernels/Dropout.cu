// dropout / dropout_grad of a block of a partitioned tensor: element i of
// the local block keeps its value (times 1 / (1 - p)) iff the Philox draw
// of its GLOBAL index (strata_philox, from codegen, before this text) is at
// least `threshold` = ceil(p * 2^32), so every layout draws the serial
// mask. 1-D blocks of any size, any grid (grid-stride).

struct StrataDropoutBlock {
  int rank;
  long long local[8];    // the block's shape
  long long gstride[8];  // the global tensor's row-major strides
  long long offset[8];   // the block's offset in each dim
};

template <typename T>
__device__ void strata_dropout_impl(const T *x, T *y, long long n,
                                    StrataDropoutBlock b,
                                    unsigned long long threshold, T scale,
                                    unsigned long long seed,
                                    unsigned long long stream,
                                    unsigned long long step) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x) {
    long long rest = i, g = 0;
    for (int d = b.rank - 1; d >= 0; --d) {
      long long idx = rest % b.local[d];
      rest /= b.local[d];
      g += (idx + b.offset[d]) * b.gstride[d];
    }
    unsigned long long word =
        strata_philox((unsigned long long)g, step, (unsigned)seed,
                      (unsigned)stream);
    y[i] = word >= threshold ? x[i] * scale : T(0);
  }
}

extern "C" __global__ void __launch_bounds__(256)
strata_dropout_f32(const float *x, float *y, long long n, StrataDropoutBlock b,
                   unsigned long long threshold, double scale,
                   unsigned long long seed, unsigned long long stream,
                   unsigned long long step) {
  strata_dropout_impl(x, y, n, b, threshold, (float)scale, seed, stream,
                      step);
}

extern "C" __global__ void __launch_bounds__(256)
strata_dropout_f64(const double *x, double *y, long long n,
                   StrataDropoutBlock b, unsigned long long threshold,
                   double scale, unsigned long long seed,
                   unsigned long long stream, unsigned long long step) {
  strata_dropout_impl(x, y, n, b, threshold, scale, seed, stream, step);
}
