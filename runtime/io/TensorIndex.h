//===- TensorIndex.h - Tensor entries of archives, checkpoints --*- C++ -*-===//
//
// Tensor archives and checkpoints both describe their tensors with JSON
// entries {"name", "dtype", "shape", "offset"} pointing into a data blob.
// This parses one entry and checks it against the blob, so both readers
// reject a bad index the same way instead of reading out of bounds.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Types.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace strata {

/// Where one tensor's bytes lie.
struct TensorEntry {
  std::string name;
  TensorType type;
  /// Byte offset of the first element in the data blob.
  uint64_t offset = 0;
};

/// Reads entry `v`; fails (saying which field is wrong, and the entry's name
/// when known) on a missing or mistyped field, a dtype that `allowed`
/// rejects, a negative dim, or bytes past `dataBytes`.
llvm::Expected<TensorEntry>
parseTensorEntry(const llvm::json::Value &v, uint64_t dataBytes,
                 llvm::function_ref<bool(DType)> allowed);

/// 64-byte alignment of tensor data in archives and checkpoints.
constexpr uint64_t kTensorAlign = 64;
inline uint64_t alignTensorOffset(uint64_t offset) {
  return (offset + kTensorAlign - 1) / kTensorAlign * kTensorAlign;
}

} // namespace strata
