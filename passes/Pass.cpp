//===- Pass.cpp - The pass registry
//----------------------------------------===//
//
// Passes live in a static library, so self-registering static objects would be
// dropped by the linker. Instead every pass file defines `registerXPass()` and
// registerAllPasses() below calls each one: to add a pass, declare its
// function and call it here (keep both lists sorted).
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <mutex>

namespace strata {

void registerAutodiffPass();
void registerCombineAllReducePass();
void registerDeadCodeEliminationPass();
void registerFusionPass();
void registerGradAccumulationFusionPass();
void registerLossScalePass();
void registerMegatronSeedsPass();
void registerMemoryPass();
void registerMixedPrecisionPass();
void registerPipelinePass();
void registerRecomputePass();
void registerSpmdPass();

void registerAllPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerAutodiffPass();
    registerCombineAllReducePass();
    registerDeadCodeEliminationPass();
    registerFusionPass();
    registerGradAccumulationFusionPass();
    registerLossScalePass();
    registerMegatronSeedsPass();
    registerMemoryPass();
    registerMixedPrecisionPass();
    registerPipelinePass();
    registerRecomputePass();
    registerSpmdPass();
  });
}

namespace {
llvm::StringMap<PassInfo> &registry() {
  static llvm::StringMap<PassInfo> passes;
  return passes;
}
} // namespace

void registerPass(PassInfo info) {
  std::string name = info.name;
  if (!registry().try_emplace(name, std::move(info)).second)
    llvm::report_fatal_error("pass '" + llvm::Twine(name) +
                             "' is registered twice");
}

std::vector<const PassInfo *> registeredPasses() {
  std::vector<const PassInfo *> out;
  for (const auto &entry : registry())
    out.push_back(&entry.second);
  std::sort(out.begin(), out.end(), [](const PassInfo *a, const PassInfo *b) {
    return a->name < b->name;
  });
  return out;
}

const PassInfo *lookupPass(llvm::StringRef name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

} // namespace strata
