//===- ProcessEnv.cpp - Environment the CPU runtime needs at library load
//--===//
#include "runtime/cpu/ProcessEnv.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace strata {

namespace {

// The OpenBLAS core to force, or nullptr to keep OpenBLAS's choice.
const char *preferredBlasCore() {
  const char *core = openblas_get_corename();
  // Only override a generic fallback: a core OpenBLAS recognised is its call.
  if (std::strcmp(core, "Prescott") != 0 && std::strcmp(core, "Haswell") != 0)
    return nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (std::strcmp(core, "Prescott") == 0 && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma"))
    return "Haswell";
  return nullptr;
}

} // namespace

const char *blasCoreName() { return openblas_get_corename(); }

void reexecWithRuntimeEnv(char **argv) {
  // The marker stops a second re-exec if the new settings did not take.
  if (std::getenv("STRATA_REEXECED"))
    return;
  bool changed = false;
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    if (const char *core = preferredBlasCore()) {
      setenv("OPENBLAS_CORETYPE", core, 1);
      changed = true;
    }
  }
  // matmul() tiles GEMMs over strata's own threads; OpenBLAS's pool would
  // only start idle threads that spin in sched_yield for a while.
  if (!std::getenv("OPENBLAS_NUM_THREADS")) {
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    changed = true;
  }
  if (!changed)
    return;
  setenv("STRATA_REEXECED", "1", 1);
  execv("/proc/self/exe", argv); // returns only on failure: keep going
}

} // namespace strata
