//===- GradAccumulationFusion.cpp - Weight-gradient GEMMs with beta = 1 ---===//
#include "passes/fusion/GradAccumulationFusion.h"

#include "passes/PassManager.h"
#include "passes/pipeline/GraphCopy.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace strata {

namespace {

/// A matmul folded with its accumulation: the `add {accumulate}` and, for
/// a 16-bit product, the cast to f32 between them.
struct Fold {
  int32_t add = -1, cast = -1;
};

/// The one user of `v`, if `v` has exactly one and is not returned.
int32_t onlyUser(const std::vector<llvm::SmallVector<int32_t, 2>> &users,
                 const llvm::DenseSet<ValueId> &outputs, ValueId v) {
  return users[v].size() == 1 && !outputs.count(v) ? users[v][0] : -1;
}

/// The foldable matmuls by index.
llvm::DenseMap<int32_t, Fold> accumulatingMatmuls(const Graph &g) {
  llvm::DenseMap<int32_t, Fold> folds;
  auto users = g.users();
  llvm::DenseSet<ValueId> outputs(g.outputs().begin(), g.outputs().end());
  for (int32_t i = 0; i < int32_t(g.nodes().size()); ++i) {
    const Node &mm = g.node(i);
    if (mm.op != OpKind::MatMul || mm.operands.size() != 2)
      continue;
    Fold f;
    ValueId summand = mm.results[0];
    f.add = onlyUser(users, outputs, summand);
    // Mixed precision: a 16-bit product widened into the f32 buffer
    // (Megatron's main_grad) becomes a GEMM accumulating in f32.
    if (f.add >= 0 && g.node(f.add).op == OpKind::Cast &&
        (g.type(summand).dtype == DType::BF16 ||
         g.type(summand).dtype == DType::F16) &&
        g.type(g.node(f.add).results[0]).dtype == DType::F32) {
      f.cast = f.add;
      summand = g.node(f.cast).results[0];
      f.add = onlyUser(users, outputs, summand);
    }
    if (f.add < 0)
      continue;
    const Node &add = g.node(f.add);
    if (add.op != OpKind::Add || !add.attrs.getBool("accumulate") ||
        add.operands.size() != 2 || add.operands[1] != summand ||
        add.operands[0] == summand)
      continue;
    ValueId acc = add.operands[0];
    // The accumulator must exist where the matmul runs.
    if (g.type(acc) != g.type(summand) ||
        g.type(add.results[0]) != g.type(summand) || g.value(acc).defNode >= i)
      continue;
    folds[i] = f;
  }
  return folds;
}

class GradAccumulationFusion : public Pass {
public:
  llvm::StringRef name() const override { return "grad-accumulation-fusion"; }
  llvm::Expected<bool> run(Graph &g) override {
    return fuseGradAccumulation(g);
  }
};

} // namespace

bool fuseGradAccumulation(Graph &g) {
  llvm::DenseMap<int32_t, Fold> folds = accumulatingMatmuls(g);
  if (folds.empty())
    return false;
  llvm::DenseSet<int32_t> folded;
  for (auto [mm, f] : folds) {
    folded.insert(f.add);
    if (f.cast >= 0)
      folded.insert(f.cast);
  }
  Graph out = emptyLike(g);
  GraphCopier c(g, out);
  for (ValueId v : g.inputs())
    c.addInput(v);
  for (int32_t i = 0; i < int32_t(g.nodes().size()); ++i) {
    if (folded.count(i))
      continue;
    auto fold = folds.find(i);
    if (fold == folds.end()) {
      c.copyNode(i);
      continue;
    }
    const Node &mm = g.node(i), &add = g.node(fold->second.add);
    ValueId sum = add.results[0];
    int32_t n =
        out.addNode(OpKind::MatMul,
                    {c.mapped(mm.operands[0]), c.mapped(mm.operands[1]),
                     c.mapped(add.operands[0])},
                    {g.type(sum)}, mm.attrs, mm.scope, {g.value(sum).name});
    ValueId result = out.node(n).results[0];
    out.value(result).sharding = g.value(sum).sharding;
    c.setMapped(sum, result);
  }
  for (ValueId v : g.outputs())
    out.addOutput(c.mapped(v));
  g = std::move(out);
  return true;
}

std::unique_ptr<Pass> createGradAccumulationFusionPass() {
  return std::make_unique<GradAccumulationFusion>();
}

void registerGradAccumulationFusionPass() {
  registerPass(
      {"grad-accumulation-fusion",
       "run each matmul whose product is only added into a gradient buffer "
       "(add {accumulate}) as one matmul with that buffer as accumulator "
       "(GEMM beta = 1)",
       [](const PassOptions &options) -> llvm::Expected<std::unique_ptr<Pass>> {
         if (auto e = checkPassOptions("grad-accumulation-fusion", options, {}))
           return e;
         return createGradAccumulationFusionPass();
       }});
}

} // namespace strata
