//===- AtomicDir.h - All-or-nothing output directories ----------*- C++ -*-===//
//
// `strata import-hf` and `export-hf` write several files into one output
// directory. They are written into a staging directory `<dir>.tmp.<pid>`
// next to it, which is renamed to `<dir>` once every file is complete; on
// any error the staging directory is removed. `<dir>` must not exist or be
// empty, so an existing model is never mixed with a new one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace strata {

/// Runs `write(stagingDir)` and moves the staging directory to `dir`.
/// Errors read `<dir>: <what>` (or are `write`'s own); `dir` is untouched then.
llvm::Error writeDirectoryAtomically(
    llvm::StringRef dir,
    llvm::function_ref<llvm::Error(llvm::StringRef)> write);

} // namespace strata
