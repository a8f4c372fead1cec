//===- NumpyRandom.h - numpy.random.RandomState's shuffle, bit for bit -*- C++
//-*-===//
//
// Megatron shuffles its document and sample indices with
// numpy.random.RandomState(seed).shuffle. To draw the same samples, strata
// reproduces that legacy generator exactly: MT19937 seeded by init_genrand
// (numpy's mt19937_seed, which std::mt19937 implements identically), and
// shuffle's Fisher-Yates loop `for i in n-1..1: j = random_interval(i)`,
// where random_interval draws masked 32-bit words (64-bit words above
// 2^32 - 1) until one is <= i (numpy/random/src/distributions and
// mtrand.pyx). numpy guarantees this stream never changes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <random>

namespace strata::megatron {

class NumpyRandomState {
public:
  /// numpy.random.RandomState(seed) for an integer seed in [0, 2^32).
  explicit NumpyRandomState(uint32_t seed) : mt_(seed) {}

  /// A uniform integer in [0, max], as numpy's random_interval.
  uint64_t interval(uint64_t max);

  /// RandomState.shuffle of a 1-D array.
  template <typename T> void shuffle(llvm::MutableArrayRef<T> x) {
    for (size_t i = x.size(); i-- > 1;) {
      size_t j = size_t(interval(i));
      std::swap(x[i], x[j]);
    }
  }

private:
  std::mt19937 mt_;
};

} // namespace strata::megatron
