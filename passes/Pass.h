//===- Pass.h - The pass interface and registry
//----------------------------===//
//
// A pass has a name, a one-line summary and a run() that transforms a graph in
// place and says whether it changed it. Options come from the pipeline text
// (`autodiff,spmd{tp=2,dp=2}`) as string key/values; a pass validates its own.
// A pass may also run on a whole training program (the microbatch graph,
// then its pipeline stages: runOnProgram). Each pass file defines a
// `registerXPass()` that calls registerPass();
// registerAllPasses() (passes/Pass.cpp) calls them all, so strata-opt and the
// compiler driver build pipelines from text. See passes/PassManager.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace strata {

struct CompiledPipeline; // passes/pipeline/ParallelCompile.h

using PassOptions = llvm::StringMap<std::string>;

class Pass {
public:
  virtual ~Pass() = default;
  virtual llvm::StringRef name() const = 0;
  /// Transforms `g` in place; returns true if it changed.
  virtual llvm::Expected<bool> run(Graph &g) = 0;
  /// Transforms a training program: by default `run` on its microbatch
  /// graph until the pipeline pass has cut it into stages, then on every
  /// stage and optimizer program. The pipeline and memory passes work on
  /// the program as a whole (passes/pipeline/ProgramPasses.cpp).
  virtual llvm::Expected<bool> runOnProgram(CompiledPipeline &program);
};

using PassFactory =
    std::function<llvm::Expected<std::unique_ptr<Pass>>(const PassOptions &)>;

struct PassInfo {
  std::string name;
  std::string summary;
  PassFactory create;
};

/// Registers a pass (called from a pass's registerXPass()).
void registerPass(PassInfo info);
/// Registers every pass of the project; safe to call more than once.
void registerAllPasses();
/// All registered passes, sorted by name.
std::vector<const PassInfo *> registeredPasses();
const PassInfo *lookupPass(llvm::StringRef name);

} // namespace strata
