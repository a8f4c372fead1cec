// cross_entropy and cross_entropy_grad over rows of logits [N, V] with i32
// labels; rows whose label is outside [0, V) are ignored (no loss, zero
// gradient) and the mean is over the valid rows, as in
// runtime/kernels/Softmax.cpp: row max in T, sum of exp(x - max) in double,
// the loss of a row in double, the rows' losses added serially in row order.
// Row kernels: one block per row (blockIdx.x grid-strides over rows), 1-D
// blocks of a power of two <= 256 threads.

// The max (in T) and sum of exp(x - max) (in double) of a row.
template <typename T>
__device__ void strata_row_stats(const T *row, long long V, T &m, double &sum) {
  __shared__ double red[256];
  T mx = -strata_inf<T>();
  for (long long c = threadIdx.x; c < V; c += blockDim.x)
    mx = row[c] > mx ? row[c] : mx;
  m = (T)strata_block_max((double)mx, red);
  double s = 0;
  for (long long c = threadIdx.x; c < V; c += blockDim.x)
    s += (double)strata_exp(row[c] - m);
  sum = strata_block_sum(s, red);
}

// rowLoss[n] = logsumexp(row n) - row n [label], 0 for an ignored row.
template <typename T>
__device__ void strata_ce_rows_impl(const T *logits, const int *labels,
                                    double *rowLoss, long long N, long long V) {
  for (long long n = blockIdx.x; n < N; n += gridDim.x) {
    int label = labels[n];
    if (label < 0 || label >= V) {
      if (threadIdx.x == 0)
        rowLoss[n] = 0;
      continue;
    }
    const T *row = logits + n * V;
    T m;
    double sum;
    strata_row_stats(row, V, m, sum);
    if (threadIdx.x == 0)
      rowLoss[n] = (double)m + log(sum) - (double)row[label];
  }
}

// loss = sum of rowLoss in row order / valid rows (0 if none): one thread.
template <typename T>
__device__ void strata_ce_mean_impl(const double *rowLoss, const int *labels,
                                    T *loss, long long N, long long V) {
  if (threadIdx.x != 0 || blockIdx.x != 0)
    return;
  double sum = 0;
  long long valid = 0;
  for (long long n = 0; n < N; ++n) {
    sum += rowLoss[n];
    valid += labels[n] >= 0 && labels[n] < V;
  }
  *loss = valid ? (T)(sum / valid) : T(0);
}

// *valid = the number of labels in [0, V): one block.
extern "C" __global__ void __launch_bounds__(256)
    strata_count_labels(const int *labels, long long N, long long V,
                        long long *valid) {
  __shared__ long long red[256];
  long long c = 0;
  for (long long n = threadIdx.x; n < N; n += blockDim.x)
    c += labels[n] >= 0 && labels[n] < V;
  c = strata_block_sum(c, red);
  if (threadIdx.x == 0)
    *valid = c;
}

// dlogits = (softmax(row) - one_hot(label)) * dloss / valid, without
// storing the probabilities. dlogits may alias logits: every read of a row
// is done before its writes.
template <typename T>
__device__ void strata_ce_grad_impl(const T *dloss, const T *logits,
                                    const int *labels, const long long *valid,
                                    T *dlogits, long long N, long long V) {
  double g = *valid ? (double)*dloss / *valid : 0.0;
  for (long long n = blockIdx.x; n < N; n += gridDim.x) {
    const T *row = logits + n * V;
    T *drow = dlogits + n * V;
    int label = labels[n];
    if (label < 0 || label >= V) {
      for (long long c = threadIdx.x; c < V; c += blockDim.x)
        drow[c] = T(0);
      continue;
    }
    T m;
    double sum;
    strata_row_stats(row, V, m, sum);
    T logSum = (T)log(sum), gT = (T)g;
    double pLabel = exp((double)(row[label] - m) - log(sum));
    __syncthreads(); // every thread has read row[label]
    for (long long c = threadIdx.x; c < V; c += blockDim.x)
      drow[c] = gT * strata_exp((row[c] - m) - logSum);
    __syncthreads();
    if (threadIdx.x == 0)
      drow[label] = (T)(g * (pLabel - 1.0));
  }
}

extern "C" __global__ void __launch_bounds__(256)
    strata_ce_rows_f32(const float *logits, const int *labels, double *rowLoss,
                       long long N, long long V) {
  strata_ce_rows_impl(logits, labels, rowLoss, N, V);
}
extern "C" __global__ void __launch_bounds__(256)
    strata_ce_rows_f64(const double *logits, const int *labels, double *rowLoss,
                       long long N, long long V) {
  strata_ce_rows_impl(logits, labels, rowLoss, N, V);
}
extern "C" __global__ void strata_ce_mean_f32(const double *rowLoss,
                                              const int *labels, float *loss,
                                              long long N, long long V) {
  strata_ce_mean_impl(rowLoss, labels, loss, N, V);
}
extern "C" __global__ void strata_ce_mean_f64(const double *rowLoss,
                                              const int *labels, double *loss,
                                              long long N, long long V) {
  strata_ce_mean_impl(rowLoss, labels, loss, N, V);
}
extern "C" __global__ void __launch_bounds__(256)
    strata_ce_grad_f32(const float *dloss, const float *logits,
                       const int *labels, const long long *valid,
                       float *dlogits, long long N, long long V) {
  strata_ce_grad_impl(dloss, logits, labels, valid, dlogits, N, V);
}
extern "C" __global__ void __launch_bounds__(256)
    strata_ce_grad_f64(const double *dloss, const double *logits,
                       const int *labels, const long long *valid,
                       double *dlogits, long long N, long long V) {
  strata_ce_grad_impl(dloss, logits, labels, valid, dlogits, N, V);
}
