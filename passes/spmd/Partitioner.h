//===- Partitioner.h - SPMD partitioning of a graph over its mesh
//----------===//
//
// The partitioner walks the logical graph (global shapes, shardings seeded on
// inputs and optionally annotated on intermediate values) in topological order
// and builds the per-device graph: every value gets a sharding and its LOCAL
// (per-device) type, and collectives are inserted wherever an operand must be
// resharded for its consumer (XLA's SPMD partitioner: one visitor, a handler
// per op family, big handlers in their own files).
//
// Reshards lower as
//   partial -> whole        all_reduce {axes, reduce="sum"}
//   partial -> split dim d  reduce_scatter {axes, dim=d}
//   split -> whole          all_gather {axes, dim}
//   whole -> split          shard_slice {axes, dim}   (local, no communication)
// and every inserted node records its provenance: `reason` (why) and `src`
// (the scope of the node whose result is resharded, or where a partial sum
// came from); its scope is the consumer's.
//
// Choices are made locally, in program order, from the operands' shardings
// (forward), refined by hints pulled backward from annotations and from the
// layouts the graph outputs need (GSPMD's two directions, kept deterministic).
//
// The result: node results keep their names (inserted values are named
// `<value>.<op>`), a value without a sharding is replicated, and outputs are
// partial sums only over the kept axes (dp). Means over a dp-split batch are
// already divided by the global count, so the partial sums add up (SUM, not
// average) to the serial loss and gradients.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/spmd/ShardingUtil.h"

#include "ir/Graph.h"
#include "ir/Verifier.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace strata::spmd {

struct PartitionOptions {
  /// Mesh axes over which graph outputs may stay partial sums (the optimizer
  /// program reduces data-parallel gradients once per step). Partial sums
  /// over other axes are reduced before an output.
  llvm::SmallVector<std::string, 1> keepPartial{"dp"};
};

/// Where a pending partial sum came from: `what` reads "partial sum from
/// <what>", `scope` is the node that made it.
struct PartialOrigin {
  std::string what;
  std::string scope;
};

class Partitioner {
public:
  Partitioner(const Graph &src, PartitionOptions options);

  /// Partitions the whole graph; the result has local types and
  /// `partitioned` set.
  llvm::Expected<Graph> run();

  // --- For the op handlers: the node being partitioned. ---
  const Graph &src() const { return src_; }
  const Mesh &mesh() const { return mesh_; }
  const Node &node() const { return *node_; }
  /// The partitioned value of the current node's operand i.
  ValueId operand(unsigned i) const { return map_[node_->operands[i]]; }
  /// Logical (global) type of the current node's result i.
  const TensorType &resultType(unsigned i = 0) const {
    return src_.type(node_->results[i]);
  }
  /// Sharding the consumers of result i would like (dims only), if known.
  const Dims *hint(unsigned i = 0) const;

  // --- Partitioned values. ---
  const TensorType &type(ValueId v) const { return dst_.type(v); }
  /// A copy: a reference into the partitioned graph's values would dangle
  /// once a handler emits a node (the values vector grows), and handlers
  /// keep shardings across emit() and reshard() (`const Sharding &s =
  /// p.sharding(v)` extends the copy's lifetime).
  Sharding sharding(ValueId v) const { return *dst_.value(v).sharding; }
  /// The logical type of a partitioned value: its local type times the ways
  /// of each split dim.
  TensorType globalType(ValueId v) const;
  /// Whether `v` is a parameter input, or mixed precision's 16-bit copy of
  /// one (a cast of it), whose layout leads as the parameter's does.
  bool isParam(ValueId v) const {
    const Value &val = dst_.value(v);
    if (val.isParam() || val.defNode < 0)
      return val.isParam();
    const Node &n = dst_.node(val.defNode);
    return n.op == OpKind::Cast && dst_.value(n.operands[0]).isParam();
  }
  const PartialOrigin *origin(ValueId v) const;
  void setOrigin(ValueId v, PartialOrigin o);

  /// Returns `v` laid out as `to`, inserting the collectives (memoized per
  /// value and target). `why` says what the consumer needs.
  llvm::Expected<ValueId> reshard(ValueId v, const Sharding &to,
                                  const llvm::Twine &why);

  /// `v` reduced over its partial axes if an earlier reshard already did
  /// that (a free whole value), else `v`.
  ValueId reducedIfAvailable(ValueId v) const;

  /// Appends `op` in the current node's scope (and backward marker) with
  /// local result types from shape inference; result i gets shardings[i] and
  /// the name names[i] (a fresh one derived from the current node if empty).
  llvm::Expected<llvm::SmallVector<ValueId, 1>>
  emit(OpKind op, llvm::ArrayRef<ValueId> operands, Attrs attrs,
       llvm::ArrayRef<Sharding> shardings,
       llvm::ArrayRef<std::string> names = {});
  /// emit() of one result.
  llvm::Expected<ValueId> emit1(OpKind op, llvm::ArrayRef<ValueId> operands,
                                Attrs attrs, const Sharding &sharding,
                                const std::string &name = "");
  /// emit() named after the current node's results, which it binds.
  llvm::Expected<llvm::SmallVector<ValueId, 1>>
  emitResults(OpKind op, llvm::ArrayRef<ValueId> operands, Attrs attrs,
              llvm::ArrayRef<Sharding> shardings);
  /// Makes `v` the partitioned value of the current node's result i; checks
  /// that its type is the local type of the logical one.
  llvm::Error bind(unsigned i, ValueId v);

  /// A fresh value name from `hint` (unused in both graphs).
  std::string freshName(llvm::StringRef hint);
  /// An error naming the current node.
  llvm::Error fail(const llvm::Twine &msg) const;

  /// Values a handler saved for a later node (the vocab-parallel
  /// cross-entropy forward keeps its softmax statistics for the gradient).
  std::map<std::pair<ValueId, ValueId>, llvm::SmallVector<ValueId, 3>> memo;

private:
  llvm::Error partitionNode();
  llvm::Error applyAnnotations();
  llvm::Error partitionOutputs();
  /// The layout output `v` must have, given its current sharding.
  Sharding outputSharding(ValueId srcV, const Sharding &current) const;

  const Graph &src_;
  PartitionOptions options_;
  Mesh mesh_;
  Graph dst_;
  const Node *node_ = nullptr;
  std::string scope_;        // of the nodes emitted now
  bool backward_ = false;    // emitted nodes carry the backward marker
  std::vector<ValueId> map_; // src value -> dst value
  std::vector<std::optional<Dims>> hints_; // per src value
  llvm::DenseMap<ValueId, PartialOrigin> origins_;
  std::map<std::pair<ValueId, std::string>, ValueId> reshardCache_;
};

/// The hint of every value of `g` (dims only): its annotation, else the
/// layout output i needs (`outputNeeds[i]`), else one pulled backward from a
/// user through ops whose operand dims are their result dims (elementwise,
/// dropout). Axes of size 1 are dropped.
std::vector<std::optional<Dims>>
computeHints(const Graph &g, const Mesh &mesh,
             llvm::ArrayRef<std::optional<Dims>> outputNeeds);

} // namespace strata::spmd
