//===- Dot.h - Graphviz rendering of a graph ------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/Support/raw_ostream.h"

namespace strata {

/// Writes `g` as a Graphviz digraph: one box per node labeled with its op and
/// result shape, one ellipse per graph input labeled with its name and type,
/// edges along operands, and one cluster per layer (`layers.<i>` scopes and
/// parameters).
void printGraphDot(llvm::raw_ostream &os, const Graph &g);

} // namespace strata
