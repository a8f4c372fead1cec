//===- OptimizerGraph.h - Builds the AdamW optimizer-step graph
//------------===//
//
// The optimizer step as its own graph, so that the pipeline and SPMD passes
// place and shard it like any other program:
//
//   inputs   every param p of the microbatch graph (same name, type, attrs and
//            sharding), then grad.<p> (accumulated grads), adam_m.<p>,
//            adam_v.<p> (each group in param order), then lr: f32[] and
//            step: f32[] (t = 1, 2, ...)
//   body     grad_norm = sqrt(sum_p reduce_sum(square(grad.<p>)));
//            with clipping (torch.nn.utils.clip_grad_norm_):
//              clip_coef = grad_clip / (grad_norm + 1e-6),
//              clip_coef_clamped = minimum(clip_coef, 1.0),
//              every grad *= clip_coef_clamped;
//            then one adamw_update per param, weight_decay for params of
//            rank >= 2 and 0 otherwise (docs/models.md)
//   outputs  new.<p>..., new.adam_m.<p>..., new.adam_v.<p>..., grad_norm
//
// Nodes of param p have scope `optimizer.<p>`; the norm and the clip
// coefficient have scopes `optimizer.grad_norm` and `optimizer.clip`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

namespace strata {

/// AdamW hyper-parameters (torch.optim.AdamW defaults) and clipping.
struct OptimizerConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// Applied to params of rank >= 2 only.
  double weight_decay = 0.01;
  /// Max global grad norm; 0 turns clipping off (grad_norm is still computed).
  double grad_clip = 0.0;
};

/// The optimizer-step graph for the params of `microbatchGraph` (see above).
Graph buildOptimizerGraph(const Graph &microbatchGraph,
                          const OptimizerConfig &cfg);

} // namespace strata
