//===- KernelInspect.h - `strata inspect PLAN --kernels / --kernel-source`
//-===//
//
//   --kernels              per target library: its SHA-256, size, and the
//                          symbol each fused node of each program runs
//   --kernel-source=T      the generated source for target T (cpp | cuda)
//
//===----------------------------------------------------------------------===//
#pragma once

#include "proto/strata.pb.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace strata {

void printKernels(llvm::raw_ostream &os, const pb::Plan &plan);

/// Prints the source of `target`'s library; an error when the plan has none.
llvm::Error printKernelSource(llvm::raw_ostream &os, const pb::Plan &plan,
                              llvm::StringRef target);

} // namespace strata
