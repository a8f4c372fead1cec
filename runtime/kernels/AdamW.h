//===- AdamW.h - AdamW optimizer update (torch.optim.AdamW semantics)
//------===//
//
// The elementwise parameter update of one AdamW step; clipping, the LR
// schedule and the choice of which params decay live in the runtime.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace strata::kernels {

/// Hyperparameters of one AdamW step.
struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0; ///< Decoupled; 0 for params that are not decayed.
};

/// One AdamW step t (1-based) over n elements (docs/models.md), reading
/// (p, m, v) and writing (pOut, mOut, vOut), which may be the same buffers:
///   p *= 1 - lr*wd;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
///   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
/// Scalar factors are computed in double; m and v start at zero for t = 1.
template <typename T>
void adamwStep(const T *p, const T *g, const T *m, const T *v, T *pOut, T *mOut,
               T *vOut, int64_t n, int64_t t, const AdamWConfig &cfg);

/// The same step in place on p, m, v.
template <typename T>
void adamwStep(T *p, const T *g, T *m, T *v, int64_t n, int64_t t,
               const AdamWConfig &cfg) {
  adamwStep<T>(p, g, m, v, p, m, v, n, t, cfg);
}

} // namespace strata::kernels
