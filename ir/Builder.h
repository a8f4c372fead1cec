//===- Builder.h - Appends typed nodes to a graph -------------------------===//
//
// The builder infers result types through the op table. A shape error while
// building is a bug in the caller (frontends validate their configs first), so
// it aborts with the op, scope and reason.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

namespace strata {

class Builder {
public:
  explicit Builder(Graph &g) : g_(g) {}

  Graph &graph() { return g_; }
  void setScope(llvm::StringRef scope) { scope_ = scope.str(); }
  const std::string &scope() const { return scope_; }

  /// Appends `op` and returns all of its results.
  llvm::SmallVector<ValueId, 1> create(OpKind op,
                                       llvm::ArrayRef<ValueId> operands,
                                       Attrs attrs = {},
                                       llvm::ArrayRef<std::string> names = {});
  /// Appends a single-result op.
  ValueId create1(OpKind op, llvm::ArrayRef<ValueId> operands, Attrs attrs = {},
                  llvm::StringRef name = "");

  // Shorthands for common ops.
  ValueId add(ValueId a, ValueId b) { return create1(OpKind::Add, {a, b}); }
  ValueId sub(ValueId a, ValueId b) { return create1(OpKind::Sub, {a, b}); }
  ValueId mul(ValueId a, ValueId b) { return create1(OpKind::Mul, {a, b}); }
  ValueId matmul(ValueId a, ValueId b, bool transA = false,
                 bool transB = false);
  ValueId reshape(ValueId x, llvm::ArrayRef<int64_t> shape);
  ValueId scale(ValueId x, double s);
  ValueId reduceSum(ValueId x, llvm::ArrayRef<int64_t> axes,
                    bool keepdim = false);
  ValueId fill(double value, const TensorType &type);

private:
  Graph &g_;
  std::string scope_;
};

} // namespace strata
