//===- ProcessEnv.h - Environment the CPU runtime needs at library load ----===//
//
// Two settings are read by their libraries only when the process starts, so a
// strata process that lacks them sets them and re-executes itself once:
//  - OPENBLAS_CORETYPE=Haswell when Debian's OpenBLAS 0.3.21, which predates
//    Sapphire/Emerald Rapids, fell back to its SSE3 "Prescott" kernels on a
//    CPU with AVX2 + FMA (measured on gpt_tiny: 2000 -> 3100 tok/s, 1 thread).
//  - OMP_WAIT_POLICY=passive: idle OpenMP workers sleep instead of spinning.
//    Kernels here are short and the device worker thread, OpenBLAS and other
//    devices share the cores; spinning workers starve them (measured on
//    gpt_tiny, 2 threads on a loaded 2-core machine: 525 -> 4400 tok/s).
// Values the user already set are always respected.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace strata {

/// Call first in main(); returns only if no re-exec was needed or possible.
void reexecWithRuntimeEnv(char **argv);

/// The OpenBLAS core in use ("Haswell", "Prescott", ...).
const char *blasCoreName();

} // namespace strata
