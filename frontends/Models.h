//===- Models.h - Model spec -> logical forward graph ---------------------===//
//
// The frontends build exactly the models of docs/models.md: parameter names,
// [in, out] weight layout, init attributes on parameter inputs, data inputs
// `tokens` and `labels` (i32[B,S]) and the scalar mean cross-entropy loss as
// the only output. Graphs carry shapes only, so building one is cheap at any
// model size.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "ir/Graph.h"

namespace strata {

/// GPT-2: learned positions, LayerNorm, GELU(tanh) MLP, tied LM head.
Graph buildGPT(const ModelConfig &c);
/// Llama: RoPE, RMSNorm, SwiGLU MLP, grouped-query attention, untied head.
Graph buildLlama(const ModelConfig &c);
/// Falcon: parallel attention + GELU MLP from LayerNorm, MQA/GQA, RoPE.
Graph buildFalcon(const ModelConfig &c);
/// Builds the graph of `c.family`.
Graph buildModelGraph(const ModelConfig &c);

} // namespace strata
