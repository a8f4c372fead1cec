// attention and attention_grad: q [B,S,Hq,D], k and v [B,S,Hkv,D], query
// head h reading kv head h / (Hq / Hkv); query i sees key j when j <= i
// (causal) and j > i - window (window > 0), as runtime/kernels/Attention.h.
// Flash-attention style: one block per (query tile, batch * head), K and V
// tiles through shared memory, an online softmax; nothing S x S is stored.
// The backward runs three kernels, none with atomics:
//   1. strata_attn_stats: the forward again, keeping per query row the max m,
//      the sum l of exp(s - m) and delta = dout . out (scratch, 3 per row);
//   2. strata_attn_dq: per query tile, dq_i = sum_j ds_ij k_j over key tiles;
//   3. strata_attn_dkv: per key tile of a kv head, dk_j = sum_i ds_ij q_i and
//      dv_j = sum_i p_ij dout_i over its query heads, then query tiles, in
//      order;
// with p_ij = exp(s_ij - m_i) / l_i, ds_ij = scale p_ij (dout_i . v_j -
// delta_i). 1-D blocks of exactly 128 threads (kAttnThreads; others trap:
// threads map to tile rows), D <= kAttnMaxD; sums in T.

#define kAttnThreads 128
#define kAttnMaxD 128

// Tile sizes: BQ query rows by BK keys; shared memory stays under 48 KiB.
template <typename T> struct AttnTiles;
template <> struct AttnTiles<float> { static const int BQ = 16, BK = 16; };
template <> struct AttnTiles<double> { static const int BQ = 8, BK = 8; };

struct AttnDims {
  long long B, S, Hq, Hkv, D, window;
  int causal;
  // Element offset of row (b, s, head) of a tensor with `heads` heads.
  __device__ long long at(long long b, long long s, long long head,
                          long long heads) const {
    return ((b * S + s) * heads + head) * D;
  }
  __device__ bool sees(long long i, long long j) const {
    return i < S && j < S && !(causal && j > i) &&
           !(window > 0 && j <= i - window);
  }
  // Keys [lo, hi) that queries [i0, i1) may see.
  __device__ long long firstKey(long long i0) const {
    return window > 0 && i0 - window + 1 > 0 ? i0 - window + 1 : 0;
  }
  __device__ long long endKey(long long i1) const { return causal ? i1 : S; }
  // Queries [lo, hi) that may see keys [j0, j1).
  __device__ long long firstQuery(long long j0) const {
    return causal ? j0 : 0;
  }
  __device__ long long endQuery(long long j1) const {
    return window > 0 && j1 - 1 + window < S ? j1 - 1 + window : S;
  }
};

// The launch contract: threads map to rows of a tile.
__device__ void strata_attn_require_block() {
  if (blockDim.x != kAttnThreads || blockDim.y != 1 || blockDim.z != 1)
    __trap();
}

// rows [r0, r0 + n) of x (heads `heads`, head `h`, batch b) into sh[n][D];
// rows past S read 0.
template <typename T>
__device__ void strata_attn_load(const T *x, const AttnDims &a, long long b,
                                 long long r0, int n, long long h,
                                 long long heads, T *sh) {
  for (long long e = threadIdx.x; e < n * a.D; e += blockDim.x) {
    long long r = e / a.D, d = e - r * a.D;
    sh[e] = r0 + r < a.S ? x[a.at(b, r0 + r, h, heads) + d] : T(0);
  }
}

template <typename T>
__device__ T strata_attn_dot(const T *x, const T *y, long long D) {
  T acc = 0;
  for (long long d = 0; d < D; ++d)
    acc += x[d] * y[d];
  return acc;
}

