// pick_label and one_hot, the vocab-parallel cross-entropy pieces
// (ir/Ops.def, rank-dependent ops): this rank holds classes [c0, c0 + C).
// 1-D blocks of any size, any grid (grid-stride). (shard_slice is a strided
// copy: Layout.cu.)

// out[n] = x[n, label[n] - c0], 0 where the label is not held here.
template <typename T>
__device__ void strata_pick_label_impl(const T *x, const int *labels, T *out,
                                       long long N, long long C, long long c0) {
  for (long long n = blockIdx.x * (long long)blockDim.x + threadIdx.x; n < N;
       n += (long long)blockDim.x * gridDim.x) {
    long long c = (long long)labels[n] - c0;
    out[n] = c >= 0 && c < C ? x[n * C + c] : T(0);
  }
}

// out[n, c] = 1 where c == label[n] - c0, else 0.
template <typename T>
__device__ void strata_one_hot_impl(const int *labels, T *out, long long N,
                                    long long C, long long c0) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       e < N * C; e += (long long)blockDim.x * gridDim.x) {
    long long n = e / C, c = e - n * C;
    out[e] = (long long)labels[n] - c0 == c ? T(1) : T(0);
  }
}

extern "C" __global__ void strata_pick_label_f32(const float *x,
                                                 const int *labels, float *out,
                                                 long long N, long long C,
                                                 long long c0) {
  strata_pick_label_impl(x, labels, out, N, C, c0);
}
extern "C" __global__ void strata_pick_label_f64(const double *x,
                                                 const int *labels, double *out,
                                                 long long N, long long C,
                                                 long long c0) {
  strata_pick_label_impl(x, labels, out, N, C, c0);
}
extern "C" __global__ void strata_one_hot_f32(const int *labels, float *out,
                                              long long N, long long C,
                                              long long c0) {
  strata_one_hot_impl(labels, out, N, C, c0);
}
extern "C" __global__ void strata_one_hot_f64(const int *labels, double *out,
                                              long long N, long long C,
                                              long long c0) {
  strata_one_hot_impl(labels, out, N, C, c0);
}
