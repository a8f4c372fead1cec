// transpose, broadcast, slice and concat as one strided copy, and iota.
// The copy walks an iteration shape of up to 8 dims; element (i_0, ...) is
// read at xOffset + sum i_d xStride[d] and written at yOffset + sum i_d
// yStride[d] (a stride 0 repeats: broadcast). Kernels by element size, so
// any dtype of 4 or 8 bytes. 1-D blocks of any size, any grid (grid-stride).

struct StridedCopy {
  long long size[8], xStride[8], yStride[8];
  long long xOffset, yOffset, count;
  int rank;
};

template <typename T>
__device__ void strata_copy_impl(const T *x, T *y, StridedCopy c) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       e < c.count; e += (long long)blockDim.x * gridDim.x) {
    long long rest = e, xo = c.xOffset, yo = c.yOffset;
    for (int d = c.rank - 1; d >= 0; --d) {
      long long i = rest % c.size[d];
      rest /= c.size[d];
      xo += i * c.xStride[d];
      yo += i * c.yStride[d];
    }
    y[yo] = x[xo];
  }
}

extern "C" __global__ void strata_copy_b4(const unsigned *x, unsigned *y,
                                          StridedCopy c) {
  strata_copy_impl(x, y, c);
}
extern "C" __global__ void strata_copy_b8(const unsigned long long *x,
                                          unsigned long long *y,
                                          StridedCopy c) {
  strata_copy_impl(x, y, c);
}

// out[j] = (j / inner) % size: the index along one dim.
template <typename T>
__device__ void strata_iota_impl(T *out, long long n, long long inner,
                                 long long size) {
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n;
       j += (long long)blockDim.x * gridDim.x)
    out[j] = (T)((j / inner) % size);
}

extern "C" __global__ void strata_iota_f32(float *out, long long n,
                                           long long inner, long long size) {
  strata_iota_impl(out, n, inner, size);
}
extern "C" __global__ void strata_iota_f64(double *out, long long n,
                                           long long inner, long long size) {
  strata_iota_impl(out, n, inner, size);
}
extern "C" __global__ void strata_iota_i32(int *out, long long n,
                                           long long inner, long long size) {
  strata_iota_impl(out, n, inner, size);
}
extern "C" __global__ void strata_iota_i64(long long *out, long long n,
                                           long long inner, long long size) {
  strata_iota_impl(out, n, inner, size);
}
