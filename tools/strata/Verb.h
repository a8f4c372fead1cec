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
// Every message a verb prints goes through reportError / reportWarning /
// reportNote, which give it the one form
//
//   strata <verb>: error: <file>[:line:col]: <what> (<why>; <how to fix>)
//
// Libraries report errors in the compiler form `<file>[:line:col]: error:
// <what>` (or without a location); formatDiagnostic turns either into the
// form above, so no verb writes a prefix itself.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <string>
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

/// The verb being run ("train"); empty before the command line names one.
llvm::StringRef currentVerb();
void setCurrentVerb(llvm::StringRef verb);

/// `message` (one diagnostic per line) as `strata <verb>: <kind>: <loc>:
/// <what>` lines, `kind` being error, warning or note. A line already in that
/// form, in the compiler form `<loc>: <kind>: <what>` or bare is rewritten;
/// indented lines (source excerpts) are kept as they are.
std::string formatDiagnostic(llvm::StringRef kind, llvm::StringRef message);

/// Prints `err` to stderr as formatDiagnostic("error", ...) and returns
/// kExitUserError.
int reportError(llvm::Error err);
int reportError(const llvm::Twine &message);

/// Prints `strata <verb>: warning: ...` (a flag or value that is ignored or
/// likely a mistake) or `strata <verb>: note: ...` (a value whose meaning
/// changes, said once) to stderr.
void reportWarning(const llvm::Twine &message);
void reportNote(const llvm::Twine &message);

/// An error with `message` and no location, for reportError.
llvm::Error usageError(const llvm::Twine &message);

} // namespace strata
