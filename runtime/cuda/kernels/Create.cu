// fill: every element of a buffer of `n` elements set to `value`.
// 1-D blocks of any size, any grid (grid-stride).

template <typename T>
__device__ void strata_fill_impl(T *out, long long n, T value) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)blockDim.x * gridDim.x)
    out[i] = value;
}

extern "C" __global__ void strata_fill_f32(float *out, long long n,
                                           double value) {
  strata_fill_impl(out, n, (float)value);
}
extern "C" __global__ void strata_fill_f64(double *out, long long n,
                                           double value) {
  strata_fill_impl(out, n, value);
}
extern "C" __global__ void strata_fill_i32(int *out, long long n,
                                           double value) {
  strata_fill_impl(out, n, (int)value);
}
