//===- Attention.cpp - Scaled dot-product attention with GQA/MQA
//------------===//
//
// Per (b, head) task, the whole S x S probability matrix of that head is
// built in a small scratch buffer (short sequences: S = 64 is 16 KB of
// floats), with K and V transposed to (D, S) so the score rows are
// vectorized over keys. Accumulation is in T (float for training, double for
// the finite-difference references); exp is FastMath's for float. The
// backward recomputes the probabilities and forms dS = P * (dP - rowsum(P dP))
// before the three products dQ = dS K, dK = dS^T Q, dV = P^T dO.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Attention.h"

#include "runtime/kernels/Check.h"
#include "runtime/kernels/FastMath.h"
#include "runtime/kernels/Parallel.h"

#include <algorithm>
#ifdef __AVX512F__
#include <immintrin.h>
#endif
#include <limits>
#include <type_traits>
#include <vector>

namespace strata::kernels {
namespace {

/// Element offset of row (b, s, head) in a [B, S, H, D] tensor.
struct Layout4 {
  int64_t S, H, D;
  int64_t at(int64_t b, int64_t s, int64_t h) const {
    return ((b * S + s) * H + h) * D;
  }
};

void checkDims(const AttentionDims &d, const char *kernel) {
  STRATA_KCHECK(d.B >= 0 && d.S >= 0 && d.D >= 0 && d.Hq > 0 && d.Hkv > 0,
                kernel, "sizes must be non-negative and head counts positive");
  STRATA_KCHECK(d.Hq % d.Hkv == 0, kernel,
                "Hq must be a multiple of Hkv (query head h uses kv head "
                "h / (Hq / Hkv))");
}

/// (b, head) tasks per parallel chunk: ~S^2 D multiply-adds per task, and a
/// chunk should carry >= ~64K of them so tiny problems (tests, finite
/// differences) run inline instead of paying a fork/join per call.
int64_t taskGrain(const AttentionDims &d) {
  int64_t work = std::max<int64_t>(1, d.S * d.S * std::max<int64_t>(d.D, 1));
  return std::max<int64_t>(1, 65536 / work);
}

/// Register tiles: kRows output rows by 16 columns (one 512-bit vector of
/// floats per row): each step loads one row of x and broadcasts kRows
/// weights, so kRows independent FMA chains share every load.
constexpr int64_t kBlock = 16, kRows = 4;

int64_t roundUp(int64_t x) { return (x + kBlock - 1) / kBlock * kBlock; }

/// out[k * ldo + c] = scale * sum_{r0 <= r < r1} w[k * wk + r * wr] *
/// x[r * xs + c] for the K rows k and the C columns c. Every product of
/// attention is one: scores (w = q rows, x = K^T), P V and dS K (w = rows
/// of P or dS), dS^T Q and P^T dO (w = columns of dS or P).
template <typename T, int K>
void tile(const T *w, int64_t wk, int64_t wr, const T *x, int64_t xs,
          int64_t r0, int64_t r1, int64_t C, T *out, int64_t ldo, T scale) {
  int64_t c0 = 0;
  for (; c0 + kBlock <= C; c0 += kBlock) {
    // Two sums per row (even and odd r): twice the independent chains, and
    // sums half as long.
    T acc[2][K][kBlock] = {};
    int64_t r = r0;
    for (; r + 2 <= r1; r += 2)
      for (int h = 0; h < 2; ++h) {
        const T *xr = x + (r + h) * xs + c0;
        for (int k = 0; k < K; ++k) {
          T wkr = w[k * wk + (r + h) * wr];
#pragma omp simd
          for (int64_t c = 0; c < kBlock; ++c)
            acc[h][k][c] += wkr * xr[c];
        }
      }
    if (r < r1) {
      const T *xr = x + r * xs + c0;
      for (int k = 0; k < K; ++k) {
        T wkr = w[k * wk + r * wr];
#pragma omp simd
        for (int64_t c = 0; c < kBlock; ++c)
          acc[0][k][c] += wkr * xr[c];
      }
    }
    for (int k = 0; k < K; ++k)
#pragma omp simd
      for (int64_t c = 0; c < kBlock; ++c)
        out[k * ldo + c0 + c] = (acc[0][k][c] + acc[1][k][c]) * scale;
  }
  for (int64_t c = c0; c < C; ++c)
    for (int k = 0; k < K; ++k) {
      T acc = 0;
      for (int64_t r = r0; r < r1; ++r)
        acc += w[k * wk + r * wr] * x[r * xs + c];
      out[k * ldo + c] = acc * scale;
    }
}

/// tile<K> for a run-time K in [1, kRows].
template <typename T>
void tileRows(int64_t K, const T *w, int64_t wk, int64_t wr, const T *x,
              int64_t xs, int64_t r0, int64_t r1, int64_t C, T *out,
              int64_t ldo, T scale) {
  switch (K) {
  case 4:
    return tile<T, 4>(w, wk, wr, x, xs, r0, r1, C, out, ldo, scale);
  case 3:
    return tile<T, 3>(w, wk, wr, x, xs, r0, r1, C, out, ldo, scale);
  case 2:
    return tile<T, 2>(w, wk, wr, x, xs, r0, r1, C, out, ldo, scale);
  default:
    return tile<T, 1>(w, wk, wr, x, xs, r0, r1, C, out, ldo, scale);
  }
}

/// row[0, Sp) = softmax of the scores row[lo, n), zero before lo (keys
/// outside a sliding window) and past n. Loops run over whole key blocks
/// from lo (no scalar remainders): masked keys enter the max as -inf and
/// leave the sum as 0.
template <typename T>
void softmaxRow(T *row, int64_t lo, int64_t n, int64_t Sp) {
  int64_t nb = roundUp(n);
  std::fill(row, row + lo, T(0));
  std::fill(row + n, row + nb, -std::numeric_limits<T>::infinity());
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t j = lo; j < nb; ++j)
    m = std::max(m, row[j]);
#pragma omp simd
  for (int64_t j = lo; j < nb; ++j)
    row[j] = kexp(row[j] - m);
  std::fill(row + n, row + Sp, T(0));
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = lo; j < nb; ++j)
    sum += row[j];
  T inv = T(1) / sum;
#pragma omp simd
  for (int64_t j = lo; j < nb; ++j)
    row[j] *= inv;
}

