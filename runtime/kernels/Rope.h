//===- Rope.h - Rotary position embedding (rotate-half form) ---------------===//
//
// For position p = s + posOffset and i in [0, D/2), f_i = theta^(-2i/D):
//   out[:D/2] = x1 cos(p f_i) - x2 sin(p f_i)
//   out[D/2:] = x2 cos(p f_i) + x1 sin(p f_i)
// with x1 = x[..., :D/2], x2 = x[..., D/2:] (GPT-NeoX / Hugging Face form,
// docs/models.md). The rotation is orthogonal, so its gradient is the
// rotation by -angle: ropeBwd. posOffset lets a sequence shard starting at
// global position posOffset rotate exactly as the full sequence would.
// Angles are computed in double for both T.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace strata::kernels {

/// y = rope(x). x, y are (B, S, H, D) with D even; y may alias x.
template <typename T>
void ropeFwd(const T *x, T *y, int64_t B, int64_t S, int64_t H, int64_t D,
             double theta, int64_t posOffset = 0);

/// dx = rope^-1(dy) = rope^T(dy) (rotation by -angle). Same layout as ropeFwd.
template <typename T>
void ropeBwd(const T *dy, T *dx, int64_t B, int64_t S, int64_t H, int64_t D,
             double theta, int64_t posOffset = 0);

} // namespace strata::kernels
