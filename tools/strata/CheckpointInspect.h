//===- CheckpointInspect.h - `strata inspect CHECKPOINT` ------------------===//
//
// A training checkpoint given to `strata inspect` is summarized as one: its
// step, the model it holds, its tokenizer and data, its tensors, and the
// verbs that use it (generate to sample, train --resume to continue).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace strata {

/// Loads the checkpoint at `path` (checking it) and prints its summary.
llvm::Error printCheckpointSummary(llvm::raw_ostream &os, llvm::StringRef path);

} // namespace strata
