//===- MixedPrecision.cpp - 16-bit compute with fp32 master state --------===//
#include "passes/precision/MixedPrecision.h"

#include "passes/PassManager.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/pipeline/GraphCopy.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <map>
#include <tuple>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

bool isLowFloat(DType t) { return t == DType::BF16 || t == DType::F16; }

/// The `add` nodes that sum a parameter gradient's contributions: the tree
/// of backward adds under a float output whose inner results feed only the
/// tree. They add in fp32, as Megatron adds each contribution into the fp32
/// main_grad (and passes/pipeline finds a tied gradient's tree there).
llvm::DenseSet<int32_t> gradientSumTrees(const Graph &g) {
  llvm::DenseSet<int32_t> trees;
  auto users = g.users();
  std::function<void(ValueId, bool)> visit = [&](ValueId v, bool root) {
    if (g.value(v).isInput())
      return;
    int32_t d = g.value(v).defNode;
    const Node &n = g.node(d);
    if (n.op != OpKind::Add || !isBackward(n) ||
        (!root && users[v].size() != 1))
      return;
    trees.insert(d);
    for (ValueId x : n.operands)
      visit(x, /*root=*/false);
  };
  for (ValueId o : g.outputs())
    if (g.type(o).rank() > 0)
      visit(o, /*root=*/true);
  return trees;
}

class Rewriter {
public:
  Rewriter(const Graph &src, DType low)
      : src_(src), low_(low), dst_(emptyLike(src)), copier_(src, dst_),
        keep32_(gradientSumTrees(src)) {}

  Graph run() {
    for (ValueId v : src_.inputs())
      copier_.addInput(v);
    for (size_t i = 0; i < src_.nodes().size(); ++i)
      copyNode(int32_t(i));
    for (ValueId o : src_.outputs()) {
      ValueId d = copier_.mapped(o);
      DType want = src_.type(o).dtype;
      if (dst_.type(d).dtype != want) {
        // The output keeps its name and dtype; the 16-bit value is renamed.
        std::string name = src_.value(o).name;
        dst_.rename(d, unusedName(name + "." + dtypeName(dst_.type(d).dtype)));
        const Node &def = src_.node(src_.value(o).defNode);
        d = cast(d, want, isBackward(def), def.scope, name);
      }
      dst_.addOutput(d);
    }
    return std::move(dst_);
  }

private:
  /// `hint` if neither graph uses it (the source's names are copied later),
  /// else a fresh variant.
  std::string unusedName(const llvm::Twine &hint) {
    std::string h = hint.str();
    for (int k = 1; src_.lookup(h) != kNoValue || dst_.lookup(h) != kNoValue;
         ++k)
      h = (hint + "." + llvm::Twine(k)).str();
    return h;
  }

  /// The dtype node `n` computes its float results in.
  DType computeIn(int32_t i) const {
    const Node &n = src_.node(i);
    if (n.op == OpKind::CrossEntropy || n.op == OpKind::CrossEntropyGrad ||
        keep32_.contains(i))
      return DType::F32;
    bool allScalar = llvm::all_of(n.results, [&](ValueId r) {
      return !isFloat(src_.type(r).dtype) || src_.type(r).rank() == 0;
    });
    return allScalar ? DType::F32 : low_;
  }

  /// A cast of destination value `v` to `dt`, made once per (value, dtype,
  /// region, scope): parameters are cast in the scope that reads them, so
  /// every pipeline stage makes its own copy.
  ValueId castFor(ValueId v, DType dt, bool backward, llvm::StringRef scope) {
    const Value &val = dst_.value(v);
    std::string at = val.isInput() ? scope.str() : dst_.node(val.defNode).scope;
    auto key = std::make_tuple(v, dt, backward, at);
    auto it = casts_.find(key);
    if (it != casts_.end())
      return it->second;
    std::string name =
        unusedName(val.name + "." + dtypeName(dt) + (backward ? ".bwd" : ""));
    ValueId c = cast(v, dt, backward, at, name);
    casts_[key] = c;
    return c;
  }

  ValueId cast(ValueId v, DType dt, bool backward, llvm::StringRef scope,
               const std::string &name) {
    Attrs attrs{{"dtype", dtypeName(dt).str()}};
    if (backward)
      attrs.set(kBackwardAttr, true);
    TensorType t{dt, dst_.type(v).shape};
    int32_t n = dst_.addNode(OpKind::Cast, {v}, {t}, attrs, scope, {name});
    ValueId r = dst_.node(n).results[0];
    dst_.value(r).sharding = dst_.value(v).sharding;
    return r;
  }

