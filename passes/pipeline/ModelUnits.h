//===- ModelUnits.h - Which part of the model a node belongs to
//------------===//
//
// The pipeline, recompute and memory passes reason about a transformer as a
// sequence of units read from node scopes (kept by every pass, docs/models.md
// names): `embed` (the pre-processing: token and position embedding), the
// blocks `layers.<i>`, and the post-processing `ln_f`, `lm_head` and `loss`.
// Backward nodes keep the scope of the forward node they differentiate, and
// the collectives spmd inserts take their consumer's scope, so the unit of
// every node of a microbatch graph is known.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace strata {

/// A part of the model: the embedding, block `layer`, or the head and loss.
struct ModelUnit {
  enum Kind : uint8_t { Pre, Layer, Post, Unknown };
  Kind kind = Unknown;
  int64_t layer = -1; // for Layer
  bool operator==(const ModelUnit &o) const {
    return kind == o.kind && layer == o.layer;
  }
  /// "embed", "layers.3", "head" or "unknown".
  std::string str() const;
};

/// The unit of a scope: `embed[.*]` -> Pre, `layers.<i>[.*]` -> Layer i,
/// `ln_f[.*]`, `lm_head[.*]`, `loss[.*]` -> Post, anything else -> Unknown.
ModelUnit unitOfScope(llvm::StringRef scope);

/// Number of blocks: 1 + the largest layer index of any node scope (0 if none).
int64_t countLayers(const Graph &g);

} // namespace strata
