//===- LRSchedule.h - Linear warmup then cosine decay
//----------------------===//
//
// nanoGPT's schedule (docs/models.md): `it` counts from 0.
//   it <  warmup:        lr * (it + 1) / (warmup + 1)
//   it >  decay_iters:   min_lr
//   otherwise:           min_lr + 0.5 (1 + cos(pi r)) (lr - min_lr),
//                        r = (it - warmup) / (decay_iters - warmup)
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace strata {

struct LRSchedule {
  double lr = 1e-3;
  double minLr = 1e-4;
  int64_t warmup = 0;
  int64_t decayIters = 0; // 0: constant lr after warmup

  double at(int64_t it) const;
};

} // namespace strata
