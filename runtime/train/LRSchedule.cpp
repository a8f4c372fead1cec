//===- LRSchedule.cpp - Linear warmup then cosine decay
//--------------------===//
#include "runtime/train/LRSchedule.h"

#include <cmath>
#include <numbers>

namespace strata {

double LRSchedule::at(int64_t it) const {
  if (it < warmup)
    return lr * double(it + 1) / double(warmup + 1);
  if (decayIters <= warmup)
    return lr;
  if (it > decayIters)
    return minLr;
  double r = double(it - warmup) / double(decayIters - warmup);
  return minLr + 0.5 * (1.0 + std::cos(std::numbers::pi * r)) * (lr - minLr);
}

} // namespace strata
