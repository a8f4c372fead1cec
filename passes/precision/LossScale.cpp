//===- LossScale.cpp - The backward's seed as a loss-scale input ---------===//
#include "passes/precision/LossScale.h"

#include "passes/PassManager.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/pipeline/GraphCopy.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "loss-scale: " + msg);
}

/// The node autodiff seeds the backward with: the first backward node, a
/// scalar fill of 1 (it has no operands, so nothing is placed before it).
llvm::Expected<int32_t> findSeed(const Graph &g) {
  if (g.outputs().empty())
    return err("the graph has no outputs (run autodiff first)");
  ValueId loss = g.outputs()[0];
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node &n = g.node(int32_t(i));
    if (!isBackward(n))
      continue;
    if (n.op != OpKind::Fill || n.results.size() != 1 ||
        g.type(n.results[0]) != g.type(loss) ||
        n.attrs.getFloat("value") != 1.0)
      break;
    return int32_t(i);
  }
  return err("the graph has no backward seed fill(1.0) of %" +
             g.value(loss).name + "'s type (run autodiff first, and " +
             "loss-scale once)");
}
} // namespace

llvm::Error applyLossScale(Graph &g) {
  if (g.lookup(kLossScaleInput) != kNoValue)
    return err("%" + kLossScaleInput + " already exists (loss-scale runs once)");
  auto seed = findSeed(g);
  if (!seed)
    return seed.takeError();
  ValueId seedValue = g.node(*seed).results[0];
  if (g.type(seedValue) != TensorType{DType::F32, {}})
    return err("the loss %" + g.value(g.outputs()[0]).name + " is " +
               g.type(seedValue).str() + "; the scale is an f32 scalar");
  Graph out = emptyLike(g);
  GraphCopier c(g, out);
  for (ValueId v : g.inputs())
    c.addInput(v);
  ValueId scale = out.addInput(kLossScaleInput, TensorType{DType::F32, {}});
  c.setMapped(seedValue, scale);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (int32_t(i) != *seed)
      c.copyNode(int32_t(i));
  for (ValueId o : g.outputs())
    out.addOutput(c.mapped(o));
  g = std::move(out);
  return llvm::Error::success();
}

namespace {
class LossScalePass : public Pass {
public:
  llvm::StringRef name() const override { return "loss-scale"; }
  llvm::Expected<bool> run(Graph &g) override {
    if (auto e = applyLossScale(g))
      return std::move(e);
    return true;
  }
};
} // namespace

std::unique_ptr<Pass> createLossScalePass() {
  return std::make_unique<LossScalePass>();
}

void registerLossScalePass() {
  registerPass({"loss-scale",
                "seed the backward with the input %loss_scale: gradients "
                "come out scaled (fp16 loss scaling)",
                [](const PassOptions &o)
                    -> llvm::Expected<std::unique_ptr<Pass>> {
                  if (auto e = checkPassOptions("loss-scale", o, {}))
                    return std::move(e);
                  return createLossScalePass();
                }});
}

} // namespace strata
