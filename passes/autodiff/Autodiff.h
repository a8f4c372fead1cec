//===- Autodiff.h - Reverse-mode automatic differentiation
//-----------------===//
//
// The `autodiff` pass turns a logical forward graph (one scalar float output,
// the loss; parameter inputs carry the `param` attribute) into the microbatch
// graph: the forward nodes unchanged, then the backward nodes, with outputs
// [loss, grad.<p> for each param p in input order].
//
// Backward nodes:
//  - carry the attribute `bwd=true` (printed in IR text), so later passes
//    (pipeline F/B split, recompute) tell them from forward nodes;
//  - keep the scope of the forward node they differentiate;
//  - name adjoints `d.<value>` (partial contributions `d.<value>.<k>`, running
//    sums `d.<value>.acc<k>`), rule temporaries `<result>.bwd.<op>`, and
//    the final parameter gradients `grad.<param>`.
// Only values on a path from a parameter to the loss get adjoints; a param
// that does not reach the loss gets a zero gradient.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"

#include "llvm/ADT/StringRef.h"

#include <memory>

namespace strata {

/// The node attribute that marks a backward node.
inline constexpr llvm::StringLiteral kBackwardAttr = "bwd";

/// Whether `n` was created by the autodiff pass.
inline bool isBackward(const Node &n) { return n.attrs.getBool(kBackwardAttr); }

/// Appends the backward graph to `g` (see the file comment). Fails, leaving
/// `g` unchanged, if the graph's output is not one scalar float, a `grad.<p>`
/// name is taken, the graph is already differentiated, or an op without a
/// gradient (grad ops, collectives, ...) lies between a param and the loss.
llvm::Error differentiate(Graph &g);

/// The `autodiff` pass (no options).
std::unique_ptr<Pass> createAutodiffPass();

} // namespace strata
