//===- GraphCopy.h - Builds a graph from pieces of another
//-----------------===//
//
// Passes that restructure a graph (recompute, the pipeline's stage programs)
// build a new one: inputs that mirror source values, copies of source nodes
// with their operands mapped, and new nodes in between. GraphCopier keeps the
// source -> destination value map and copies types, names, scopes and
// shardings. Graph only appends, so insertion is "copy in the new order".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace strata {

class GraphCopier {
public:
  /// Copies from `src` into `dst` (which may already hold inputs and nodes).
  GraphCopier(const Graph &src, Graph &dst)
      : src_(src), dst_(dst), map_(src.numValues(), kNoValue) {}

  const Graph &src() const { return src_; }
  Graph &dst() { return dst_; }

  /// The destination value of source value `v`, or kNoValue.
  ValueId mapped(ValueId v) const { return map_[v]; }
  void setMapped(ValueId v, ValueId to) { map_[v] = to; }

  /// Adds a destination input mirroring source value `v` (its name unless
  /// `name` is given, type, sharding, and its input attributes when `v` is a
  /// source input) and maps `v` to it.
  ValueId addInput(ValueId v, llvm::StringRef name = "");

  /// Appends a copy of source node `n` with the given operands (destination
  /// values), result names (empty: the source names) and attributes; result
  /// types and shardings are the source's. Maps nothing; returns the new
  /// node's index.
  int32_t copyNode(const Node &n, llvm::ArrayRef<ValueId> operands,
                   llvm::ArrayRef<std::string> names, const Attrs &attrs);

  /// Appends a copy of source node `n` with its operands mapped (each must
  /// be) and its results keeping their names, and maps the results.
  int32_t copyNode(int32_t n);

private:
  const Graph &src_;
  Graph &dst_;
  std::vector<ValueId> map_;
};

/// A new graph with `src`'s name, mesh and partitioned flag and no values.
Graph emptyLike(const Graph &src);

} // namespace strata