/// ds[0, nb) = scale * p * (dp - sum_j p_j dp_j), with dp in ds on entry.
template <typename T> void dsRow(const T *p, T *ds, int64_t nb, T scale) {
  T pdp = 0;
#pragma omp simd reduction(+ : pdp)
  for (int64_t j = 0; j < nb; ++j)
    pdp += p[j] * ds[j];
#pragma omp simd
  for (int64_t j = 0; j < nb; ++j)
    ds[j] = scale * p[j] * (ds[j] - pdp);
}

#ifdef __AVX512F__
// GCC 12's _mm512_reduce_* read an "undefined" vector it then warns about.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// fastExp on 16 lanes (the same Cephes reduction and polynomial), for
/// softmaxRow<float>; ties of the range reduction round to even.
inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.33f)),
                    _mm512_set1_ps(88.0f));
  __m512i k = _mm512_cvtps_epi32(
      _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)));
  __m512 fk = _mm512_cvtepi32_ps(k);
  __m512 r = _mm512_fnmadd_ps(fk, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(fk, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                  1.6666665459e-1f, 5.0000001201e-1f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  __m512 y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r),
                             _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  __m512i e =
      _mm512_slli_epi32(_mm512_add_epi32(k, _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}

/// softmaxRow for float on 16-lane vectors: the generic loops ended each
/// reduction with 16 dependent scalar adds (max, sum) and were half the
/// forward's time at S = 64.
template <>
void softmaxRow<float>(float *row, int64_t lo, int64_t n, int64_t Sp) {
  const int64_t nb = roundUp(n);
  auto live = [&](int64_t j) { // lanes with lo <= key j + l < n
    __mmask16 below =
        n - j >= kBlock ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1);
    __mmask16 above = lo <= j            ? __mmask16(0xffff)
                      : lo - j >= kBlock ? __mmask16(0)
                                         : __mmask16(~((1u << (lo - j)) - 1));
    return __mmask16(below & above);
  };
  __m512 mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < nb; j += kBlock)
    mx = _mm512_mask_max_ps(mx, live(j), mx, _mm512_loadu_ps(row + j));
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < nb; j += kBlock) {
    __m512 e = _mm512_maskz_mov_ps(
        live(j), exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), m)));
    _mm512_storeu_ps(row + j, e);
    sum = _mm512_add_ps(sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t j = 0; j < nb; j += kBlock)
    _mm512_storeu_ps(row + j, _mm512_mul_ps(_mm512_loadu_ps(row + j), inv));
  std::fill(row + nb, row + Sp, 0.0f);
}
/// dsRow for float: one horizontal sum per row (nb is whole key blocks).
template <>
void dsRow<float>(const float *p, float *ds, int64_t nb, float scale) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < nb; j += kBlock)
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(p + j), _mm512_loadu_ps(ds + j), acc);
  const __m512 pdp = _mm512_set1_ps(_mm512_reduce_add_ps(acc));
  const __m512 sc = _mm512_set1_ps(scale);
  for (int64_t j = 0; j < nb; j += kBlock) {
    __m512 sp = _mm512_mul_ps(sc, _mm512_loadu_ps(p + j));
    _mm512_storeu_ps(
        ds + j, _mm512_mul_ps(sp, _mm512_sub_ps(_mm512_loadu_ps(ds + j), pdp)));
  }
}

