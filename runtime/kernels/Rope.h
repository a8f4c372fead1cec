//===- Rope.h - Rotary position embedding (rotate-half form)
//---------------===//
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
// Llama-3.1's frequency scaling (transformers' rope_type "llama3") changes
// only the table f_i (ropeInvFreq): with wavelength w_i = 2 pi / f_i and
// L = originalMaxPositions, f_i stays when w_i < L / highFreqFactor, becomes
// f_i / factor when w_i > L / lowFreqFactor, and in between is
// (1 - a) f_i / factor + a f_i with a = (L / w_i - lowFreqFactor) /
// (highFreqFactor - lowFreqFactor).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace strata::kernels {

/// Llama-3.1 RoPE frequency scaling; originalMaxPositions 0 means none.
struct RopeScaling {
  double factor = 1, lowFreqFactor = 1, highFreqFactor = 4;
  int64_t originalMaxPositions = 0;
  bool enabled() const { return originalMaxPositions > 0; }
};

/// f_i for i in [0, D/2): theta^(-2i/D), scaled when `scaling` is enabled.
std::vector<double> ropeInvFreq(int64_t D, double theta,
                                const RopeScaling &scaling = {});

/// y = rope(x). x, y are (B, S, H, D) with D even; y may alias x.
template <typename T>
void ropeFwd(const T *x, T *y, int64_t B, int64_t S, int64_t H, int64_t D,
             double theta, int64_t posOffset = 0,
             const RopeScaling &scaling = {});

/// dx = rope^-1(dy) = rope^T(dy) (rotation by -angle). Same layout as ropeFwd.
template <typename T>
void ropeBwd(const T *dy, T *dx, int64_t B, int64_t S, int64_t H, int64_t D,
             double theta, int64_t posOffset = 0,
             const RopeScaling &scaling = {});

} // namespace strata::kernels
