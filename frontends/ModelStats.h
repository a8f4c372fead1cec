//===- ModelStats.h - Parameter counts and FLOPs of a model ---------------===//
//
// Parameter counts come from the graph's parameter inputs, grouped by name
// (docs/models.md): `wte`/`wpe` are the embedding, `layers.<i>.*` layer i
// (attention, MLP, norms), `ln_f.*` the final norm, `lm_head.*` the untied
// head. FLOPs count every matmul of a training step (forward, and backward
// at twice the forward) from the model's shapes: for GPT's MLP (F = 4h) and
// plain multi-head attention the model FLOPs are Korthikanti et al. 2022's
// 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) — what MFU is defined on — and
// with full recomputation Megatron-LM's 96·B·s·l·h²·(1 + s/(6h) +
// V/(16·l·h)) (Narayanan et al. 2021, eq. 3). GQA, SwiGLU (three MLP
// matrices) and other FFN widths are counted as they are; softmax, norms
// and elementwise work are not counted, as in those papers.
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

/// Model FLOPs of one training step over `batch` sequences: forward and
/// backward, no recomputation (see the file comment).
double modelFlopsPerStep(const ModelConfig &c, int64_t batch);
/// What recomputation adds to a step over `batch` sequences: `full`, the
/// forward of every block again; otherwise (selective), the attention
/// scores and their product with the values.
double recomputeFlopsPerStep(const ModelConfig &c, int64_t batch, bool full);

} // namespace strata
