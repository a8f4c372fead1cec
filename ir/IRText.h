//===- IRText.h - IR text printer and parser
//-------------------------------===//
//
// The text form is the source of truth: parse(print(g)) prints to the same
// text. Grammar (one graph per file, `#` starts the scope comment of a node):
//
//   graph @name mesh<dp=2,tp=2>(%x: f32[8,64,128] {param, shard=[dp,_,_]}, ...)
//   { (after the spmd pass: `graph @name mesh<dp=2,tp=2> partitioned(...)`,
//   types local)
//     %h = matmul(%x, %w1) {transpose_b=true} : f32[8,64,512] {shard=[_,_,tp]}
//     # layers.0.mlp.fc1 %dx, %dw = rms_norm_grad(%dy, %x, %w) {eps=1e-05} :
//     f32[..], f32[..]  # layers.0.ln1 send(%h) {peer=1} %t, %g = fused(%h, %b)
//     {kernel="fused0"} : f32[..], f32[..] {  # layers.0.mlp
//       %t = add(%h, %b) : f32[..]  # layers.0.mlp.fc1
//       %g = gelu(%t) {approx="tanh"} : f32[..]  # layers.0.mlp.act
//       return %t, %g
//     }
//     return %h, %dw
//   }
//
// A fused node's body is a graph of its own (Node::body) printed in braces:
// its inputs are named after the operands, its names are its own, and its
// `return` gives the node's results.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace strata {

void printGraph(llvm::raw_ostream &os, const Graph &g);
std::string graphToString(const Graph &g);

/// Parses IR text. Errors read `file:line:col: error: expected ... (...)`,
/// with `file` = `bufferName`. Result types written in the text are checked
/// against shape inference.
llvm::Expected<Graph> parseGraph(llvm::StringRef text,
                                 llvm::StringRef bufferName = "<input>");
/// Reads and parses a file; a missing file is an error naming it.
llvm::Expected<Graph> parseGraphFile(llvm::StringRef path);

} // namespace strata
