//===- FuzzEntries.cpp - One input through a reader, as the CLI reads it --===//
#include "test/fuzz/FuzzEntries.h"

#include "frontends/ModelSpec.h"
#include "ir/IRText.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"
#include "proto/GraphProto.h"
#include "proto/PlanFile.h"
#include "tools/strata/Driver.h"
#include "tools/strata/PipelineProto.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace strata::fuzz {

namespace {

/// Specs with more layers are checked but not compiled: the graph grows
/// with the layers (not with the sizes), and a fuzzer must not spend its
/// time building 2^20 blocks.
constexpr int64_t kMaxCompiledLayers = 4;
/// Longest pass pipeline passPipeline runs.
constexpr size_t kMaxPasses = 8;

/// A broken invariant: no input may cause it. Aborts, so that libFuzzer
/// keeps the input and the regression test fails loudly.
[[noreturn]] void invariant(const llvm::Twine &what, llvm::StringRef detail) {
  llvm::errs() << "fuzz invariant broken: " << what << "\n" << detail << "\n";
  llvm::errs().flush();
  std::abort();
}

} // namespace

llvm::Error irText(llvm::StringRef bytes) {
  auto g = parseGraph(bytes, "<fuzz>");
  if (!g)
    return g.takeError();
  std::string text = graphToString(*g);
  auto again = parseGraph(text, "<printed>");
  if (!again)
    invariant("a parsed graph prints text that does not parse back",
              text + toString(again.takeError()));
  if (std::string back = graphToString(*again); back != text)
    invariant("print(parse(print(g))) differs from print(g)",
              text + "-----\n" + back);
  return verifyGraph(*g);
}

llvm::Error modelSpec(llvm::StringRef bytes) {
  auto spec = parseModelSpec(bytes, "<fuzz>.textproto");
  if (!spec)
    return spec.takeError();
  if (spec->layers() > kMaxCompiledLayers)
    return llvm::Error::success();
  auto plan = compilePlan(*spec);
  if (!plan)
    invariant("a checked spec does not compile", toString(plan.takeError()));
  auto back = parsePlan(serializePlan(*plan), "<fuzz>.plan");
  if (!back)
    invariant("a compiled plan does not read back", toString(back.takeError()));
  if (llvm::Error e = checkModelSpec(back->model(), "<fuzz>.plan"))
    invariant("a plan's spec fails the checks its text passed",
              toString(std::move(e)));
  auto g = graphFromProto(back->logical_graph());
  if (!g)
    invariant("a plan's graph does not read back", toString(g.takeError()));
  if (llvm::Error e = verifyGraph(*g))
    invariant("a plan's graph reads back invalid", toString(std::move(e)));
  return llvm::Error::success();
}

llvm::Error planFile(llvm::StringRef bytes) {
  auto loaded = loadPlanOrSpec(writeScratchFile("input.plan", bytes));
  if (!loaded)
    return loaded.takeError();
  if (!loaded->plan.pipeline().has_micro())
    return llvm::Error::success();
  auto programs = loadPipeline(loaded->plan);
  if (!programs)
    return programs.takeError();
  return checkKernels(loaded->plan, *programs);
}

llvm::Error passPipeline(llvm::StringRef bytes) {
  auto [pipeline, ir] = bytes.split('\n');
  auto entries = parsePipeline(pipeline);
  if (!entries)
    return entries.takeError();
  if (entries->size() > kMaxPasses)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "more than 8 passes");
  registerAllPasses();
  // Lines keep their numbers: the pipeline line becomes an empty one.
  auto g = parseGraph(("\n" + ir).str(), "<fuzz>");
  if (!g)
    return g.takeError();
  PassManager pm(PassManagerOptions(), llvm::nulls()); // verifies each pass
  if (llvm::Error e = pm.addPipeline(pipeline))
    return e;
  auto changed = pm.run(*g);
  if (!changed)
    return changed.takeError();
  std::string text = graphToString(*g);
  auto again = parseGraph(text, "<printed>");
  if (!again)
    invariant("a pass's result prints text that does not parse back",
              text + toString(again.takeError()));
  return llvm::Error::success();
}

namespace {
constexpr llvm::StringRef kNames[] = {
    "ir",         "model_spec",     "plan",
    "checkpoint", "tensor_archive", "pass_pipeline"};
constexpr Entry kEntries[] = {irText,         modelSpec,     planFile,
                              checkpointFile, tensorArchive, passPipeline};
static_assert(std::size(kNames) == std::size(kEntries));
} // namespace

Entry entryFor(llvm::StringRef target) {
  for (size_t i = 0; i < std::size(kNames); ++i)
    if (kNames[i] == target)
      return kEntries[i];
  return nullptr;
}

llvm::ArrayRef<llvm::StringRef> targetNames() { return kNames; }

} // namespace strata::fuzz
