//===- GradReduceDtype.cpp - The dtype of the data-parallel gradient reduction
#include "runtime/parallel/GradReduceDtype.h"

namespace strata {

std::vector<ReductionLaunch>
addDpReduction(Graph &g, OpKind op, const Attrs &attrs, const TensorType &type,
               const TensorType &result, DType dtype, llvm::StringRef input,
               llvm::StringRef scope, llvm::StringRef resultName,
               const void *in, void *out, void *staging) {
  ValueId x = g.addInput(input.str(), type);
  if (dtype == DType::F32) {
    int32_t n = g.addNode(op, {x}, {result}, attrs, scope, {resultName.str()});
    return {{n, in, out}};
  }
  std::string half = dtypeName(dtype).str();
  TensorType narrow{dtype, type.shape}, narrowResult{dtype, result.shape};
  int32_t down = g.addNode(OpKind::Cast, {x}, {narrow}, {{"dtype", half}},
                           scope, {input.str() + "." + half});
  int32_t reduce = g.addNode(op, {g.node(down).results[0]}, {narrowResult},
                             attrs, scope, {resultName.str() + "." + half});
  int32_t up = g.addNode(OpKind::Cast, {g.node(reduce).results[0]}, {result},
                         {{"dtype", std::string("f32")}}, scope,
                         {resultName.str()});
  // A reduce_scatter's shard lands where an in-place one writes it: at the
  // same element offset in the staging buffer as `out` in the fp32 buffer.
  char *stage = static_cast<char *>(staging);
  char *shard = stage + (static_cast<char *>(out) -
                         static_cast<const char *>(in)) /
                            int64_t(dtypeBytes(DType::F32) / dtypeBytes(dtype));
  return {{down, in, stage}, {reduce, stage, shard}, {up, shard, out}};
}

} // namespace strata