  void copyNode(int32_t i) {
    const Node &n = src_.node(i);
    if (n.op == OpKind::Cast || n.op == OpKind::Iota) {
      copier_.copyNode(i);
      return;
    }
    DType dt = computeIn(i);
    bool backward = isBackward(n);
    llvm::SmallVector<ValueId, 4> operands;
    llvm::SmallVector<TensorType, 4> types;
    for (ValueId v : n.operands) {
      ValueId d = copier_.mapped(v);
      if (isFloat(dst_.type(d).dtype) && dst_.type(d).dtype != dt)
        d = castFor(d, dt, backward, n.scope);
      operands.push_back(d);
      types.push_back(dst_.type(d));
    }
    Attrs attrs = n.attrs;
    if (auto old = parseDType(attrs.getString("dtype")); old && isFloat(*old))
      attrs.set("dtype", dtypeName(dt).str());
    auto inferred =
        inferResultTypes(n.op, types, attrs, src_.mesh ? &*src_.mesh : nullptr);
    // Every op takes any float dtype its operands share, so inference
    // cannot fail on a graph that verified in f32.
    assert(inferred && "mixed precision made an ill-typed node");
    llvm::SmallVector<std::string, 1> names;
    for (ValueId r : n.results)
      names.push_back(src_.value(r).name);
    int32_t m = dst_.addNode(n.op, operands, *inferred, attrs, n.scope, names);
    dst_.node(m).body = n.body;
    for (size_t k = 0; k < n.results.size(); ++k) {
      ValueId r = dst_.node(m).results[k];
      dst_.value(r).sharding = src_.value(n.results[k]).sharding;
      copier_.setMapped(n.results[k], r);
    }
  }

  const Graph &src_;
  DType low_;
  Graph dst_;
  GraphCopier copier_;
  llvm::DenseSet<int32_t> keep32_;
  std::map<std::tuple<ValueId, DType, bool, std::string>, ValueId> casts_;
};

class MixedPrecisionPass : public Pass {
public:
  explicit MixedPrecisionPass(DType dtype) : dtype_(dtype) {}
  llvm::StringRef name() const override { return "mixed-precision"; }
  llvm::Expected<bool> run(Graph &g) override {
    if (auto e = applyMixedPrecision(g, dtype_))
      return std::move(e);
    return true;
  }

private:
  DType dtype_;
};
} // namespace

std::optional<DType> parseTrainingPrecision(llvm::StringRef name) {
  if (name == "f32" || name == "fp32")
    return DType::F32;
  if (name == "bf16")
    return DType::BF16;
  if (name == "fp16" || name == "f16")
    return DType::F16;
  return std::nullopt;
}

llvm::StringRef trainingPrecisionName(DType precision) {
  return precision == DType::F16 ? "fp16" : dtypeName(precision);
}

llvm::Error applyMixedPrecision(Graph &g, DType dtype) {
  if (!isLowFloat(dtype))
    return err("mixed precision computes in bf16 or fp16, not " +
               dtypeName(dtype));
  for (ValueId p : g.params())
    if (g.type(p).dtype != DType::F32)
      return err("parameter %" + g.value(p).name + " is " +
                 dtypeName(g.type(p).dtype) +
                 "; mixed precision keeps f32 master parameters and makes "
                 "the 16-bit copies itself (give the parameters as f32)");
  for (size_t v = 0; v < g.numValues(); ++v)
    if (isLowFloat(g.type(ValueId(v)).dtype))
      return err("%" + g.value(ValueId(v)).name + " is already " +
                 dtypeName(g.type(ValueId(v)).dtype) +
                 " (mixed-precision runs once, on an f32 graph)");
  g = Rewriter(g, dtype).run();
  return llvm::Error::success();
}

std::unique_ptr<Pass> createMixedPrecisionPass(DType dtype) {
  return std::make_unique<MixedPrecisionPass>(dtype);
}

void registerMixedPrecisionPass() {
  registerPass(
      {"mixed-precision",
       "16-bit compute (bf16 or fp16) with f32 master parameters, gradients "
       "and loss (Megatron's --bf16 / --fp16)",
       [](const PassOptions &o) -> llvm::Expected<std::unique_ptr<Pass>> {
         if (auto e = checkPassOptions("mixed-precision", o,
                                       {"dtype", "grad-reduce"}))
           return std::move(e);
         // Gradients leave the microbatch graph in f32; the runtime's dp
         // reduction may carry them in 16 bits (runtime/parallel/
         // GradReduceDtype.h), which is not the graph's business.
         if (auto it = o.find("grad-reduce");
             it != o.end() && it->second != "f32")
           return err("mixed-precision: grad-reduce=" + it->second +
                      ": gradients leave the graph in f32 (grad-reduce=f32, "
                      "the default); for a 16-bit data-parallel reduction "
                      "pass --grad-reduce-dtype bf16 or fp16 to strata train "
                      "or verify");
         std::string name = "bf16";
         if (auto it = o.find("dtype"); it != o.end())
           name = it->second;
         auto dt = parseTrainingPrecision(name);
         if (!dt || *dt == DType::F32)
           return err("mixed-precision: dtype must be bf16 or fp16 (got '" +
                      name + "')");
         return createMixedPrecisionPass(*dt);
       }});
}

} // namespace strata
