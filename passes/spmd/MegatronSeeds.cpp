//===- MegatronSeeds.cpp - The `megatron-seeds` pass
//-----------------------===//
//
// Megatron-LM's tensor-parallel layout (Shoeybi et al. 2019), by the
// parameter names of docs/models.md (`layers.<i>.` prefixes allowed):
//   column-parallel (output features split over tp): attn.{q,k,v}.{w,b},
//     mlp.fc1.{w,b}, mlp.gate.w, mlp.up.w
//   row-parallel (input features split over tp): attn.o.w, mlp.fc2.w,
//     mlp.down.w (their biases are whole)
//   vocab-parallel: wte rows, lm_head.w columns
//   everything else (norms, wpe, row-parallel biases) whole;
//   data inputs (tokens, labels, ...) split on dim 0 (batch) over dp.
// Axes of size 1 split nothing. With sp=1 every norm's input and output is
// annotated [dp,tp,_] (sequence parallelism, Korthikanti et al. 2022).
//
// Grouped-query attention: when tp divides the KV heads each rank keeps
// whole query groups with their KV heads (attn.{k,v} column-parallel, as in
// Megatron-LM). When tp is a multiple of the KV heads (Falcon-7B's single
// KV head, a Llama with kv_heads < tp) the KV heads are replicated, as
// Megatron does: attn.{k,v}.{w,b} stay whole on every tp rank, and the spmd
// pass's attention rule gives each rank the KV head its query heads use,
// with the copies' gradients summed over tp (NormAttention.cpp). Other
// ratios are an error with the fix.
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Spmd.h"

#include "passes/PassManager.h"
#include "passes/autodiff/Autodiff.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "megatron-seeds: " + msg);
}

enum class Role { Whole, Column, ColumnBias, Row, VocabRows, VocabCols };

/// `replicateKv`: the K/V projections stay whole (KV heads replicated).
Role roleOf(llvm::StringRef name, bool replicateKv) {
  auto is = [&](llvm::StringRef suffix) {
    return name == suffix || name.endswith(("." + suffix).str());
  };
  for (const char *s : {"attn.k.w", "attn.v.w", "attn.k.b", "attn.v.b"})
    if (replicateKv && is(s))
      return Role::Whole;
  for (const char *s : {"attn.q.w", "attn.k.w", "attn.v.w", "mlp.fc1.w",
                        "mlp.gate.w", "mlp.up.w"})
    if (is(s))
      return Role::Column;
  for (const char *s : {"attn.q.b", "attn.k.b", "attn.v.b", "mlp.fc1.b"})
    if (is(s))
      return Role::ColumnBias;
  for (const char *s : {"attn.o.w", "mlp.fc2.w", "mlp.down.w"})
    if (is(s))
      return Role::Row;
  if (name == "wte")
    return Role::VocabRows;
  if (name == "lm_head.w")
    return Role::VocabCols;
  return Role::Whole;
}

/// The dim a role splits over tp, and what that dim is, for messages.
std::pair<int64_t, const char *> splitDim(Role r) {
  switch (r) {
  case Role::Column:
    return {1, "output features (column-parallel)"};
  case Role::ColumnBias:
    return {0, "features (column-parallel bias)"};
  case Role::Row:
    return {0, "input features (row-parallel)"};
  case Role::VocabRows:
    return {0, "padded vocab rows (vocab-parallel embedding)"};
  case Role::VocabCols:
    return {1, "padded vocab columns (vocab-parallel LM head)"};
  case Role::Whole:
    break;
  }
  return {-1, ""};
}

std::string str(int64_t v) { return std::to_string(v); }

/// Checks the heads against tp; sets `replicateKv` when some attention has
/// fewer KV heads than tp (tp a multiple of them).
llvm::Error checkHeads(const Graph &g, int64_t tp, bool &replicateKv) {
  replicateKv = false;
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::Attention)
      continue;
    int64_t nh = g.type(n.operands[0]).shape[2];
    int64_t nkv = g.type(n.operands[1]).shape[2];
    if (nh % tp)
      return err("attention heads " + str(nh) + " (" + n.scope +
                 ") not divisible by tp " + str(tp) +
                 " (each tp rank computes heads/tp whole heads; use a tp that "
                 "divides " +
                 str(nh) + ")");
    if (nkv % tp && tp % nkv)
      return err("KV heads " + str(nkv) + " (" + n.scope +
                 ") neither divisible by tp " + str(tp) +
                 " nor dividing it (each tp rank keeps whole KV head groups, "
                 "or one replicated KV head when tp is a multiple of the KV "
                 "heads, as in Megatron-LM; use a tp that divides " +
                 str(nkv) + " or a multiple of " + str(nkv) + " dividing " +
                 str(nh) + ")");
    replicateKv |= nkv % tp != 0;
  }
  return llvm::Error::success();
}

/// The values sequence parallelism splits: each forward norm's input and
/// output, [B,S,H].
llvm::SmallVector<ValueId> sequenceParallelValues(const Graph &g) {
  llvm::SmallVector<ValueId> vs;
  for (const Node &n : g.nodes()) {
    if ((n.op != OpKind::LayerNorm && n.op != OpKind::RmsNorm) ||
        isBackward(n) || g.type(n.operands[0]).rank() != 3)
      continue;
    vs.push_back(n.operands[0]);
    vs.push_back(n.results[0]);
  }
  return vs;
}
} // namespace

