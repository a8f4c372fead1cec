//===- KernelLibrary.cpp - The generated kernels of a set of programs
//------===//
#include "codegen/KernelLibrary.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

namespace strata::codegen {

llvm::Expected<KernelLibrary>
renderLibrary(llvm::ArrayRef<TaggedProgram> programs, Target target) {
  KernelLibrary lib;
  lib.target = target;
  std::vector<KernelPlan> plans;
  for (const TaggedProgram &p : programs)
    for (const Node &n : p.graph->nodes()) {
      if (n.op != OpKind::Fused || !n.body)
        continue;
      auto plan = planKernel(*n.body);
      if (!plan)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "program " + p.tag + ", kernel " + n.attrs.getString("kernel") +
                " (" + n.scope + "): " + toString(plan.takeError()));
      plan->name = p.tag + "_" + plan->name;
      KernelEntry &e = lib.entries.emplace_back();
      e.program = p.tag;
      e.kernel = n.attrs.getString("kernel");
      e.symbol = plan->name;
      e.scope = n.scope;
      if (target == Target::Cuda)
        e.launch = cudaLaunchOf(*plan);
      plans.push_back(std::move(*plan));
    }
  KernelSource source = renderKernels(plans, target);
  for (size_t k = 0; k < plans.size(); ++k)
    lib.entries[k].symbol = source.symbols[k];
  lib.source = std::move(source.text);
  lib.sha256 = sha256Hex(lib.source);
  return lib;
}

std::string sha256Hex(llvm::StringRef text) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)),
                     /*LowerCase=*/true);
}

llvm::StringRef targetName(Target t) {
  return t == Target::Cpp ? "cpp" : "cuda";
}

llvm::Expected<Target> parseTarget(llvm::StringRef name) {
  if (name == "cpp")
    return Target::Cpp;
  if (name == "cuda")
    return Target::Cuda;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown kernel target '" + name +
                                     "' (cpp or cuda)");
}

} // namespace strata::codegen
