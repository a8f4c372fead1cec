// rope: rotate-half rotary embedding of x [B, S, H, D] (runtime/kernels/
// Rope.h). strata_rope_table fills the (S, D/2) cos and sin table in T from
// angles in double (frequencies with Llama-3.1 scaling when
// originalMaxPositions > 0), as the CPU kernel does; strata_rope rotates
// each (row, i) pair by it (sign -1: the inverse). y may alias x.
// 1-D blocks of any size, any grid (grid-stride).

struct RopeParams {
  double theta, factor, lowFreqFactor, highFreqFactor, sign;
  long long B, S, H, D, posOffset, originalMaxPositions;
};

// f_i = theta^(-2i/D), scaled as transformers' _compute_llama3_parameters.
__device__ double strata_rope_freq(const RopeParams &p, long long i) {
  double f = pow(p.theta, -2.0 * (double)i / (double)p.D);
  if (p.originalMaxPositions <= 0)
    return f;
  double L = (double)p.originalMaxPositions;
  double lowWavelen = L / p.lowFreqFactor, highWavelen = L / p.highFreqFactor;
  double wavelen = 2 * 3.14159265358979323846 / f;
  if (wavelen > lowWavelen)
    return f / p.factor;
  if (wavelen >= highWavelen) {
    double a =
        (L / wavelen - p.lowFreqFactor) / (p.highFreqFactor - p.lowFreqFactor);
    return (1 - a) * f / p.factor + a * f;
  }
  return f;
}

template <typename T>
__device__ void strata_rope_table_impl(T *table, RopeParams p) {
  long long half = p.D / 2, n = p.S * half;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;
       e += (long long)blockDim.x * gridDim.x) {
    long long s = e / half, i = e - s * half;
    double a = (double)(s + p.posOffset) * strata_rope_freq(p, i);
    table[e] = (T)cos(a);
    table[n + e] = (T)(p.sign * sin(a));
  }
}

template <typename T>
__device__ void strata_rope_impl(const T *x, T *y, const T *table,
                                 RopeParams p) {
  long long half = p.D / 2, n = p.B * p.S * p.H * half;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;
       e += (long long)blockDim.x * gridDim.x) {
    long long row = e / half, i = e - row * half;
    long long s = row / p.H % p.S;
    T c = table[s * half + i], sn = table[p.S * half + s * half + i];
    T x1 = x[row * p.D + i], x2 = x[row * p.D + i + half];
    y[row * p.D + i] = x1 * c - x2 * sn;
    y[row * p.D + i + half] = x2 * c + x1 * sn;
  }
}

extern "C" __global__ void strata_rope_table_f32(float *table, RopeParams p) {
  strata_rope_table_impl(table, p);
}
extern "C" __global__ void strata_rope_table_f64(double *table, RopeParams p) {
  strata_rope_table_impl(table, p);
}
extern "C" __global__ void strata_rope_f32(const float *x, float *y,
                                           const float *table, RopeParams p) {
  strata_rope_impl(x, y, table, p);
}
extern "C" __global__ void strata_rope_f64(const double *x, double *y,
                                           const double *table, RopeParams p) {
  strata_rope_impl(x, y, table, p);
}
