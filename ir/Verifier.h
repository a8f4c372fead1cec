//===- Verifier.h - Graph invariants ---------------------------------------===//
//
// Checks SSA order (every operand defined before use), unique names, operand
// and result counts, result types against shape inference, sharding ranks and
// mesh axes, and outputs. Messages name the node (%result = op) and its scope.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/Support/Error.h"

namespace strata {

llvm::Error verifyGraph(const Graph &g);

} // namespace strata
