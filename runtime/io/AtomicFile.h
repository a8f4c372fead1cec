//===- AtomicFile.h - All-or-nothing file replacement -----------*- C++ -*-===//
//
// Checkpoints and token caches are replaced atomically: the new contents go
// to `<path>.tmp.<pid>`, are flushed to disk, and the temporary is renamed
// over `<path>`. A reader sees the old file or the new one, never a mix, and
// a failed or interrupted write leaves the old file as it was. A process
// killed mid-write leaves its temporary behind; the next write of the same
// path removes the temporaries of processes that no longer exist.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace strata {

/// The temporary `path` is written through before the rename.
std::string atomicTempPath(llvm::StringRef path);

/// Removes `<path>.tmp.<pid>` files whose process no longer exists; returns
/// how many it removed.
int removeStaleTemps(llvm::StringRef path);

/// Replaces `path` with what `write` emits (after removeStaleTemps). A
/// missing directory, or a directory at `path`, is refused first
/// (`<path>: error: cannot write: ...`). If `write` fails, or writing,
/// syncing or renaming fails, the temporary file is removed, `path` is left
/// untouched and the error (naming the file) is returned. One writer per
/// path at a time: concurrent writers in one process share the temporary.
llvm::Error
writeFileAtomically(llvm::StringRef path,
                    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write);

} // namespace strata