// The forward over query tiles. With `stats`, writes (m, l, dout . out) of
// each query row there instead of out.
template <typename T>
__device__ void strata_attn_fwd_impl(const T *q, const T *k, const T *v, T *out,
                                     const T *dout, T *stats, AttnDims a,
                                     double scaleD) {
  strata_attn_require_block();
  const int BQ = AttnTiles<T>::BQ, BK = AttnTiles<T>::BK;
  const int L = kAttnThreads / BQ, R = kAttnMaxD / L;
  __shared__ T sQ[BQ * kAttnMaxD], sK[BK * kAttnMaxD], sV[BK * kAttnMaxD];
  __shared__ T sS[BQ * BK], sRed[kAttnThreads];
  const T scale = (T)scaleD, inf = strata_inf<T>();
  const int r = threadIdx.x / L, lane = threadIdx.x % L;
  const long long group = a.Hq / a.Hkv, tiles = (a.S + BQ - 1) / BQ;
  for (long long bh = blockIdx.y; bh < a.B * a.Hq; bh += gridDim.y)
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      long long b = bh / a.Hq, h = bh % a.Hq, g = h / group;
      long long i0 = tile * BQ, i = i0 + r;
      __syncthreads(); // the previous tile's reads are done
      strata_attn_load(q, a, b, i0, BQ, h, a.Hq, sQ);
      T m = -inf, l = 0, acc[R];
#pragma unroll
      for (int x = 0; x < R; ++x)
        acc[x] = 0;
      long long jEnd = a.endKey(i0 + BQ < a.S ? i0 + BQ : a.S);
      for (long long j0 = a.firstKey(i0); j0 < jEnd; j0 += BK) {
        __syncthreads();
        strata_attn_load(k, a, b, j0, BK, g, a.Hkv, sK);
        strata_attn_load(v, a, b, j0, BK, g, a.Hkv, sV);
        __syncthreads();
        for (int e = threadIdx.x; e < BQ * BK; e += blockDim.x) {
          int rr = e / BK, jj = e % BK;
          sS[e] =
              a.sees(i0 + rr, j0 + jj)
                  ? strata_attn_dot(sQ + rr * a.D, sK + jj * a.D, a.D) * scale
                  : -inf;
        }
        __syncthreads();
        T mNew = m;
        for (int jj = 0; jj < BK; ++jj)
          mNew = sS[r * BK + jj] > mNew ? sS[r * BK + jj] : mNew;
        if (mNew == -inf)
          continue; // nothing visible to this row yet
        T corr = strata_exp(m - mNew);
        l *= corr;
#pragma unroll
        for (int x = 0; x < R; ++x)
          acc[x] *= corr;
        for (int jj = 0; jj < BK; ++jj) {
          T p = strata_exp(sS[r * BK + jj] - mNew);
          l += p;
#pragma unroll
          for (int x = 0; x < R; ++x)
            if (lane + L * x < a.D)
              acc[x] += p * sV[jj * a.D + lane + L * x];
        }
        m = mNew;
      }
      T part = 0;
#pragma unroll
      for (int x = 0; x < R; ++x) {
        long long d = lane + L * x;
        if (d >= a.D || i >= a.S)
          continue;
        T o = l > 0 ? acc[x] / l : T(0);
        if (stats)
          part += dout[a.at(b, i, h, a.Hq) + d] * o;
        else
          out[a.at(b, i, h, a.Hq) + d] = o;
      }
      if (!stats)
        continue;
      sRed[threadIdx.x] = part;
      __syncthreads();
      if (lane == 0 && i < a.S) {
        T delta = 0;
        for (int x = 0; x < L; ++x)
          delta += sRed[r * L + x];
        T *st = stats + 3 * (bh * a.S + i);
        st[0] = m;
        st[1] = l;
        st[2] = delta;
      }
    }
}

// p_ij and ds_ij of a (query tile, key tile) pair into sP and sDS.
template <typename T>
__device__ void strata_attn_probs(const AttnDims &a, long long i0, long long j0,
                                  const T *sQ, const T *sDO, const T *sK,
                                  const T *sV, const T *sStat, T scale, T *sP,
                                  T *sDS) {
  const int BQ = AttnTiles<T>::BQ, BK = AttnTiles<T>::BK;
  for (int e = threadIdx.x; e < BQ * BK; e += blockDim.x) {
    int rr = e / BK, jj = e % BK;
    T p = 0, ds = 0;
    if (a.sees(i0 + rr, j0 + jj)) {
      const T *st = sStat + 3 * rr;
      T s = strata_attn_dot(sQ + rr * a.D, sK + jj * a.D, a.D) * scale;
      p = strata_exp(s - st[0]) / st[1];
      T dp = strata_attn_dot(sDO + rr * a.D, sV + jj * a.D, a.D);
      ds = scale * p * (dp - st[2]);
    }
    sP[e] = p;
    sDS[e] = ds;
  }
}

