//===- Attention.cpp - Scaled dot-product attention with GQA/MQA ------------===//
//
// A straightforward CPU formulation: per (b, h) task, for each query row,
// scores over the visible keys, a stable softmax, then the weighted sum of
// values. Scores and accumulators are double. O(S^2 D) per head with O(S + D)
// scratch per thread.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Attention.h"

#include "runtime/kernels/Check.h"
#include "runtime/kernels/Parallel.h"

#include <cmath>
#include <limits>
#include <vector>

namespace strata::kernels {
namespace {

template <typename T> double dot(const T *a, const T *b, int64_t D) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t d = 0; d < D; ++d)
    s += double(a[d]) * double(b[d]);
  return s;
}

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

/// p[0..n) = softmax_j(scale * q . k_j) over the visible keys of query i;
/// returns n, the number of visible keys.
template <typename T>
int64_t probs(const T *qi, const T *k, Layout4 kl, int64_t b, int64_t g,
              int64_t i, bool causal, double scale, double *p) {
  int64_t n = causal ? i + 1 : kl.S;
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    p[j] = scale * dot(qi, k + kl.at(b, j, g), kl.D);
    m = std::max(m, p[j]);
  }
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    p[j] = std::exp(p[j] - m);
    sum += p[j];
  }
  for (int64_t j = 0; j < n; ++j)
    p[j] /= sum;
  return n;
}

/// (b, head) tasks per parallel chunk: ~S^2 D multiply-adds per task, and a
/// chunk should carry >= ~64K of them so tiny problems (tests, finite
/// differences) run inline instead of paying a fork/join per call.
int64_t taskGrain(const AttentionDims &d) {
  int64_t work = std::max<int64_t>(1, d.S * d.S * std::max<int64_t>(d.D, 1));
  return std::max<int64_t>(1, 65536 / work);
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
    std::vector<double> p(S), acc(D);
    for (int64_t task = lo; task < hi; ++task) {
      int64_t b = task / Hq, h = task % Hq, g = h / group;
      for (int64_t i = 0; i < S; ++i) {
        int64_t n = probs(q + ql.at(b, i, h), k, kl, b, g, i, causal, scale, p.data());
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < n; ++j) {
          const T *vj = v + kl.at(b, j, g);
          double pj = p[j];
#pragma omp simd
          for (int64_t d = 0; d < D; ++d)
            acc[d] += pj * vj[d];
        }
        T *o = out + ql.at(b, i, h);
        for (int64_t d = 0; d < D; ++d)
          o[d] = static_cast<T>(acc[d]);
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
    std::vector<double> p(S), dp(S), dqAcc(D), dkAcc(S * D), dvAcc(S * D);
    for (int64_t task = lo; task < hi; ++task) {
      int64_t b = task / Hq, h = task % Hq, g = h / group;
      std::fill(dkAcc.begin(), dkAcc.end(), 0.0);
      std::fill(dvAcc.begin(), dvAcc.end(), 0.0);
      for (int64_t i = 0; i < S; ++i) {
        const T *qi = q + ql.at(b, i, h), *doi = dout + ql.at(b, i, h);
        int64_t n = probs(qi, k, kl, b, g, i, causal, scale, p.data());
        // ds_j = p_j (dp_j - sum_l p_l dp_l), dp_j = dout_i . v_j.
        double pdp = 0;
        for (int64_t j = 0; j < n; ++j) {
          dp[j] = dot(doi, v + kl.at(b, j, g), D);
          pdp += p[j] * dp[j];
        }
        std::fill(dqAcc.begin(), dqAcc.end(), 0.0);
        for (int64_t j = 0; j < n; ++j) {
          double ds = scale * p[j] * (dp[j] - pdp);
          double pj = p[j];
          const T *kj = k + kl.at(b, j, g);
          double *dkj = &dkAcc[j * D], *dvj = &dvAcc[j * D];
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) {
            dqAcc[d] += ds * kj[d];
            dkj[d] += ds * qi[d];
            dvj[d] += pj * doi[d];
          }
        }
        T *dqi = dq + ql.at(b, i, h);
        for (int64_t d = 0; d < D; ++d)
          dqi[d] = static_cast<T>(dqAcc[d]);
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
        for (int64_t d = 0; d < D; ++d) {
          dkj[d] = static_cast<T>(dkAcc[j * D + d]);
          dvj[d] = static_cast<T>(dvAcc[j * D + d]);
        }
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
          double sk = 0, sv = 0;
          for (int64_t h = g * group; h < (g + 1) * group; ++h) {
            sk += dkParts[((b * Hq + h) * S + j) * D + d];
            sv += dvParts[((b * Hq + h) * S + j) * D + d];
          }
          dkj[d] = static_cast<T>(sk);
          dvj[d] = static_cast<T>(sv);
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
