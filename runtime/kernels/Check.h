//===- Check.h - Always-on argument checks for the CPU kernels
//-------------===//
//
// Kernels validate their arguments once at entry (shapes, ranks, dtype-free
// invariants) and abort with a message naming the kernel when a caller breaks
// the contract. These checks are O(rank), never per element, so they stay on
// in release builds.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdio>
#include <cstdlib>

namespace strata::kernels::detail {

[[noreturn]] inline void checkFailed(const char *kernel, const char *cond,
                                     const char *msg) {
  std::fprintf(stderr, "strata::kernels::%s: error: %s (check `%s` failed)\n",
               kernel, msg, cond);
  std::abort();
}

} // namespace strata::kernels::detail

/// Aborts with "strata::kernels::<kernel>: error: <msg>" unless cond holds.
#define STRATA_KCHECK(cond, kernel, msg)                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      ::strata::kernels::detail::checkFailed(kernel, #cond, msg);              \
  } while (0)
