//===- ProcessEnv.cpp - Environment the CPU runtime needs at library load --===//
#include "runtime/cpu/ProcessEnv.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace strata {

const char *blasCoreName() { return openblas_get_corename(); }

void reexecWithRuntimeEnv(char **argv) {
  // The marker stops a second re-exec if the new settings did not take.
  if (std::getenv("STRATA_REEXECED")) return;
  bool changed = false;
  if (!std::getenv("OPENBLAS_CORETYPE") &&
      std::strcmp(openblas_get_corename(), "Prescott") == 0) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      setenv("OPENBLAS_CORETYPE", "Haswell", 1);
      changed = true;
    }
  }
  if (!std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    changed = true;
  }
  if (!changed) return;
  setenv("STRATA_REEXECED", "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: keep going
}

} // namespace strata