// The statistics of query rows [i0, i0 + BQ) of head bh into sStat.
template <typename T>
__device__ void strata_attn_load_stats(const T *stats, const AttnDims &a,
                                       long long bh, long long i0, T *sStat) {
  const int BQ = AttnTiles<T>::BQ;
  for (int e = threadIdx.x; e < 3 * BQ; e += blockDim.x)
    sStat[e] = i0 + e / 3 < a.S ? stats[3 * (bh * a.S + i0) + e] : T(1);
}

template <typename T>
__device__ void strata_attn_dq_impl(const T *dout, const T *q, const T *k,
                                    const T *v, const T *stats, T *dq,
                                    AttnDims a, double scaleD) {
  strata_attn_require_block();
  const int BQ = AttnTiles<T>::BQ, BK = AttnTiles<T>::BK;
  const int L = kAttnThreads / BQ, R = kAttnMaxD / L;
  __shared__ T sQ[BQ * kAttnMaxD], sDO[BQ * kAttnMaxD];
  __shared__ T sK[BK * kAttnMaxD], sV[BK * kAttnMaxD];
  __shared__ T sP[BQ * BK], sDS[BQ * BK], sStat[3 * BQ];
  const T scale = (T)scaleD;
  const int r = threadIdx.x / L, lane = threadIdx.x % L;
  const long long group = a.Hq / a.Hkv, tiles = (a.S + BQ - 1) / BQ;
  for (long long bh = blockIdx.y; bh < a.B * a.Hq; bh += gridDim.y)
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      long long b = bh / a.Hq, h = bh % a.Hq, g = h / group;
      long long i0 = tile * BQ, i = i0 + r;
      __syncthreads();
      strata_attn_load(q, a, b, i0, BQ, h, a.Hq, sQ);
      strata_attn_load(dout, a, b, i0, BQ, h, a.Hq, sDO);
      strata_attn_load_stats(stats, a, bh, i0, sStat);
      T acc[R];
#pragma unroll
      for (int x = 0; x < R; ++x)
        acc[x] = 0;
      long long jEnd = a.endKey(i0 + BQ < a.S ? i0 + BQ : a.S);
      for (long long j0 = a.firstKey(i0); j0 < jEnd; j0 += BK) {
        __syncthreads();
        strata_attn_load(k, a, b, j0, BK, g, a.Hkv, sK);
        strata_attn_load(v, a, b, j0, BK, g, a.Hkv, sV);
        __syncthreads();
        strata_attn_probs(a, i0, j0, sQ, sDO, sK, sV, sStat, scale, sP, sDS);
        __syncthreads();
        for (int jj = 0; jj < BK; ++jj) {
          T ds = sDS[r * BK + jj];
#pragma unroll
          for (int x = 0; x < R; ++x)
            if (lane + L * x < a.D)
              acc[x] += ds * sK[jj * a.D + lane + L * x];
        }
      }
#pragma unroll
      for (int x = 0; x < R; ++x)
        if (lane + L * x < a.D && i < a.S)
          dq[a.at(b, i, h, a.Hq) + lane + L * x] = acc[x];
    }
}

