//===- PassManager.h - Runs a pipeline of passes
//---------------------------===//
//
// A pipeline is data: `autodiff,recompute{mode=selective},spmd{tp=2,dp=2}`.
// The pass manager builds each pass through the registry (passes/Pass.h),
// runs them in order, runs the verifier on the input and after every pass,
// and can print or dump the IR between passes.
//
// Registering a pass. The registry is filled explicitly, not by static
// constructors (the linker drops unreferenced objects of a static library):
//   1. In the pass's .cpp, define `void registerMyPass()` in namespace strata
//      that calls registerPass({"my-pass", "one-line summary", factory}); the
//      factory validates the options (checkPassOptions below) and returns the
//      pass.
//   2. In passes/Pass.cpp, declare `void registerMyPass();` and call it from
//      registerAllPasses().
//   3. Add the .cpp to strata_passes in passes/CMakeLists.txt.
// Tools call registerAllPasses() once before building pipelines.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

namespace strata {

/// One pass of a pipeline text: its name and `{key=value}` options.
struct PipelineEntry {
  std::string name;
  PassOptions options;
};

/// Parses `a,b{k=v,k2=v2},c` (whitespace around names, keys and values is
/// ignored; values may not contain `,{}=`). Pass names are not looked up.
llvm::Expected<std::vector<PipelineEntry>> parsePipeline(llvm::StringRef text);

/// For pass factories: an error naming the first option of `options` that is
/// not in `known`, listing the known ones.
llvm::Error checkPassOptions(llvm::StringRef pass, const PassOptions &options,
                             llvm::ArrayRef<llvm::StringRef> known);

/// For pass factories: option `key` as an integer or a number (`def` when
/// absent), or integers joined by '+' (`what` they are, for the error).
llvm::Expected<int64_t> intPassOption(const PassOptions &options,
                                      llvm::StringRef key, int64_t def);
llvm::Expected<double> floatPassOption(const PassOptions &options,
                                       llvm::StringRef key, double def);
llvm::Expected<std::vector<int64_t>>
intListPassOption(const PassOptions &options, llvm::StringRef key,
                  llvm::StringRef what);

struct PassManagerOptions {
  /// Verify the input graph and the graph after every pass.
  bool verifyEach = true;
  /// Print the IR after this pass ("all": after every pass) to the log stream.
  std::string printIrAfter;
  /// If set, write `00-input.ir`, `01-<pass>.ir`, ... into this directory.
  std::string dumpDir;
  /// Prefix a pass's error with `pass '<name>': ` (off in the compiler
  /// driver, whose passes' errors speak of the user's configuration).
  bool namePassInErrors = true;
};

class PassManager {
public:
  explicit PassManager(PassManagerOptions options = {},
                       llvm::raw_ostream &log = llvm::errs())
      : options_(std::move(options)), log_(log) {}

  /// Appends the passes of a pipeline text, built through the registry.
  llvm::Error addPipeline(llvm::StringRef text);
  void addPass(std::unique_ptr<Pass> pass) {
    passes_.push_back(std::move(pass));
  }
  size_t size() const { return passes_.size(); }

  /// Runs every pass on `g` in order; returns whether any pass changed it.
  /// Errors name the pass (`pass 'dce': ...`, `verifier failed after pass
  /// 'dce': ...`).
  llvm::Expected<bool> run(Graph &g);
  /// Runs every pass on a training program (Pass::runOnProgram): the
  /// verifier checks the microbatch graph, or once it is cut every stage
  /// and optimizer program and their messages (verifyPipelinePlan); the IR
  /// printed or dumped is the program's.
  llvm::Expected<bool> run(CompiledPipeline &program);

private:
  template <class Unit>
  llvm::Expected<bool>
  runOn(Unit &unit, llvm::function_ref<llvm::Expected<bool>(Pass &)> step);
  /// Prints, dumps and verifies `unit` after pass `index` (0: the input).
  llvm::Error afterPass(const Graph &g, size_t index, bool changed);
  llvm::Error afterPass(const CompiledPipeline &p, size_t index, bool changed);
  llvm::Error emit(size_t index, bool changed,
                   llvm::function_ref<void(llvm::raw_ostream &)> print,
                   llvm::function_ref<llvm::Error()> verify);

  PassManagerOptions options_;
  llvm::raw_ostream &log_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

} // namespace strata
