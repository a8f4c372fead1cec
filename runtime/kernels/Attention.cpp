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

/// Scratch of one task: the head's K (and V) transposed to (D, S), and the
/// S x S probabilities (and dS).
template <typename T> struct Head {
  int64_t S, D;
  std::vector<T> kt, vt, p, ds;
  Head(int64_t S, int64_t D) : S(S), D(D), kt(D * S), vt(D * S), p(S * S), ds(S * S) {}

  /// xt[d, j] = x[b, j, g, d].
  void transpose(const T *x, Layout4 l, int64_t b, int64_t g, std::vector<T> &xt) {
    for (int64_t j = 0; j < S; ++j) {
      const T *xj = x + l.at(b, j, g);
      for (int64_t d = 0; d < D; ++d)
        xt[d * S + j] = xj[d];
    }
  }

  /// row[0..n) = a . xt[:, j] * scale for the n visible keys.
  void rowTimes(const T *a, const std::vector<T> &xt, int64_t n, T scale, T *row) {
    std::fill(row, row + n, T(0));
    for (int64_t d = 0; d < D; ++d) {
      T ad = a[d] * scale;
      const T *xd = &xt[d * S];
#pragma omp simd
      for (int64_t j = 0; j < n; ++j)
        row[j] += ad * xd[j];
    }
  }

  /// p[i, 0..n) = softmax of query i's scores; returns n.
  int64_t probs(const T *qi, int64_t i, bool causal, T scale) {
    int64_t n = causal ? i + 1 : S;
    T *row = &p[i * S];
    rowTimes(qi, kt, n, scale, row);
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < n; ++j)
      m = std::max(m, row[j]);
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) {
      row[j] = kexp(row[j] - m);
      sum += row[j];
    }
    T inv = T(1) / sum;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      row[j] *= inv;
    return n;
  }
};

/// acc[0..D) = sum_j w[j] x[b, j, g, :] over j < n.
template <typename T>
void weightedRows(const T *w, int64_t n, const T *x, Layout4 l, int64_t b,
                  int64_t g, T *acc) {
  std::fill(acc, acc + l.D, T(0));
  for (int64_t j = 0; j < n; ++j) {
    const T *xj = x + l.at(b, j, g);
    T wj = w[j];
#pragma omp simd
    for (int64_t d = 0; d < l.D; ++d)
      acc[d] += wj * xj[d];
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
      for (int64_t i = 0; i < S; ++i) {
        int64_t n = head.probs(q + ql.at(b, i, h), i, causal, T(scale));
        weightedRows(&head.p[i * S], n, v, kl, b, g, out + ql.at(b, i, h));
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
    std::vector<T> dkAcc(S * D), dvAcc(S * D);
    for (int64_t task = lo; task < hi; ++task) {
      int64_t b = task / Hq, h = task % Hq, g = h / group;
      head.transpose(k, kl, b, g, head.kt);
      head.transpose(v, kl, b, g, head.vt);
      std::fill(dkAcc.begin(), dkAcc.end(), T(0));
      std::fill(dvAcc.begin(), dvAcc.end(), T(0));
      for (int64_t i = 0; i < S; ++i) {
        const T *qi = q + ql.at(b, i, h), *doi = dout + ql.at(b, i, h);
        int64_t n = head.probs(qi, i, causal, T(scale));
        const T *p = &head.p[i * S];
        // ds_j = scale p_j (dp_j - sum_l p_l dp_l), dp_j = dout_i . v_j.
        T *ds = &head.ds[i * S];
        head.rowTimes(doi, head.vt, n, T(1), ds);
        T pdp = 0;
#pragma omp simd reduction(+ : pdp)
        for (int64_t j = 0; j < n; ++j)
          pdp += p[j] * ds[j];
#pragma omp simd
        for (int64_t j = 0; j < n; ++j)
          ds[j] = T(scale) * p[j] * (ds[j] - pdp);
        weightedRows(ds, n, k, kl, b, g, dq + ql.at(b, i, h));
        for (int64_t j = 0; j < n; ++j) {
          T dsj = ds[j], pj = p[j];
          T *dkj = &dkAcc[j * D], *dvj = &dvAcc[j * D];
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) {
            dkj[d] += dsj * qi[d];
            dvj[d] += pj * doi[d];
          }
        }
      }
      for (int64_t j = 0; j < S; ++j) {
        T *dkj, *dvj;
        if (group > 1) {
          dkj = &dkParts[(task * S + j) * D];
          dvj = &dvParts[(task * S + j) * D];
        } else {
          dkj = dk + kl.at(b, j, g);
          dvj = dv + kl.at(b, j, g);
        }
        std::copy_n(&dkAcc[j * D], D, dkj);
        std::copy_n(&dvAcc[j * D], D, dvj);
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
