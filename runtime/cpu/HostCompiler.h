//===- HostCompiler.h - Kernel sources to shared libraries, cached --------===//
//
// Generated kernels run on the host as shared libraries built by the host
// compiler:
//   $STRATA_CXX (default c++) -x c++ -std=c++20 -fPIC -shared <flags>
// cached by content hash (source, flags, compiler identity, CPU model)
// under $XDG_CACHE_HOME/strata or ~/.cache/strata, so a source compiles
// once per machine. Used by the CPU device's fused kernels and by the CUDA
// backend's interpret mode.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace strata {

/// The path of the shared library built from `source` with `flags`, named
/// `<prefix>-<hash>.so` in the cache: found there, or compiled (under a
/// temporary name and renamed, so concurrent processes never load a
/// half-written file; one build at a time per process). A failed build
/// keeps its source beside and quotes the compiler's message.
llvm::Expected<std::string>
buildSharedLibrary(const std::string &source,
                   llvm::ArrayRef<llvm::StringLiteral> flags,
                   llvm::StringRef prefix);

/// The directory of compiled kernel libraries (see above); not created.
std::string kernelCacheDir();

} // namespace strata
