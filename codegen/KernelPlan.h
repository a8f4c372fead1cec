//===- KernelPlan.h - How a fused body maps onto one elementwise loop -----===//
//
// A fused node's body (ir/Ops.def `fused`) is elementwise ops over one
// iteration space, the domain, optionally after a matmul anchor (body node
// 0) whose result they read, or around one row op (ir/Op.h rowOpOperands:
// softmax, a norm or their gradients). planKernel() checks that a body is
// of that form and describes the loop both renderers (Renderer.h) and both
// runtimes share:
//
//  - loads: the values the loop reads from memory, in kernel-argument order:
//    the anchor result first (if any), then the body inputs the elementwise
//    ops read, each with its element strides over the coalesced domain (0
//    along broadcast dims);
//  - stores: the body outputs, in result order, contiguous over the domain,
//    except column sums;
//  - sums: column-sum epilogues, `reduce_sum(v) {axes=[0..rank-2]}` of a
//    value v of the loop (a bias gradient): result [C] with C the domain's
//    last dim. No op of the body reads a sum. The loop then keeps C as its
//    own innermost dim, and each kernel call covers whole rows: the C++
//    kernel adds the column sums of its rows into out[k] (f64, zeroed by
//    the runtime), which combines the calls' partial sums in a fixed order;
//    the CUDA kernel walks the rows of one column per thread.
//  - dims: the domain with adjacent dims merged where every load agrees
//    ([12,64,512] + bias [512] -> [768,512], bias strides [0,1]).
//  - row kernels: the domain is the row op's result shape [..., C]; the
//    loop walks whole rows (C its own innermost dim, C <= kMaxFusedRow) in
//    two passes. The prologue pass computes the row op's ancestors, keeping
//    the values the row op or later nodes read in scratch rows; the row op
//    then reads its rows (scratch or loads; weight and bias are [C] loads)
//    into scratch row `rowResult`, adding the norm gradients' dw / db into
//    column sums; the epilogue pass computes every other member. Each kernel
//    call covers whole rows.
//
// The anchor's result lives in the buffer of result `anchorResult` (the
// anchor's own result if the body returns it, else the first result of its
// type): the runtime runs the matmul into it, then the loop, which reads
// each element before it writes the same element.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace strata::codegen {

struct KernelLoad {
  ValueId value;   ///< body value read
  int32_t operand; ///< body input index, or -1 for the anchor result
  llvm::SmallVector<int64_t, 4> strides; ///< per coalesced dim, elements
};

/// A column-sum epilogue: store `store` holds reduce_sum over all but the
/// last dim of body value `value`, or (byRowOp) is the row op's per-column
/// result `value` (a norm gradient's dw or db).
struct KernelSum {
  ValueId value;
  int32_t store;
  bool byRowOp = false;
};

struct KernelPlan {
  std::string name; ///< C symbol: the body's name (the `kernel` attribute)
  const Graph *body = nullptr;
  int32_t anchor = -1;       ///< body node index of the matmul, or -1
  int32_t anchorResult = -1; ///< result whose buffer holds the anchor value
  Shape domain;              ///< iteration space (the members' result shape)
  llvm::SmallVector<int64_t, 4> dims; ///< coalesced domain, >= 1 dim
  std::vector<KernelLoad> loads;
  std::vector<ValueId> stores; ///< body outputs, in result order
  std::vector<KernelSum> sums; ///< column sums among the stores
  bool usesRng = false;        ///< has dropout: needs (seed, step)
  // Row kernels only:
  int32_t row = -1; ///< body node index of the row op, or -1
  /// Per body node: computed in the prologue pass (an ancestor of the row op).
  std::vector<bool> inPrologue;
  /// Values held in scratch rows of C elements: the row op's result 0 and
  /// the prologue values that the row op or the epilogue pass read.
  std::vector<ValueId> scratch;
  /// CUDA elementwise plans of an f32 body only: the loads and stores held
  /// in memory as bf16 / f16 (16-bit storage, f32 math): each load widens,
  /// each store rounds to nearest even (cudaFloat16Helpers()). A body's own
  /// bf16 / f16 values are stored so without it.
  std::vector<std::pair<ValueId, DType>> storage16;

  bool isRowKernel() const { return row >= 0; }

  int64_t numElements() const { return strata::numElements(domain); }
  /// The store index's column sum, or nullptr for an elementwise store.
  const KernelSum *sumOf(size_t store) const {
    for (const KernelSum &s : sums)
      if (s.store == int32_t(store))
        return &s;
    return nullptr;
  }
  /// Elements of the innermost coalesced dim (the CPU loop's row length;
  /// a row kernel's C).
  int64_t inner() const { return dims.back(); }
  /// The type `v` is held in memory as: a storage16 entry's, else its own.
  DType storageOf(ValueId v) const {
    for (const auto &[value, dt] : storage16)
      if (value == v)
        return dt;
    return body->type(v).dtype;
  }
  /// Whether `v` lives in a scratch row.
  bool inScratch(ValueId v) const { return llvm::is_contained(scratch, v); }
  /// Whether the loop must be cut at row boundaries (row kernels and
  /// column sums).
  bool wholeRows() const { return isRowKernel() || !sums.empty(); }
};

/// Whether codegen has a rendering rule for `op` (elementwise members).
bool hasRenderRule(OpKind op);

/// The plan of `body`, or an error saying which node does not fit.
llvm::Expected<KernelPlan> planKernel(const Graph &body);

/// C type of an element type the renderers handle ("float", "int64_t");
/// nullptr for the others (bf16, f16, i1).
const char *cTypeName(DType t);

/// Whether `t` is a 16-bit float (bf16, f16): a storage format, whose
/// values kernels load as f32, compute on in f32 and round to nearest even
/// once, when they store them (runtime/kernels/Float16.h).
bool isFloat16(DType t);

/// The type a kernel computes values of type `t` in: f32 for bf16 / f16,
/// else `t` itself.
DType computeType(DType t);

/// CUDA C of the bf16 / f16 conversions (runtime/kernels/Float16.h's, bit
/// for bit, in integer and f32 arithmetic): strata_bf16_to_float,
/// strata_float_to_bf16, strata_half_to_float, strata_float_to_half on
/// 16-bit patterns (unsigned short). The generated kernels' prelude and the
/// CUDA backend's hand-written kernels both include it.
const char *cudaFloat16Helpers();

} // namespace strata::codegen
