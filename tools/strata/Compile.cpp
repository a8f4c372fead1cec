//===- Compile.cpp - `strata compile SPEC -o FILE` ------------------------===//
//
// Reads a model spec, builds and verifies its graph and writes the Plan
// atomically: on any error nothing is written.
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelSpec.h"
#include "proto/PlanFile.h"
#include "tools/strata/Driver.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand compileCmd("compile", "Compile a model spec into a plan");

cl::opt<std::string> specPath(cl::Positional, cl::Required,
                              cl::desc("<model spec .textproto>"),
                              cl::sub(compileCmd), cl::cat(strataCategory()));
cl::opt<std::string> outputPath("o", cl::Required,
                                cl::desc("Write the plan to <file>"),
                                cl::value_desc("file"), cl::sub(compileCmd),
                                cl::cat(strataCategory()));

int runCompile() {
  auto spec = loadModelSpec(specPath);
  if (!spec)
    return reportError(spec.takeError());
  auto plan = compilePlan(*spec);
  if (!plan) {
    reportError(plan.takeError());
    return kExitInternalError;
  }
  if (Error e = writePlanFile(outputPath, *plan))
    return reportError(std::move(e));
  outs() << "wrote " << outputPath << " ("
         << resolveModelSpec(*spec).familyName() << ", "
         << withCommas(plan->info().num_params()) << " params, "
         << plan->logical_graph().nodes_size() << " graph nodes)\n";
  return kExitOk;
}

VerbRegistration reg(compileCmd, runCompile);

} // namespace
} // namespace strata
