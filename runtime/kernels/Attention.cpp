//===- Attention.cpp - Scaled dot-product attention with GQA/MQA ------------===//
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
#include <limits>
#include <vector>

namespace strata::kernels {
namespace {

/// Element offset of row (b, s, head) in a [B, S, H, D] tensor.
struct Layout4 {
  int64_t S, H, D;
  int64_t at(int64_t b, int64_t s, int64_t h) const { return ((b * S + s) * H + h) * D; }
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

/// Register blocks: 16 keys of a score row, 16 channels of an output row
/// (one 512-bit vector of floats; the compiler keeps each block in registers).
constexpr int64_t kBlock = 16;
/// Independent partial sums per block, enough to hide the FMA latency; the
/// code below sums exactly four.
constexpr int64_t kChains = 4;

int64_t roundUp(int64_t x) { return (x + kBlock - 1) / kBlock * kBlock; }

/// Scratch of one task: the head's K (and V) transposed to (D, Sp), Sp = S
/// rounded up to whole key blocks (zero padded), and the S x Sp
/// probabilities (and dS), each row zero past its visible keys.
template <typename T> struct Head {
  int64_t S, Sp, D;
  std::vector<T> kt, vt, p, ds;
  Head(int64_t S, int64_t D)
      : S(S), Sp(roundUp(S)), D(D), kt(D * Sp), vt(D * Sp), p(S * Sp),
        ds(S * Sp) {}

  /// xt[d, j] = x[b, j, g, d].
  void transpose(const T *x, Layout4 l, int64_t b, int64_t g, std::vector<T> &xt) {
    for (int64_t j = 0; j < S; ++j) {
      const T *xj = x + l.at(b, j, g);
      for (int64_t d = 0; d < D; ++d)
        xt[d * Sp + j] = xj[d];
    }
  }

  /// row[j] = scale * a . xt[:, j] for the key blocks covering j < n.
  void rowTimes(const T *a, const std::vector<T> &xt, int64_t n, T scale, T *row) {
    for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
      // kChains independent sums over d: one chain would wait on each FMA.
      T acc[kChains][kBlock] = {};
      int64_t d = 0;
      for (; d + kChains <= D; d += kChains)
        for (int64_t c = 0; c < kChains; ++c) {
          T ad = a[d + c];
          const T *xd = &xt[(d + c) * Sp + j0];
#pragma omp simd
          for (int64_t j = 0; j < kBlock; ++j)
            acc[c][j] += ad * xd[j];
        }
      for (; d < D; ++d) {
        T ad = a[d];
        const T *xd = &xt[d * Sp + j0];
#pragma omp simd
        for (int64_t j = 0; j < kBlock; ++j)
          acc[0][j] += ad * xd[j];
      }
#pragma omp simd
      for (int64_t j = 0; j < kBlock; ++j)
        row[j0 + j] = ((acc[0][j] + acc[1][j]) + (acc[2][j] + acc[3][j])) * scale;
    }
  }

  /// p[i, :] = softmax of query i's scores over its n visible keys, zero
  /// past them; returns n. Loops run over whole key blocks (no scalar
  /// remainders): masked keys enter the max as -inf and leave the sum as 0.
  int64_t probs(const T *qi, int64_t i, bool causal, T scale) {
    int64_t n = causal ? i + 1 : S, nb = roundUp(n);
    T *row = &p[i * Sp];
    rowTimes(qi, kt, n, scale, row);
    std::fill(row + n, row + nb, -std::numeric_limits<T>::infinity());
    T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < nb; ++j)
      m = std::max(m, row[j]);
#pragma omp simd
    for (int64_t j = 0; j < nb; ++j)
      row[j] = kexp(row[j] - m);
    std::fill(row + n, row + Sp, T(0));
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < nb; ++j)
      sum += row[j];
    T inv = T(1) / sum;
#pragma omp simd
    for (int64_t j = 0; j < nb; ++j)
      row[j] *= inv;
    return n;
  }
};

/// out[d] = sum_r w[r * ws] x[r * xs + d] over rows r in [r0, r1), d < D,
/// channel blocks in registers, kChains rows at a time into separate sums.
/// Strides let it walk a column of P or dS.
template <typename T>
void weightedSum(const T *w, int64_t ws, const T *x, int64_t xs, int64_t r0,
                 int64_t r1, int64_t D, T *out) {
  int64_t d0 = 0;
  for (; d0 + kBlock <= D; d0 += kBlock) {
    T acc[kChains][kBlock] = {};
    int64_t r = r0;
    for (; r + kChains <= r1; r += kChains)
      for (int64_t c = 0; c < kChains; ++c) {
        T wr = w[(r + c) * ws];
        const T *xr = x + (r + c) * xs + d0;
#pragma omp simd
        for (int64_t d = 0; d < kBlock; ++d)
          acc[c][d] += wr * xr[d];
      }
    for (; r < r1; ++r) {
      T wr = w[r * ws];
      const T *xr = x + r * xs + d0;
#pragma omp simd
      for (int64_t d = 0; d < kBlock; ++d)
        acc[0][d] += wr * xr[d];
    }
#pragma omp simd
    for (int64_t d = 0; d < kBlock; ++d)
      out[d0 + d] = (acc[0][d] + acc[1][d]) + (acc[2][d] + acc[3][d]);
  }
  for (int64_t d = d0; d < D; ++d) {
    T acc = 0;
    for (int64_t r = r0; r < r1; ++r)
      acc += w[r * ws] * x[r * xs + d];
    out[d] = acc;
  }
}

} // namespace

