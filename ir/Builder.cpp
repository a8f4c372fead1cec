//===- Builder.cpp - Appends typed nodes to a graph -----------------------===//
#include "ir/Builder.h"

#include "llvm/Support/ErrorHandling.h"

namespace strata {

llvm::SmallVector<ValueId, 1>
Builder::create(OpKind op, llvm::ArrayRef<ValueId> operands, Attrs attrs,
                llvm::ArrayRef<std::string> names) {
  llvm::SmallVector<TensorType, 4> types;
  for (ValueId v : operands)
    types.push_back(g_.type(v));
  auto results =
      inferResultTypes(op, types, attrs, g_.mesh ? &*g_.mesh : nullptr);
  if (!results)
    llvm::report_fatal_error(llvm::Twine("building ") + opName(op) + " in '" +
                             scope_ + "': " + toString(results.takeError()));
  int32_t n =
      g_.addNode(op, operands, *results, std::move(attrs), scope_, names);
  return g_.node(n).results;
}

ValueId Builder::create1(OpKind op, llvm::ArrayRef<ValueId> operands,
                         Attrs attrs, llvm::StringRef name) {
  std::string nm = name.str();
  auto rs = create(op, operands, std::move(attrs),
                   name.empty() ? llvm::ArrayRef<std::string>()
                                : llvm::ArrayRef<std::string>(nm));
  return rs.front();
}

ValueId Builder::matmul(ValueId a, ValueId b, bool transA, bool transB) {
  Attrs attrs;
  if (transA)
    attrs.set("transpose_a", true);
  if (transB)
    attrs.set("transpose_b", true);
  return create1(OpKind::MatMul, {a, b}, std::move(attrs));
}

ValueId Builder::reshape(ValueId x, llvm::ArrayRef<int64_t> shape) {
  return create1(OpKind::Reshape, {x},
                 {{"shape", IntList(shape.begin(), shape.end())}});
}

ValueId Builder::scale(ValueId x, double s) {
  return create1(OpKind::Scale, {x}, {{"value", s}});
}

ValueId Builder::reduceSum(ValueId x, llvm::ArrayRef<int64_t> axes,
                           bool keepdim) {
  Attrs attrs{{"axes", IntList(axes.begin(), axes.end())}};
  if (keepdim)
    attrs.set("keepdim", true);
  return create1(OpKind::ReduceSum, {x}, std::move(attrs));
}

ValueId Builder::fill(double value, const TensorType &type) {
  return create1(OpKind::Fill, {},
                 {{"value", value},
                  {"shape", IntList(type.shape.begin(), type.shape.end())},
                  {"dtype", dtypeName(type.dtype).str()}});
}

} // namespace strata
