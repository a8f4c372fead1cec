//===- Graph.h - SSA dataflow graph ---------------------------------------===//
//
// A Graph owns its values and nodes by index. Inputs (parameters and data)
// come first, nodes are kept in topological order, outputs are a list of
// values. A pass that restructures a graph usually builds a new one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Attributes.h"
#include "ir/Op.h"
#include "ir/Sharding.h"
#include "ir/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strata {

class Graph;

/// Index of a value in its graph.
using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

struct Value {
  std::string name; // unique in the graph, printed as %name
  TensorType type;
  std::optional<Sharding> sharding;
  int32_t defNode = -1; // -1 for a graph input
  int32_t resultIndex = 0;
  /// Only on graph inputs: `param` (bool), `init` ("normal"|"zeros"|"ones"),
  /// `std` (float), ... Printed in braces after the type.
  Attrs attrs;
  bool isInput() const { return defNode < 0; }
  bool isParam() const { return attrs.getBool("param"); }
};

struct Node {
  OpKind op;
  llvm::SmallVector<ValueId, 4> operands;
  llvm::SmallVector<ValueId, 1> results;
  Attrs attrs;
  std::string scope; // provenance, e.g. "layers.3.attn.qkv"; kept by every pass
  /// Only on `fused` nodes: the kernel body (inputs = operands, outputs =
  /// results), immutable and shared by copies of the node.
  std::shared_ptr<const Graph> body;
};

class Graph {
public:
  std::string name;
  std::optional<Mesh> mesh;
  /// Set by the spmd pass: value types are per-device (local) shard types and
  /// a sharding says how the shards assemble the logical value (global dim =
  /// local dim * ways); a value without one is replicated. Printed as
  /// `partitioned` after the mesh.
  bool partitioned = false;

  /// Adds a graph input. The name must be unique.
  ValueId addInput(llvm::StringRef name, TensorType type, Attrs attrs = {});
  /// Appends a node whose result types are already known (no inference).
  /// Result names: `names[i]` or a fresh name when empty.
  int32_t addNode(OpKind op, llvm::ArrayRef<ValueId> operands,
                  llvm::ArrayRef<TensorType> resultTypes, Attrs attrs,
                  llvm::StringRef scope,
                  llvm::ArrayRef<std::string> names = {});

  const Value &value(ValueId v) const { return values_[v]; }
  Value &value(ValueId v) { return values_[v]; }
  const TensorType &type(ValueId v) const { return values_[v].type; }
  const Node &node(int32_t n) const { return nodes_[n]; }
  Node &node(int32_t n) { return nodes_[n]; }

  llvm::ArrayRef<ValueId> inputs() const { return inputs_; }
  llvm::ArrayRef<Node> nodes() const { return nodes_; }
  llvm::ArrayRef<ValueId> outputs() const { return outputs_; }
  size_t numValues() const { return values_.size(); }

  void addOutput(ValueId v) { outputs_.push_back(v); }
  void setOutputs(llvm::ArrayRef<ValueId> outs) {
    outputs_.assign(outs.begin(), outs.end());
  }

  /// The value named `name`, or kNoValue.
  ValueId lookup(llvm::StringRef name) const;
  /// A name not yet used in the graph, built from `hint`.
  std::string freshName(llvm::StringRef hint);
  /// Renames a value (the new name must be unused).
  void rename(ValueId v, llvm::StringRef newName);

  /// Parameter inputs, in input order.
  llvm::SmallVector<ValueId> params() const;
  /// For every value, the nodes that use it (recomputed on each call).
  std::vector<llvm::SmallVector<int32_t, 2>> users() const;

private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  llvm::StringMap<ValueId> byName_;
  int64_t nextFresh_ = 0;
};

/// Whether `n` is a column sum: reduce_sum over every dim but the last of an
/// f32/f64 value of rank >= 2, to [last dim] (a bias gradient). The fusion
/// pass and codegen take it as a kernel epilogue.
bool isColumnSum(const Graph &g, const Node &n);

} // namespace strata
