//===- Bindings.cpp - What each program input and output is ---------------===//
#include "passes/pipeline/Bindings.h"
#include "passes/pipeline/PipelinePlan.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The role of optimizer input or output `name` (after `new.` for outputs).
Binding stateBinding(llvm::StringRef name, Role param, Role m, Role v) {
  if (name.consume_front("adam_m."))
    return {m, name.str()};
  if (name.consume_front("adam_v."))
    return {v, name.str()};
  return {param, name.str()};
}

bool isParameterRole(Role r) {
  switch (r) {
  case Role::Parameter:
  case Role::Gradient:
  case Role::AdamM:
  case Role::AdamV:
  case Role::NewParameter:
  case Role::NewAdamM:
  case Role::NewAdamV:
    return true;
  default:
    return false;
  }
}

/// Fills the sharding and owner of `b`, the binding of `v`.
void place(Binding &b, const Value &v, int64_t rank,
           llvm::ArrayRef<TiedParam> tied) {
  b.sharding = v.sharding ? *v.sharding : Sharding::replicated(v.type.rank());
  b.owner = rank;
  if (!isParameterRole(b.role))
    return;
  for (const TiedParam &t : tied)
    if (t.name == b.name && !t.ranks.empty())
      b.owner = t.ranks.front();
}
} // namespace

llvm::StringRef roleName(Role r) {
  static const char *const names[kNumRoles] = {
      "parameter",  "gradient",   "adam_m",    "adam_v",
      "tokens",     "labels",     "lr",        "step",
      "loss",       "grad_norm",  "stash",     "new_parameter",
      "new_adam_m", "new_adam_v", "loss_scale"};
  return names[int(r)];
}

llvm::Expected<ProgramBindings> bindProgram(const Graph &g, ProgramKind kind,
                                            const PipelineStage *stage,
                                            int64_t rank,
                                            llvm::ArrayRef<TiedParam> tied) {
  ProgramBindings b;
  auto noRole = [&](ValueId v, const char *what) {
    return err("@" + g.name + ": " + what + " %" + g.value(v).name +
               " has no role the runtime can bind");
  };
  llvm::StringSet<> stash;
  if (stage)
    for (const std::string &name : stage->stash)
      stash.insert(name);
  for (ValueId in : g.inputs()) {
    const Value &val = g.value(in);
    llvm::StringRef name = val.name;
    if (val.isParam())
      b.inputs.push_back({Role::Parameter, val.name});
    else if (name == "tokens" || name == "labels")
      b.inputs.push_back({name == "tokens" ? Role::Tokens : Role::Labels, ""});
    else if (kind == ProgramKind::Optimizer && (name == "lr" || name == "step"))
      b.inputs.push_back({name == "lr" ? Role::LearningRate : Role::Step, ""});
    else if (kind == ProgramKind::Optimizer && name.consume_front("grad."))
      b.inputs.push_back({Role::Gradient, name.str()});
    else if (kind == ProgramKind::Optimizer &&
             (name.startswith("adam_m.") || name.startswith("adam_v.")))
      b.inputs.push_back(
          stateBinding(name, Role::Parameter, Role::AdamM, Role::AdamV));
    else if (kind == ProgramKind::Backward && stash.contains(name))
      b.inputs.push_back({Role::Stash, val.name});
    else if (kind == ProgramKind::Backward && name == "loss_scale")
      b.inputs.push_back({Role::LossScale, ""});
    else if (kind == ProgramKind::Backward && name.consume_front("grad.") &&
             name.consume_back(".acc"))
      b.inputs.push_back({Role::Gradient, name.str()});
    else
      return noRole(in, "input");
  }
  for (size_t o = 0; o < g.outputs().size(); ++o) {
    ValueId out = g.outputs()[o];
    llvm::StringRef name = g.value(out).name;
    if (kind == ProgramKind::Forward) {
      bool loss = stage && stage->head && o == 0;
      size_t s = o - (stage && stage->head ? 1 : 0);
      if (loss)
        b.outputs.push_back({Role::Loss, ""});
      else if (stage && s < stage->stash.size() && stage->stash[s] == name)
        b.outputs.push_back({Role::Stash, name.str()});
      else
        return noRole(out, "output");
    } else if (kind == ProgramKind::Backward && name.consume_front("grad.")) {
      b.outputs.push_back({Role::Gradient, name.str()});
    } else if (kind == ProgramKind::Optimizer && name == "grad_norm") {
      b.outputs.push_back({Role::GradNorm, ""});
    } else if (kind == ProgramKind::Optimizer && name.consume_front("new.")) {
      b.outputs.push_back(stateBinding(name, Role::NewParameter, Role::NewAdamM,
                                       Role::NewAdamV));
    } else {
      return noRole(out, "output");
    }
  }
  for (size_t i = 0; i < b.inputs.size(); ++i)
    place(b.inputs[i], g.value(g.inputs()[i]), rank, tied);
  for (size_t o = 0; o < b.outputs.size(); ++o)
    place(b.outputs[o], g.value(g.outputs()[o]), rank, tied);
  return b;
}

llvm::Error bindPipeline(PipelinePlan &plan) {
  for (PipelineStage &s : plan.stages) {
    auto f =
        bindProgram(s.forward, ProgramKind::Forward, &s, s.rank, plan.tied);
    if (!f)
      return f.takeError();
    auto b =
        bindProgram(s.backward, ProgramKind::Backward, &s, s.rank, plan.tied);
    if (!b)
      return b.takeError();
    s.forwardBindings = std::move(*f);
    s.backwardBindings = std::move(*b);
  }
  plan.optimizerBindings.clear();
  for (size_t r = 0; r < plan.optimizers.size(); ++r) {
    auto o = bindProgram(plan.optimizers[r], ProgramKind::Optimizer, nullptr,
                         int64_t(r), plan.tied);
    if (!o)
      return o.takeError();
    plan.optimizerBindings.push_back(std::move(*o));
  }
  return llvm::Error::success();
}

} // namespace strata
