//===- Bindings.h - What each program input and output is -----------------===//
//
// The compiler's typed binding table: for every input and output of every
// program of a plan (stage F and B, rank optimizers) its role and the
// logical name it binds to, so the runtime binds buffers by role and never
// parses value names. Roles and the names the compiler gives them:
//
//   parameter      a `param` input                      <p>
//   gradient       B output / optimizer input grad.<p>  <p>
//   adam_m/adam_v  optimizer input adam_m.<p>, ...      <p>
//   tokens/labels  data inputs                          tokens, labels
//   lr, step       the optimizer's scalars
//   loss           the head F's first output
//   grad_norm      the optimizer's global norm output
//   stash          F outputs after the loss = B inputs  the value's name
//   new_*          optimizer outputs new.<p>, new.adam_m.<p>, new.adam_v.<p>
//   loss_scale     B input loss_scale (passes/precision/LossScale.h)
//
// Each binding also carries the value's sharding (its IR `shard=`) and the
// pipeline rank that owns it: for the parameter roles (parameter, gradient,
// moments and their new values) the rank whose optimizer updates the
// parameter (a tied parameter's first holder), else the program's rank.
// A value of no role is an error at compile time, naming it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/Sharding.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace strata {

struct PipelineStage;
struct PipelinePlan;
struct TiedParam;

/// Binding roles, in the order the plan file's enum numbers them.
enum class Role : uint8_t {
  Parameter,
  Gradient,
  AdamM,
  AdamV,
  Tokens,
  Labels,
  LearningRate,
  Step,
  Loss,
  GradNorm,
  Stash,
  NewParameter,
  NewAdamM,
  NewAdamV,
  LossScale,
};
constexpr int kNumRoles = int(Role::LossScale) + 1;

llvm::StringRef roleName(Role r);

struct Binding {
  Role role = Role::Parameter;
  /// The parameter's name for parameter roles, the value's for the stash,
  /// empty for the others.
  std::string name;
  Sharding sharding; // over the plan's mesh; replicated if none
  int64_t owner = 0; // pipeline rank (see the file comment)
  bool operator==(const Binding &o) const {
    return role == o.role && name == o.name && sharding == o.sharding &&
           owner == o.owner;
  }
};

struct ProgramBindings {
  std::vector<Binding> inputs, outputs; // by graph input / output index
  bool operator==(const ProgramBindings &o) const {
    return inputs == o.inputs && outputs == o.outputs;
  }
};

enum class ProgramKind { Forward, Backward, Optimizer };

/// The bindings of program `g` of kind `kind` run by pipeline rank `rank`
/// (`stage` for F and B); `tied` are the plan's tied parameters.
llvm::Expected<ProgramBindings> bindProgram(const Graph &g, ProgramKind kind,
                                            const PipelineStage *stage,
                                            int64_t rank,
                                            llvm::ArrayRef<TiedParam> tied);

/// Fills every stage's and optimizer's bindings of `plan`.
llvm::Error bindPipeline(PipelinePlan &plan);

} // namespace strata
