//===- BlasCore.cpp - Make OpenBLAS use the kernels the CPU can run --------===//
#include "runtime/cpu/BlasCore.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace strata {

const char *blasCoreName() { return openblas_get_corename(); }

void ensureFastBlasCore(char **argv) {
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  if (std::strcmp(openblas_get_corename(), "Prescott") != 0) return;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: keep going
}

} // namespace strata
