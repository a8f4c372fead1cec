//===- NumpyRandom.cpp - numpy.random.RandomState's shuffle ---------------===//
#include "runtime/data/megatron/NumpyRandom.h"

namespace strata::megatron {

uint64_t NumpyRandomState::interval(uint64_t max) {
  if (max == 0)
    return 0;
  uint64_t mask = max; // the smallest all-ones mask >= max
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  uint64_t value;
  if (max <= 0xffffffffull) {
    while ((value = (uint64_t(mt_()) & mask)) > max) {
    }
  } else {
    auto next64 = [&] {
      uint64_t hi = mt_();
      return hi << 32 | uint64_t(mt_());
    };
    while ((value = (next64() & mask)) > max) {
    }
  }
  return value;
}

} // namespace strata::megatron
