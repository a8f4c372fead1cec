//===- ModelStats.h - Parameter counts and FLOPs of a model ---------------===//
//
// Parameter counts come from the graph's parameter inputs, grouped by name
// (docs/models.md): `wte`/`wpe` are the embedding, `layers.<i>.*` layer i
// (attention, MLP, norms), `ln_f.*` the final norm, `lm_head.*` the untied
// head. FLOPs follow Megatron-LM (Narayanan et al. 2021, eq. 3).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "ir/Graph.h"

#include <cstdint>
#include <vector>

namespace strata {

/// Parameters of one transformer block, by part.
struct LayerParams {
  int64_t attention = 0; // attn.*
  int64_t mlp = 0;       // mlp.*
  int64_t norms = 0;     // ln1.*, ln2.*
  int64_t total() const { return attention + mlp + norms; }
};

struct ParamStats {
  int64_t embedding = 0; // wte, wpe
  std::vector<LayerParams> layers;
  int64_t finalNorm = 0; // ln_f.*
  int64_t head = 0;      // lm_head.* (0 when tied to wte)
  int64_t other = 0;     // params matching none of the above
  int64_t total = 0;
};

/// Counts the elements of `g`'s parameter inputs, grouped as above.
ParamStats countParams(const Graph &g);

/// FLOPs of one training step over `batch` sequences, by Megatron-LM's
/// formula 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) with V the padded vocab.
/// It counts the forward pass, the backward pass (2x forward) and the extra
/// forward of full activation recomputation, for GPT's MLP (F = 4h) and plain
/// multi-head attention; for other shapes it is the customary estimate.
double megatronFlopsPerStep(const ModelConfig &c, int64_t batch);
/// The same per token: megatronFlopsPerStep / (batch · s).
double megatronFlopsPerToken(const ModelConfig &c);

} // namespace strata
