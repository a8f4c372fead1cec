// gather and scatter_add: the embedding lookup and its gradient
// (ir/Ops.def). Rows of the table are [vocabStart, vocabStart + V) of the
// global vocabulary; ids outside read 0 (gather) or add nothing
// (scatter_add). 1-D blocks of any size, any grid (grid-stride).

// out[n, c] = table[ids[n] - vocabStart, c], 0 for ids outside the table.
template <typename T>
__device__ void strata_gather_impl(const T *table, const int *ids, T *out,
                                   long long N, long long V, long long H,
                                   long long vocabStart) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       i < N * H; i += (long long)blockDim.x * gridDim.x) {
    long long n = i / H, c = i - n * H;
    long long row = (long long)ids[n] - vocabStart;
    out[i] = row >= 0 && row < V ? table[row * H + c] : T(0);
  }
}

// dtable[r, c] = sum of dy[n, c] over the n with ids[n] - vocabStart == r,
// added in increasing n from 0 (the order of runtime/kernels/Embedding.cpp,
// so the bits are the CPU kernel's). No atomics: thread (c, bucket) owns
// column c of the rows r with r % buckets == bucket (blockIdx.y grid-strides
// over buckets, gridDim.y of them), zeroes them and walks every id in order.
// Lanes of a warp are neighbouring columns, so they read the same id.
template <typename T>
__device__ void strata_scatter_add_impl(const T *dy, const int *ids, T *dtable,
                                        long long N, long long V, long long H,
                                        long long vocabStart) {
  long long buckets = gridDim.y;
  for (long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x; c < H;
       c += (long long)blockDim.x * gridDim.x) {
    for (long long r = blockIdx.y; r < V; r += buckets)
      dtable[r * H + c] = T(0);
    for (long long n = 0; n < N; ++n) {
      long long row = (long long)ids[n] - vocabStart;
      if (row < 0 || row >= V || row % buckets != blockIdx.y)
        continue;
      dtable[row * H + c] += dy[n * H + c];
    }
  }
}

extern "C" __global__ void strata_gather_f32(const float *table, const int *ids,
                                             float *out, long long N,
                                             long long V, long long H,
                                             long long vocabStart) {
  strata_gather_impl(table, ids, out, N, V, H, vocabStart);
}
extern "C" __global__ void strata_scatter_add_f32(const float *dy,
                                                  const int *ids, float *dtable,
                                                  long long N, long long V,
                                                  long long H,
                                                  long long vocabStart) {
  strata_scatter_add_impl(dy, ids, dtable, N, V, H, vocabStart);
}
extern "C" __global__ void
strata_gather_f64(const double *table, const int *ids, double *out, long long N,
                  long long V, long long H, long long vocabStart) {
  strata_gather_impl(table, ids, out, N, V, H, vocabStart);
}
extern "C" __global__ void strata_scatter_add_f64(const double *dy,
                                                  const int *ids,
                                                  double *dtable, long long N,
                                                  long long V, long long H,
                                                  long long vocabStart) {
  strata_scatter_add_impl(dy, ids, dtable, N, V, H, vocabStart);
}