template <typename T>
__device__ void strata_attn_dkv_impl(const T *dout, const T *q, const T *k,
                                     const T *v, const T *stats, T *dk, T *dv,
                                     AttnDims a, double scaleD) {
  strata_attn_require_block();
  const int BQ = AttnTiles<T>::BQ, BK = AttnTiles<T>::BK;
  const int L = kAttnThreads / BK, R = kAttnMaxD / L;
  __shared__ T sQ[BQ * kAttnMaxD], sDO[BQ * kAttnMaxD];
  __shared__ T sK[BK * kAttnMaxD], sV[BK * kAttnMaxD];
  __shared__ T sP[BQ * BK], sDS[BQ * BK], sStat[3 * BQ];
  const T scale = (T)scaleD;
  const int r = threadIdx.x / L, lane = threadIdx.x % L;
  const long long group = a.Hq / a.Hkv, tiles = (a.S + BK - 1) / BK;
  for (long long bg = blockIdx.y; bg < a.B * a.Hkv; bg += gridDim.y)
    for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      long long b = bg / a.Hkv, g = bg % a.Hkv;
      long long j0 = tile * BK, j = j0 + r;
      __syncthreads();
      strata_attn_load(k, a, b, j0, BK, g, a.Hkv, sK);
      strata_attn_load(v, a, b, j0, BK, g, a.Hkv, sV);
      T accK[R], accV[R];
#pragma unroll
      for (int x = 0; x < R; ++x)
        accK[x] = accV[x] = 0;
      long long iBegin = a.firstQuery(j0);
      long long iEnd = a.endQuery(j0 + BK < a.S ? j0 + BK : a.S);
      for (long long h = g * group; h < (g + 1) * group; ++h)
        for (long long i0 = iBegin; i0 < iEnd; i0 += BQ) {
          long long bh = b * a.Hq + h;
          __syncthreads();
          strata_attn_load(q, a, b, i0, BQ, h, a.Hq, sQ);
          strata_attn_load(dout, a, b, i0, BQ, h, a.Hq, sDO);
          strata_attn_load_stats(stats, a, bh, i0, sStat);
          __syncthreads();
          strata_attn_probs(a, i0, j0, sQ, sDO, sK, sV, sStat, scale, sP, sDS);
          __syncthreads();
          for (int rr = 0; rr < BQ; ++rr) {
            T p = sP[rr * BK + r], ds = sDS[rr * BK + r];
#pragma unroll
            for (int x = 0; x < R; ++x)
              if (lane + L * x < a.D) {
                accV[x] += p * sDO[rr * a.D + lane + L * x];
                accK[x] += ds * sQ[rr * a.D + lane + L * x];
              }
          }
        }
#pragma unroll
      for (int x = 0; x < R; ++x)
        if (lane + L * x < a.D && j < a.S) {
          dk[a.at(b, j, g, a.Hkv) + lane + L * x] = accK[x];
          dv[a.at(b, j, g, a.Hkv) + lane + L * x] = accV[x];
        }
    }
}

extern "C" __global__ void __launch_bounds__(128, 1)
    strata_attn_fwd_f32(const float *q, const float *k, const float *v,
                        float *out, AttnDims a, double scale) {
  strata_attn_fwd_impl<float>(q, k, v, out, nullptr, nullptr, a, scale);
}
extern "C" __global__ void __launch_bounds__(128, 1)
    strata_attn_fwd_f64(const double *q, const double *k, const double *v,
                        double *out, AttnDims a, double scale) {
  strata_attn_fwd_impl<double>(q, k, v, out, nullptr, nullptr, a, scale);
}
extern "C" __global__ void __launch_bounds__(128, 1)
    strata_attn_stats_f32(const float *dout, const float *q, const float *k,
                          const float *v, float *stats, AttnDims a,
                          double scale) {
  strata_attn_fwd_impl<float>(q, k, v, nullptr, dout, stats, a, scale);
}
extern "C" __global__ void __launch_bounds__(128, 1)
    strata_attn_stats_f64(const double *dout, const double *q, const double *k,
                          const double *v, double *stats, AttnDims a,
                          double scale) {
  strata_attn_fwd_impl<double>(q, k, v, nullptr, dout, stats, a, scale);
}
extern "C" __global__ void __launch_bounds__(128, 1)
    strata_attn_dq_f32(const float *dout, const float *q, const float *k,
                       const float *v, const float *stats, float *dq,
                       AttnDims a, double scale) {
  strata_attn_dq_impl<float>(dout, q, k, v, stats, dq, a, scale);
}
extern "C" __global__ void __launch_bounds__(128, 1)
    strata_attn_dq_f64(const double *dout, const double *q, const double *k,
                       const double *v, const double *stats, double *dq,
                       AttnDims a, double scale) {
  strata_attn_dq_impl<double>(dout, q, k, v, stats, dq, a, scale);
}
extern "C" __global__ void __launch_bounds__(128, 1)
    strata_attn_dkv_f32(const float *dout, const float *q, const float *k,
                        const float *v, const float *stats, float *dk,
                        float *dv, AttnDims a, double scale) {
  strata_attn_dkv_impl<float>(dout, q, k, v, stats, dk, dv, a, scale);
}
extern "C" __global__ void __launch_bounds__(128, 1)
    strata_attn_dkv_f64(const double *dout, const double *q, const double *k,
                        const double *v, const double *stats, double *dk,
                        double *dv, AttnDims a, double scale) {
  strata_attn_dkv_impl<double>(dout, q, k, v, stats, dk, dv, a, scale);
}
