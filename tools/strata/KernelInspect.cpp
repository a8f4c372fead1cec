//===- KernelInspect.cpp - `strata inspect PLAN --kernels / --kernel-source` //
#include "tools/strata/KernelInspect.h"

#include "tools/strata/PipelineInspect.h"

#include "llvm/ADT/StringSet.h"

namespace strata {

void printKernels(llvm::raw_ostream &os, const pb::Plan &plan) {
  if (plan.kernels().empty()) {
    os << "no generated kernels (compiled with --no-fusion, or nothing to "
          "fuse)\n";
    return;
  }
  for (const pb::KernelLibrary &k : plan.kernels()) {
    llvm::StringSet<> symbols;
    for (const pb::KernelEntry &e : k.entries())
      symbols.insert(e.symbol());
    os << k.target() << " library: " << k.entries_size() << " fused nodes, "
       << symbols.size() << " distinct kernels, "
       << formatBytes(int64_t(k.source().size())) << " of source, sha256 "
       << k.sha256() << '\n';
  }
  // Every library has one entry per fused node, in the same order; the
  // symbols differ where a target shares more code.
  os << "  " << llvm::left_justify("program", 8) << " "
     << llvm::left_justify("node", 10);
  for (const pb::KernelLibrary &k : plan.kernels())
    os << " " << llvm::left_justify(k.target() + " symbol", 18);
  os << " scope\n";
  for (int i = 0; i < plan.kernels(0).entries_size(); ++i) {
    const pb::KernelEntry &e = plan.kernels(0).entries(i);
    os << "  " << llvm::left_justify(e.program(), 8) << " "
       << llvm::left_justify(e.kernel(), 10);
    for (const pb::KernelLibrary &k : plan.kernels())
      os << " "
         << llvm::left_justify(
                i < k.entries_size() ? k.entries(i).symbol() : "?", 18);
    os << " " << e.scope() << '\n';
  }
}

llvm::Error printKernelSource(llvm::raw_ostream &os, const pb::Plan &plan,
                              llvm::StringRef target) {
  for (const pb::KernelLibrary &k : plan.kernels())
    if (k.target() == target) {
      os << k.source();
      return llvm::Error::success();
    }
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "the plan has no " + target +
          " kernels (targets: cpp, cuda; a plan compiled with --no-fusion "
          "has none)");
}

} // namespace strata