template <typename T>
void attentionFwd(const T *q, const T *k, const T *v, T *out,
                  const AttentionDims &dims, bool causal, double scale) {
  checkDims(dims, "attentionFwd");
  // Plain locals, not a structured binding: clang < 16 cannot capture those.
  const int64_t B = dims.B, S = dims.S, Hq = dims.Hq, Hkv = dims.Hkv, D = dims.D;
  Layout4 ql{S, Hq, D}, kl{S, Hkv, D};
  int64_t group = Hq / Hkv;
  parallelFor(0, B * Hq, taskGrain(dims), [&](int64_t lo, int64_t hi) {
    Head<T> head(S, D);
    for (int64_t task = lo; task < hi; ++task) {
      int64_t b = task / Hq, h = task % Hq, g = h / group;
      head.transpose(k, kl, b, g, head.kt);
      const T *vh = v + kl.at(b, 0, g);
      for (int64_t i = 0; i < S; ++i) {
        int64_t n = head.probs(q + ql.at(b, i, h), i, causal, T(scale));
        weightedSum(&head.p[i * head.Sp], 1, vh, Hkv * D, 0, n, D,
                    out + ql.at(b, i, h));
      }
    }
  });
}

template <typename T>
void attentionBwd(const T *dout, const T *q, const T *k, const T *v, T *dq,
                  T *dk, T *dv, const AttentionDims &dims, bool causal,
                  double scale) {
  checkDims(dims, "attentionBwd");
  // Plain locals, not a structured binding: clang < 16 cannot capture those.
  const int64_t B = dims.B, S = dims.S, Hq = dims.Hq, Hkv = dims.Hkv, D = dims.D;
  Layout4 ql{S, Hq, D}, kl{S, Hkv, D};
  int64_t group = Hq / Hkv;
  // With group > 1 several tasks feed one kv head: each task writes its own
  // (S, D) slice of a parts buffer, reduced in head order afterwards.
  std::vector<T> dkParts, dvParts;
  if (group > 1) {
    dkParts.resize(B * Hq * S * D);
    dvParts.resize(B * Hq * S * D);
  }
  parallelFor(0, B * Hq, taskGrain(dims), [&](int64_t lo, int64_t hi) {
    Head<T> head(S, D);
    const int64_t Sp = head.Sp, qs = Hq * D, ks = Hkv * D;
    for (int64_t task = lo; task < hi; ++task) {
      int64_t b = task / Hq, h = task % Hq, g = h / group;
      head.transpose(k, kl, b, g, head.kt);
      head.transpose(v, kl, b, g, head.vt);
      const T *qh = q + ql.at(b, 0, h), *doh = dout + ql.at(b, 0, h);
      const T *kh = k + kl.at(b, 0, g);
      for (int64_t i = 0; i < S; ++i) {
        int64_t n = head.probs(qh + i * qs, i, causal, T(scale));
        const T *p = &head.p[i * Sp];
        // ds_j = scale p_j (dp_j - sum_l p_l dp_l), dp_j = dout_i . v_j.
        T *ds = &head.ds[i * Sp];
        head.rowTimes(doh + i * qs, head.vt, n, T(1), ds);
        // Whole key blocks: p is 0 past n, so ds is too (dp there is finite).
        int64_t nb = roundUp(n);
        T pdp = 0;
#pragma omp simd reduction(+ : pdp)
        for (int64_t j = 0; j < nb; ++j)
          pdp += p[j] * ds[j];
#pragma omp simd
        for (int64_t j = 0; j < nb; ++j)
          ds[j] = T(scale) * p[j] * (ds[j] - pdp);
        std::fill(ds + nb, ds + Sp, T(0));
        weightedSum(ds, 1, kh, ks, 0, n, D, dq + ql.at(b, i, h));
      }
      // dk_j = sum_i ds_ij q_i, dv_j = sum_i p_ij dout_i over the queries
      // that see key j (i >= j when causal).
      for (int64_t j = 0; j < S; ++j) {
        T *dkj, *dvj;
        if (group > 1) {
          dkj = &dkParts[(task * S + j) * D];
          dvj = &dvParts[(task * S + j) * D];
        } else {
          dkj = dk + kl.at(b, j, g);
          dvj = dv + kl.at(b, j, g);
        }
        int64_t i0 = causal ? j : 0;
        weightedSum(&head.ds[j], Sp, qh, qs, i0, S, D, dkj);
        weightedSum(&head.p[j], Sp, doh, qs, i0, S, D, dvj);
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
                                const AttentionDims &, bool, double);          \
  template void attentionBwd<T>(const T *, const T *, const T *, const T *,    \
                                T *, T *, T *, const AttentionDims &, bool,    \
                                double);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

} // namespace strata::kernels
