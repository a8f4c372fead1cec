//===- ProgramPasses.cpp - Passes over a whole training program -----------===//
#include "passes/pipeline/ProgramPasses.h"

#include "passes/PassManager.h"
#include "passes/pipeline/Bindings.h"
#include "passes/pipeline/ParallelCompile.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error wholeProgramOnly(llvm::StringRef pass) {
  return err("the " + pass +
             " pass works on a training program, not one graph (run it after "
             "autodiff in strata-opt, which then treats the input as the "
             "microbatch graph)");
}

class PipelinePass : public Pass {
public:
  explicit PipelinePass(PipelineOptions o) : options_(std::move(o)) {}
  llvm::StringRef name() const override { return "pipeline"; }
  llvm::Expected<bool> run(Graph &) override {
    return wholeProgramOnly("pipeline");
  }
  llvm::Expected<bool> runOnProgram(CompiledPipeline &p) override {
    if (!p.pipeline.stages.empty())
      return err("the program is already cut into stages");
    auto plan = buildPipeline(p.micro, options_);
    if (!plan)
      return plan.takeError();
    p.pipeline = std::move(*plan);
    if (auto e = bindPipeline(p.pipeline))
      return e;
    return true;
  }

private:
  PipelineOptions options_;
};

class MemoryPass : public Pass {
public:
  explicit MemoryPass(SavedStateModel m) : model_(m) {}
  llvm::StringRef name() const override { return "memory"; }
  llvm::Expected<bool> run(Graph &) override {
    return wholeProgramOnly("memory");
  }
  llvm::Expected<bool> runOnProgram(CompiledPipeline &p) override {
    if (p.pipeline.stages.empty())
      return err("memory plans the stage programs: run the pipeline pass "
                 "first");
    p.memory = planMemory(p.pipeline, model_);
    return false; // the programs are unchanged
  }

private:
  SavedStateModel model_;
};

llvm::Expected<std::unique_ptr<Pass>>
pipelineFromOptions(const PassOptions &o) {
  if (auto e = checkPassOptions("pipeline", o,
                                {"pp", "schedule", "microbatches", "layers",
                                 "distributed-optimizer", "beta1", "beta2",
                                 "eps", "weight-decay", "grad-clip"}))
    return e;
  PipelineOptions p;
  OptimizerConfig &oc = p.optimizer;
  for (auto [key, field, def] :
       {std::tuple{"pp", &p.pp, int64_t(1)},
        std::tuple{"microbatches", &p.microbatches, int64_t(1)}}) {
    auto v = intPassOption(o, key, def);
    if (!v)
      return v.takeError();
    *field = *v;
  }
  for (auto [key, field] :
       {std::pair{"beta1", &oc.beta1}, std::pair{"beta2", &oc.beta2},
        std::pair{"eps", &oc.eps}, std::pair{"weight-decay", &oc.weight_decay},
        std::pair{"grad-clip", &oc.grad_clip}}) {
    auto v = floatPassOption(o, key, *field);
    if (!v)
      return v.takeError();
    *field = *v;
  }
  auto zero = intPassOption(o, "distributed-optimizer", 0);
  if (!zero)
    return zero.takeError();
  p.distributedOptimizer = *zero != 0;
  if (auto it = o.find("schedule"); it != o.end()) {
    auto s = parseScheduleSpec(it->second);
    if (!s)
      return s.takeError();
    p.schedule = *s;
  }
  auto layers = intListPassOption(o, "layers", "blocks per stage");
  if (!layers)
    return layers.takeError();
  p.layersPerStage = std::move(*layers);
  return createPipelinePass(std::move(p));
}
} // namespace

llvm::Expected<bool> Pass::runOnProgram(CompiledPipeline &p) {
  if (p.pipeline.stages.empty())
    return run(p.micro);
  bool changed = false;
  for (PipelineStage &s : p.pipeline.stages)
    for (Graph *g : {&s.forward, &s.backward}) {
      auto c = run(*g);
      if (!c)
        return c.takeError();
      changed |= *c;
    }
  for (Graph &g : p.pipeline.optimizers) {
    auto c = run(g);
    if (!c)
      return c.takeError();
    changed |= *c;
  }
  return changed;
}

std::unique_ptr<Pass> createPipelinePass(PipelineOptions options) {
  return std::make_unique<PipelinePass>(std::move(options));
}

std::unique_ptr<Pass> createMemoryPass(SavedStateModel model) {
  return std::make_unique<MemoryPass>(model);
}

void registerPipelinePass() {
  registerPass({"pipeline",
                "cut a training program into pipeline stages with their "
                "optimizer programs, schedule and binding table (pp, "
                "schedule, microbatches, layers=A+B, distributed-optimizer, "
                "AdamW options)",
                pipelineFromOptions});
}

void registerMemoryPass() {
  registerPass(
      {"memory",
       "plan every program's buffers and each pipeline rank's peak bytes "
       "(saved-state=strata|megatron)",
       [](const PassOptions &o) -> llvm::Expected<std::unique_ptr<Pass>> {
         if (auto e = checkPassOptions("memory", o, {"saved-state"}))
           return e;
         SavedStateModel m = SavedStateModel::Strata;
         if (auto it = o.find("saved-state"); it != o.end()) {
           auto parsed = parseSavedStateModel(it->second);
           if (!parsed)
             return err("saved-state must be strata or megatron (got '" +
                        it->second + "')");
           m = *parsed;
         }
         return createMemoryPass(m);
       }});
}

} // namespace strata
