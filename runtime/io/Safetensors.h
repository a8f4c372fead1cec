//===- Safetensors.h - Hugging Face safetensors files -----------*- C++ -*-===//
//
// The safetensors format (huggingface/safetensors, "Format"):
//
//   u64 little-endian N | N bytes of JSON header | data buffer
//
// The header maps each tensor name to {"dtype": "F32"|"BF16"|"F16"|...,
// "shape": [..], "data_offsets": [begin, end]} (byte offsets into the data
// buffer) and may hold "__metadata__", a string -> string map. A file is
// valid when the tensors tile the data buffer exactly: sorted by offset they
// start at 0, each begins where the previous one ended, the last ends at the
// end of the file, and each spans dtype size x elements bytes. strata checks
// all of that and rejects a header over 100 MB (the reference reader's
// limit), so a lying header is an error, never an out-of-bounds read.
//
// Files are memory-mapped (llvm::MemoryBuffer); tensors are converted to f32,
// the training precision, on read. A model is one `model.safetensors` or
// shards listed by `model.safetensors.index.json` ({"weight_map": {tensor:
// file}}), as transformers' save_pretrained writes them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/io/TensorArchive.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace strata {

/// One tensor of a safetensors header.
struct SafetensorsEntry {
  std::string name;
  /// As written in the file: "F32", "BF16", "F16", "I64", ...
  std::string dtype;
  Shape shape;
  /// Byte range in the data buffer (after the header).
  uint64_t begin = 0, end = 0;
};

/// A validated, memory-mapped safetensors file.
class SafetensorsFile {
public:
  /// Maps and validates `path`. Errors read `<path>: <what>` and name the
  /// tensor and field at fault.
  static llvm::Expected<std::unique_ptr<SafetensorsFile>>
  open(llvm::StringRef path);

  /// Entries sorted by offset.
  llvm::ArrayRef<SafetensorsEntry> entries() const { return entries_; }
  /// The entry called `name`, or null.
  const SafetensorsEntry *lookup(llvm::StringRef name) const;
  /// The "__metadata__" map.
  const std::map<std::string, std::string> &metadata() const { return meta_; }
  const std::string &path() const { return path_; }

  /// Tensor `name` converted to f32 (from F32, BF16 or F16; other dtypes are
  /// an error naming the tensor and dtype).
  llvm::Expected<HostTensor> readF32(llvm::StringRef name) const;

private:
  std::string path_;
  std::unique_ptr<llvm::MemoryBuffer> buf_;
  const char *data_ = nullptr; // start of the data buffer
  std::vector<SafetensorsEntry> entries_;
  llvm::StringMap<size_t> byName_;
  std::map<std::string, std::string> meta_;
};

/// The weights of a Hugging Face model directory: `model.safetensors`, or the
/// shards named by `model.safetensors.index.json`.
class SafetensorsModel {
public:
  /// Opens `dir`. Errors: neither file present, an index that is not JSON or
  /// lacks "weight_map", a missing or invalid shard, a tensor the index
  /// places in a shard that lacks it, a tensor in a shard the index does not
  /// list, a name in two shards.
  static llvm::Expected<SafetensorsModel> open(llvm::StringRef dir);

  /// Every tensor name, sorted.
  std::vector<std::string> names() const;
  bool contains(llvm::StringRef name) const { return where_.count(name); }
  /// The entry and file of `name`, or null.
  const SafetensorsEntry *lookup(llvm::StringRef name,
                                 const SafetensorsFile **file = nullptr) const;
  /// Tensor `name` as f32; the error names the file.
  llvm::Expected<HostTensor> readF32(llvm::StringRef name) const;
  /// The file `name` is in (for error messages), or the directory.
  std::string fileOf(llvm::StringRef name) const;

private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  llvm::StringMap<size_t> where_; // tensor -> index in files_
};

/// Writes `tensors` (f32) to `path` atomically as a safetensors file with
/// "__metadata__" `metadata`, tensors in the given order, header padded
/// with spaces to a multiple of 8 bytes as the reference writer does.
llvm::Error
writeSafetensors(llvm::StringRef path, llvm::ArrayRef<NamedTensor> tensors,
                 const std::map<std::string, std::string> &metadata);

/// Writes `tensors` into directory `dir` as transformers does: one
/// `model.safetensors` if they fit in `maxShardBytes`, else
/// `model-0000i-of-0000n.safetensors` shards (in order, each up to the limit
/// unless one tensor alone is larger) and `model.safetensors.index.json`.
llvm::Error writeSafetensorsModel(llvm::StringRef dir,
                                  llvm::ArrayRef<NamedTensor> tensors,
                                  uint64_t maxShardBytes);

/// IEEE half -> float, exactly (subnormals, infinities and NaNs included).
float halfToFloat(uint16_t h);
/// bfloat16 -> float, exactly.
float bfloat16ToFloat(uint16_t h);

} // namespace strata
