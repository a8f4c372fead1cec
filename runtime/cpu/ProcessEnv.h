//===- ProcessEnv.h - Environment the CPU runtime needs at library load
//----===//
//
// Two settings are read by OpenBLAS only when the process starts, so a strata
// process that lacks them sets them and re-executes itself once:
//  - OPENBLAS_CORETYPE when Debian's OpenBLAS 0.3.21, which predates
//    Sapphire/Emerald Rapids, fell back to its SSE3 "Prescott" kernels:
//    SkylakeX (AVX-512) on a CPU with AVX-512 F/VL/BW/DQ, else Haswell on
//    one with AVX2 + FMA. Measured sgemm 768x512x128, 1 thread: Prescott 19,
//    Haswell 76, SkylakeX 114-145 GFLOP/s.
//  - OPENBLAS_NUM_THREADS=1: GEMMs are tiled over strata's threads
//    (runtime/kernels/MatMul.h), so OpenBLAS's pool would only idle-spin.
// (strata's own workers spin ~100 us between kernels, then sleep:
// runtime/kernels/Parallel.cpp.)
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
