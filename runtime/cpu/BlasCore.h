//===- BlasCore.h - Make OpenBLAS use the kernels the CPU can run ----------===//
//
// Debian's OpenBLAS 0.3.21 predates Sapphire/Emerald Rapids and falls back to
// its SSE3 "Prescott" kernels there, a third slower for our GEMMs (measured:
// 2000 vs 3100 tok/s training gpt_tiny). OpenBLAS reads OPENBLAS_CORETYPE
// only when it loads, so a process that finds itself on Prescott kernels while
// the CPU has AVX2 + FMA re-executes itself once with OPENBLAS_CORETYPE=Haswell
// (AVX2 kernels: correct on every AVX2 CPU). A user-set OPENBLAS_CORETYPE is
// always respected.
//
//===----------------------------------------------------------------------===//
#pragma once

namespace strata {

/// Call first in main(); returns only if no re-exec was needed or possible.
void ensureFastBlasCore(char **argv);

/// The OpenBLAS core in use ("Haswell", "Prescott", ...).
const char *blasCoreName();

} // namespace strata