/// xt[d, j] = x[j * xs + d] for one 8 x 8 block (rows j of x, columns d).
inline void transpose8x8(const float *x, int64_t xs, float *xt, int64_t ld) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i)
    r[i] = _mm256_loadu_ps(x + i * xs);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(xt + i * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(xt + (i + 4) * ld,
                     _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#pragma GCC diagnostic pop
#endif

/// One (b, head) task's view and scratch: the head's rows of q (and dout),
/// K and V transposed to (D, Sp) with Sp = S rounded up to whole key blocks
/// (zero padded), and the S x Sp probabilities P (and dS), each row zero
/// past its visible keys.
template <typename T> struct Head {
  int64_t S, Sp, D;
  bool causal;
  int64_t window; // > 0: query i sees keys [i - window + 1, i]
  T scale;
  std::vector<T> kt, vt, p, ds;
  Head(int64_t S, int64_t D, bool causal, int64_t window, T scale)
      : S(S), Sp(roundUp(S)), D(D), causal(causal), window(window),
        scale(scale), kt(D * Sp), vt(D * Sp), p(S * Sp), ds(S * Sp) {}

  /// xt[d, j] = x[j * xs + d].
  void transpose(const T *x, int64_t xs, std::vector<T> &xt) {
    int64_t j8 = 0, d8 = 0;
#ifdef __AVX512F__
    // 8 x 8 blocks in registers: the scalar loop was a third of the
    // forward's own (non-tile) time.
    if constexpr (std::is_same_v<T, float>) {
      j8 = S / 8 * 8, d8 = D / 8 * 8;
      for (int64_t j = 0; j < j8; j += 8)
        for (int64_t d = 0; d < d8; d += 8)
          transpose8x8(x + j * xs + d, xs, &xt[d * Sp + j], Sp);
    }
#endif
    for (int64_t j = 0; j < S; ++j)
      for (int64_t d = j < j8 ? d8 : 0; d < D; ++d)
        xt[d * Sp + j] = x[j * xs + d];
  }
  /// Keys visible to query i.
  int64_t visible(int64_t i) const { return causal ? i + 1 : S; }
  /// The first key visible to query i.
  int64_t first(int64_t i) const {
    return window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
  }

  /// Rows [i0, i0 + K) of P from the head's queries q (row stride qs).
  void probs(const T *q, int64_t qs, int64_t i0, int64_t K) {
    int64_t nb = roundUp(visible(i0 + K - 1));
    tileRows(K, q + i0 * qs, qs, int64_t(1), kt.data(), Sp, int64_t(0), D, nb,
             &p[i0 * Sp], Sp, scale);
    for (int64_t k = 0; k < K; ++k)
      softmaxRow(&p[(i0 + k) * Sp], first(i0 + k), visible(i0 + k), Sp);
  }
};

} // namespace

template <typename T>
void attentionFwd(const T *q, const T *k, const T *v, T *out,
                  const AttentionDims &dims, bool causal, double scale,
                  int64_t window) {
  checkDims(dims, "attentionFwd");
  // Plain locals, not a structured binding: clang < 16 cannot capture those.
  const int64_t B = dims.B, S = dims.S, Hq = dims.Hq, Hkv = dims.Hkv,
                D = dims.D;
  Layout4 ql{S, Hq, D}, kl{S, Hkv, D};
  const int64_t group = Hq / Hkv, qs = Hq * D, ks = Hkv * D;
  parallelFor(0, B * Hq, taskGrain(dims), [&](int64_t lo, int64_t hi) {
    Head<T> head(S, D, causal, window, T(scale));
    for (int64_t task = lo; task < hi; ++task) {
      int64_t b = task / Hq, h = task % Hq, g = h / group;
      head.transpose(k + kl.at(b, 0, g), ks, head.kt);
      for (int64_t i0 = 0; i0 < S; i0 += kRows) {
        int64_t K = std::min(kRows, S - i0);
        head.probs(q + ql.at(b, 0, h), qs, i0, K);
        // out_i = sum_j p_ij v_j (p is zero past each row's visible keys).
        tileRows(K, &head.p[i0 * head.Sp], head.Sp, int64_t(1),
                 v + kl.at(b, 0, g), ks, int64_t(0), head.visible(i0 + K - 1),
                 D, out + ql.at(b, i0, h), qs, T(1));
      }
    }
  });
}

template <typename T>
void attentionBwd(const T *dout, const T *q, const T *k, const T *v, T *dq,
                  T *dk, T *dv, const AttentionDims &dims, bool causal,
                  double scale, int64_t window) {
  checkDims(dims, "attentionBwd");
  // Plain locals, not a structured binding: clang < 16 cannot capture those.
  const int64_t B = dims.B, S = dims.S, Hq = dims.Hq, Hkv = dims.Hkv,
                D = dims.D;
  Layout4 ql{S, Hq, D}, kl{S, Hkv, D};
  const int64_t group = Hq / Hkv, qs = Hq * D, ks = Hkv * D;
  // With group > 1 several tasks feed one kv head: each task writes its own
  // (S, D) slice of a parts buffer, reduced in head order afterwards.
  std::vector<T> dkParts, dvParts;
  if (group > 1) {
    dkParts.resize(B * Hq * S * D);
    dvParts.resize(B * Hq * S * D);
  }
  parallelFor(0, B * Hq, taskGrain(dims), [&](int64_t lo, int64_t hi) {
    Head<T> head(S, D, causal, window, T(scale));
    const int64_t Sp = head.Sp;
    for (int64_t task = lo; task < hi; ++task) {
      int64_t b = task / Hq, h = task % Hq, g = h / group;
      const T *qh = q + ql.at(b, 0, h), *doh = dout + ql.at(b, 0, h);
      const T *kh = k + kl.at(b, 0, g);
      head.transpose(kh, ks, head.kt);
      head.transpose(v + kl.at(b, 0, g), ks, head.vt);
      for (int64_t i0 = 0; i0 < S; i0 += kRows) {
        int64_t K = std::min(kRows, S - i0);
        int64_t n = head.visible(i0 + K - 1), nb = roundUp(n);
        head.probs(qh, qs, i0, K);
        // dp_ij = dout_i . v_j, then ds_ij = scale p_ij (dp_ij - sum_l p_il
        // dp_il) over whole key blocks: p is 0 past each row's visible keys,
        // so ds is too (dp there is finite).
        tileRows(K, doh + i0 * qs, qs, int64_t(1), head.vt.data(), Sp,
                 int64_t(0), D, nb, &head.ds[i0 * Sp], Sp, T(1));
        for (int64_t r = i0; r < i0 + K; ++r) {
          dsRow(&head.p[r * Sp], &head.ds[r * Sp], nb, T(scale));
          std::fill(&head.ds[r * Sp] + nb, &head.ds[r * Sp] + Sp, T(0));
        }
        // dq_i = sum_j ds_ij k_j.
        tileRows(K, &head.ds[i0 * Sp], Sp, int64_t(1), kh, ks, int64_t(0), n, D,
                 dq + ql.at(b, i0, h), qs, T(1));
      }
      // dk_j = sum_i ds_ij q_i, dv_j = sum_i p_ij dout_i over the queries
      // that see key j (i >= j when causal; the zeros of ds and p cover the
      // rows a tile's later keys do not see).
      for (int64_t j0 = 0; j0 < S; j0 += kRows) {
        int64_t K = std::min(kRows, S - j0), i0 = causal ? j0 : 0;
        T *dkj, *dvj;
        int64_t ld;
        if (group > 1) {
          dkj = &dkParts[(task * S + j0) * D];
          dvj = &dvParts[(task * S + j0) * D];
          ld = D;
        } else {
          dkj = dk + kl.at(b, j0, g);
          dvj = dv + kl.at(b, j0, g);
          ld = ks;
        }
        tileRows(K, &head.ds[j0], int64_t(1), Sp, qh, qs, i0, S, D, dkj, ld,
                 T(1));
        tileRows(K, &head.p[j0], int64_t(1), Sp, doh, qs, i0, S, D, dvj, ld,
                 T(1));
      }
    }
  });
  if (group == 1)
    return;
  parallelFor(0, B * Hkv, taskGrain(dims), [&](int64_t lo, int64_t hi) {
    for (int64_t task = lo; task < hi; ++task) {
      int64_t b = task / Hkv, g = task % Hkv;
      for (int64_t j = 0; j < S; ++j) {
        T *dkj = dk + kl.at(b, j, g), *dvj = dv + kl.at(b, j, g);
        for (int64_t d = 0; d < D; ++d) {
          T sk = 0, sv = 0;
          for (int64_t h = g * group; h < (g + 1) * group; ++h) {
            sk += dkParts[((b * Hq + h) * S + j) * D + d];
            sv += dvParts[((b * Hq + h) * S + j) * D + d];
          }
          dkj[d] = sk;
          dvj[d] = sv;
        }
      }
    }
  });
}

#define STRATA_INSTANTIATE(T)                                                  \
  template void attentionFwd<T>(const T *, const T *, const T *, T *,          \
                                const AttentionDims &, bool, double, int64_t); \
  template void attentionBwd<T>(const T *, const T *, const T *, const T *,    \
                                T *, T *, T *, const AttentionDims &, bool,    \
                                double, int64_t);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

} // namespace strata::kernels
