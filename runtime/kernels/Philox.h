//===- Philox.h - Philox4x32-10 counter-based RNG and dropout
//--------------===//
//
// Philox4x32-10 is the Random123 generator (Salmon et al., SC'11) also used by
// cuRAND and PyTorch's CUDA RNG. Being counter-based, the random bits of any
// element can be computed from its coordinates alone, so every shard of a
// tensor draws exactly the mask the unsharded tensor would.
//
// Dropout contract (docs/models.md), bit-exact:
//   key     = {seed, stream}
//   counter = {lo32(i), hi32(i), lo32(step), hi32(step)}, i = the element's
//             row-major index in the GLOBAL (unsharded) tensor
//   u       = philox4x32_10(counter, key)[0] * 2^-32, exact in double, [0,1)
//   keep iff u >= p; kept values are scaled by 1 / (1 - p), dropped are 0.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace strata::kernels {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

/// One Philox4x32 block with 10 rounds (Random123's philox4x32_10).
PhiloxCounter philox4x32_10(PhiloxCounter ctr, PhiloxKey key);

/// The dropout uniform u in [0, 1) of global element `index`.
double dropoutUniform(uint64_t index, uint32_t seed, uint32_t stream,
                      uint64_t step);

/// y = dropout(x) for a block of a larger tensor. x, y are localShape
/// (contiguous); the block sits at `offsets` (one per dim) inside a tensor of
/// globalShape, whose row-major indices select the random numbers. For an
/// unsharded tensor pass localShape == globalShape and zero offsets.
/// 0 <= p <= 1; p == 1 zeroes y. y may alias x. (seed, stream, step) pick
/// the mask: e.g. stream per dropout site, step per training step.
template <typename T>
void dropoutFwd(const T *x, T *y, std::span<const int64_t> localShape,
                std::span<const int64_t> globalShape,
                std::span<const int64_t> offsets, double p, uint32_t seed,
                uint32_t stream, uint64_t step);

/// dx = dy * mask / (1 - p), with the same mask as dropoutFwd given the same
/// arguments (dropout is linear in x, so this is also dropoutFwd(dy)).
template <typename T>
void dropoutBwd(const T *dy, T *dx, std::span<const int64_t> localShape,
                std::span<const int64_t> globalShape,
                std::span<const int64_t> offsets, double p, uint32_t seed,
                uint32_t stream, uint64_t step);

} // namespace strata::kernels
