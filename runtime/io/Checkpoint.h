//===- Checkpoint.h - Single-file training checkpoints ----------*- C++ -*-===//
//
// A checkpoint is one file:
//
//   offset  0  magic "STRATACK"
//           8  u32 format version
//          12  u32 CRC-32 of the JSON header
//          16  u64 JSON header length L
//          24  JSON header (L bytes), zero padding to a multiple of 64
//          D   tensor data: each tensor 64-byte aligned, little-endian
//
// The header is {"meta": {...}, "data_bytes": N, "tensors": [{"name",
// "dtype", "shape", "offset" (from D), "crc32"}, ...]}. `meta` is free-form
// JSON for the training loop; by convention it holds "step", "seed",
// "sampler" (SamplerState::toJSON), "model" (the spec text), "tokenizer"
// (Tokenizer::toJSON) and "config".
//
// Saving is atomic (see AtomicFile.h); loading checks the magic, version,
// header CRC and JSON, that the data is all there, and every tensor's CRC.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/io/TensorArchive.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <vector>

namespace strata {

/// The newest checkpoint format this build writes and reads.
constexpr uint32_t kCheckpointVersion = 1;

struct Checkpoint {
  llvm::json::Object meta;
  /// Tensors in save order; names are unique.
  std::vector<NamedTensor> tensors;

  /// The tensor called `name`, or null.
  const HostTensor *lookup(llvm::StringRef name) const;
};

/// Writes `ckpt` to `path` atomically: on failure `path` is left as it was.
/// Fails on duplicate tensor names.
llvm::Error saveCheckpoint(llvm::StringRef path, const Checkpoint &ckpt);

/// Reads and validates the checkpoint at `path`. Errors name the file and
/// the problem: missing file, not a checkpoint, newer format version,
/// truncated data, corrupt header or tensor (CRC mismatch, naming the
/// tensor), malformed header JSON.
llvm::Expected<Checkpoint> loadCheckpoint(llvm::StringRef path);

} // namespace strata