llvm::Error seedMegatron(Graph &g, const MegatronSeedOptions &o) {
  if (o.tp < 1 || o.dp < 1)
    return err("tp and dp must be >= 1 (got tp=" + str(o.tp) +
               ", dp=" + str(o.dp) + ")");
  if (g.partitioned)
    return err("the graph is already partitioned (seed the logical graph)");
  bool replicateKv = false;
  if (auto e = checkHeads(g, o.tp, replicateKv))
    return e;

  llvm::DenseMap<ValueId, Sharding> seeds;
  for (ValueId v : g.inputs()) {
    const Value &in = g.value(v);
    Sharding s = Sharding::replicated(in.type.rank());
    if (in.isParam()) {
      Role role = roleOf(in.name, replicateKv);
      auto [dim, what] = splitDim(role);
      if (dim >= 0 && dim < in.type.rank() && o.tp > 1) {
        if (in.type.shape[dim] % o.tp)
          return err(llvm::Twine(what) + " of %" + in.name + " " +
                     in.type.str() + ": " + str(in.type.shape[dim]) +
                     " not divisible by tp " + str(o.tp) +
                     " (each tp rank owns 1/tp of them; use a tp that "
                     "divides " +
                     str(in.type.shape[dim]) +
                     (role == Role::VocabRows || role == Role::VocabCols
                          ? ", or set make_vocab_size_divisible_by to a "
                            "multiple of tp)"
                          : ")"));
        s.dims[dim] = {"tp"};
      }
    } else if (in.type.rank() >= 1 && o.dp > 1) {
      if (in.type.shape[0] % o.dp)
        return err("batch " + str(in.type.shape[0]) + " of %" + in.name +
                   " not divisible by dp " + str(o.dp) +
                   " (each dp rank takes batch/dp sequences; use a "
                   "micro-batch size divisible by " +
                   str(o.dp) + ")");
      s.dims[0] = {"dp"};
    }
    seeds[v] = std::move(s);
  }

  llvm::SmallVector<ValueId> spValues;
  if (o.sp && o.tp > 1) {
    spValues = sequenceParallelValues(g);
    for (ValueId v : spValues) {
      int64_t seq = g.type(v).shape[1];
      if (seq % o.tp)
        return err("sequence length " + str(seq) + " not divisible by tp " +
                   str(o.tp) +
                   " (sequence parallelism splits the sequence over tp; use "
                   "a tp that divides " +
                   str(seq) + ", or sp=0)");
    }
  }

  // Validated: now change the graph.
  Mesh mesh;
  mesh.axes = {{"dp", o.dp}, {"tp", o.tp}};
  g.mesh = mesh;
  for (auto &[v, s] : seeds)
    g.value(v).sharding = s;
  for (ValueId v : spValues) {
    Sharding s = Sharding::replicated(3);
    if (o.dp > 1)
      s.dims[0] = {"dp"};
    s.dims[1] = {"tp"};
    g.value(v).sharding = s;
  }
  return llvm::Error::success();
}

namespace {
class MegatronSeedsPass : public Pass {
public:
  explicit MegatronSeedsPass(MegatronSeedOptions o) : options_(o) {}
  llvm::StringRef name() const override { return "megatron-seeds"; }
  llvm::Expected<bool> run(Graph &g) override {
    if (auto e = seedMegatron(g, options_))
      return e;
    return true;
  }

private:
  MegatronSeedOptions options_;
};

} // namespace

std::unique_ptr<Pass> createMegatronSeedsPass(MegatronSeedOptions options) {
  return std::make_unique<MegatronSeedsPass>(options);
}

void registerMegatronSeedsPass() {
  registerPass(
      {"megatron-seeds",
       "set mesh<dp,tp> and Megatron-LM's parameter/data shardings "
       "(tp, dp, sp=0|1)",
       [](const PassOptions &o) -> llvm::Expected<std::unique_ptr<Pass>> {
         if (auto e = checkPassOptions("megatron-seeds", o, {"tp", "dp", "sp"}))
           return e;
         MegatronSeedOptions options;
         auto tp = intPassOption(o, "tp", 1);
         if (!tp)
           return err(llvm::toString(tp.takeError()));
         auto dp = intPassOption(o, "dp", 1);
         if (!dp)
           return err(llvm::toString(dp.takeError()));
         auto sp = intPassOption(o, "sp", 0);
         if (!sp)
           return err(llvm::toString(sp.takeError()));
         if (*sp != 0 && *sp != 1)
           return err("option sp must be 0 or 1 (got " + str(*sp) + ")");
         if (*tp < 1 || *dp < 1)
           return err("tp and dp must be >= 1 (got tp=" + str(*tp) +
                      ", dp=" + str(*dp) + ")");
         options.tp = *tp;
         options.dp = *dp;
         options.sp = *sp == 1;
         return createMegatronSeedsPass(options);
       }});
}

} // namespace strata
