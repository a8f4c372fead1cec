//===- main.cpp - The `strata` command-line driver ------------------------===//
//
// `strata <verb> [options]`: dispatches to the verb chosen on the command line
// (see Verb.h). Option errors exit with code 1.
//
//===----------------------------------------------------------------------===//
#include "proto/PlanFile.h"
#include "runtime/cpu/ProcessEnv.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace strata {

std::vector<Verb> &registeredVerbs() {
  static std::vector<Verb> verbs;
  return verbs;
}

cl::OptionCategory &strataCategory() {
  static cl::OptionCategory category("strata options");
  return category;
}

int reportError(Error err) {
  handleAllErrors(std::move(err), [](const ErrorInfoBase &e) {
    errs() << e.message() << '\n';
  });
  return kExitUserError;
}

} // namespace strata

int main(int argc, char **argv) {
  strata::reexecWithRuntimeEnv(argv);
  InitLLVM init(argc, argv);
  using namespace strata;
  for (const Verb &v : registeredVerbs())
    cl::HideUnrelatedOptions(strataCategory(), *v.command);
  cl::HideUnrelatedOptions(strataCategory());
  cl::SetVersionPrinter([](raw_ostream &os) {
    os << "strata " << kStrataVersion << " (plan format " << kPlanFormatVersion
       << ")\n";
  });
  cl::ParseCommandLineOptions(
      argc, argv, "strata: compile and run transformer training in parallel\n");
  for (const Verb &v : registeredVerbs())
    if (*v.command)
      return v.run();
  WithColor::error(errs(), "strata") << "no verb given (try `strata --help`)\n";
  return kExitUserError;
}
