//===- Op.h - The op kinds of the one op table ---------------------------===//
#pragma once

#include "ir/Attributes.h"
#include "ir/Sharding.h"
#include "ir/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace strata {

enum class OpKind : uint16_t {
#define OP(Enum, Name, NumOperands, NumResults) Enum,
#include "ir/Ops.def"
};

/// Number of ops in Ops.def; per-op tables static_assert against it.
inline constexpr int kNumOps = 0
#define OP(Enum, Name, NumOperands, NumResults) +1
#include "ir/Ops.def"
    ;

llvm::StringRef opName(OpKind k);
std::optional<OpKind> parseOpName(llvm::StringRef name);
/// -1 means variadic.
int opNumOperands(OpKind k);
int opNumResults(OpKind k);

bool isElementwiseUnary(OpKind k);
bool isElementwiseBinary(OpKind k);
bool isCollective(OpKind k);
/// The rank-dependent ops only the spmd pass makes (shard_slice, pick_label,
/// one_hot); they have no gradient and exist in partitioned graphs only.
bool isPartitionOp(OpKind k);
/// The row ops reduce over the last dim (softmax, layer_norm, rms_norm and
/// their gradients): how many leading operands are rows of the result's
/// shape; the others are per-column vectors [C] (weight, bias). Result 0 is
/// rows; the norm gradients' other results (dw, db) are per-column sums.
/// 0 for every other op.
int rowOpOperands(OpKind k);
/// The longest row (last dim) of a row op in a fused body: its kernel keeps
/// rows in scratch arrays (codegen/KernelPlan.h).
constexpr int64_t kMaxFusedRow = 4096;

/// Infers result types from operand types and attributes, checking every
/// constraint of the op. The error message says what is wrong and why.
/// Collectives that change shapes (all_gather, reduce_scatter, all_to_all)
/// need the mesh for their group sizes.
llvm::Expected<llvm::SmallVector<TensorType, 1>>
inferResultTypes(OpKind k, llvm::ArrayRef<TensorType> operands,
                 const Attrs &attrs, const Mesh *mesh = nullptr);

/// Numpy-style broadcast of two shapes, or nullopt if incompatible.
std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                     llvm::ArrayRef<int64_t> b);

} // namespace strata
