//===- KernelLibrary.h - The generated kernels of a set of programs
//--------===//
//
// What a plan file carries so it runs without the compiler: for each target,
// one translation unit with the kernel of every `fused` node of the plan's
// programs (Renderer.h conventions), the entry that names each node's
// symbol, and the SHA-256 of the source (a reader refuses a library whose
// source does not hash to it). Symbols are `<program tag>_<kernel attr>`,
// unique over the plan; fused nodes whose code is the same share one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Renderer.h"
#include "ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace strata::codegen {

/// A program of the plan and the tag that prefixes its kernels' symbols
/// ("s0f": stage 0 forward).
struct TaggedProgram {
  std::string tag;
  const Graph *graph;
};

/// One fused node of one program and the symbol that runs it.
struct KernelEntry {
  std::string program; ///< the program's tag
  std::string kernel;  ///< the node's `kernel` attribute
  std::string symbol;
  std::string scope; ///< the node's scope
  /// CUDA libraries: how to launch the symbol (block size, grid, workspace;
  /// Renderer.h).
  CudaLaunch launch;
};

struct KernelLibrary {
  Target target;
  std::string source;
  std::vector<KernelEntry> entries; ///< program order, then node order
  std::string sha256;               ///< of `source`, lower-case hex
};

/// Renders every fused node of `programs` for `target`; an error names the
/// node codegen cannot plan.
llvm::Expected<KernelLibrary>
renderLibrary(llvm::ArrayRef<TaggedProgram> programs, Target target);

/// Lower-case hex SHA-256 of `text`.
std::string sha256Hex(llvm::StringRef text);

/// "cpp" / "cuda", and back.
llvm::StringRef targetName(Target t);
llvm::Expected<Target> parseTarget(llvm::StringRef name);

} // namespace strata::codegen
