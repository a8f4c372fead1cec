//===- Verb.h - How a `strata` verb plugs into the driver -----------------===//
//
// A verb is one file: it defines an llvm::cl::SubCommand, its options (in
// `strataCategory()`, `cl::sub(ThatCommand)`), a run function, and registers
// both with a static VerbRegistration. main.cpp runs the chosen verb; adding a
// verb means adding its file to CMakeLists.txt.
//
//   static cl::SubCommand Cmd("train", "Train a model");
//   static int run() { ... }
//   static VerbRegistration Reg(Cmd, run);
//
// run() returns the exit code: 0 ok, 1 user error (bad input, already
// reported), 2 internal error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace strata {

enum ExitCode { kExitOk = 0, kExitUserError = 1, kExitInternalError = 2 };

struct Verb {
  llvm::cl::SubCommand *command;
  int (*run)();
};

/// Every registered verb, in registration order.
std::vector<Verb> &registeredVerbs();

struct VerbRegistration {
  VerbRegistration(llvm::cl::SubCommand &cmd, int (*run)()) {
    registeredVerbs().push_back({&cmd, run});
  }
};

/// The category of every strata option (others are hidden from --help).
llvm::cl::OptionCategory &strataCategory();

/// Prints `err` (already `file:line:col: error: ...` formatted) to stderr and
/// returns kExitUserError.
int reportError(llvm::Error err);

} // namespace strata
