//===- TensorArchive.h - Named tensors shared with references ---*- C++ -*-===//
//
// The exchange format of docs/models.md, shared with the PyTorch references
// (test/reference/tensor_archive.py): a directory holding
//   index.json  {"tensors": [{"name", "dtype": "f32"|"f64"|"i32", "shape",
//                             "offset"}, ...]}
//   data.bin    raw little-endian row-major data at those byte offsets.
// The writer places each tensor at the next 64-byte boundary, as the Python
// writer does, so both produce identical files for the same tensors.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/HostTensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace strata {

/// A tensor with its name, as archives and checkpoints store them.
struct NamedTensor {
  std::string name;
  HostTensor tensor;
};

/// An ordered collection of uniquely named tensors.
class TensorArchive {
public:
  /// Reads the archive directory `dir`, validating the index against data.bin.
  static llvm::Expected<TensorArchive> read(llvm::StringRef dir);
  /// Writes the archive into `dir` (created if needed). Fails on a dtype
  /// other than f32, f64 and i32.
  llvm::Error write(llvm::StringRef dir) const;

  /// Appends a tensor; fails if the name is taken.
  llvm::Error add(std::string name, HostTensor tensor);
  /// The tensor called `name`, or null.
  const HostTensor *lookup(llvm::StringRef name) const;
  /// The tensor called `name`; the error names the archive and the tensor.
  llvm::Expected<const HostTensor &> get(llvm::StringRef name) const;

  llvm::ArrayRef<NamedTensor> tensors() const { return tensors_; }
  size_t size() const { return tensors_.size(); }
  /// Where the archive was read from (empty if built in memory).
  const std::string &path() const { return path_; }

private:
  std::string path_;
  std::vector<NamedTensor> tensors_;
  llvm::StringMap<size_t> byName_; // name -> index in tensors_
};

} // namespace strata
