//===- HfWeights.h - Hugging Face tensors <-> strata parameters -*- C++ -*-===//
//
// One table per family says where each strata parameter (docs/models.md)
// comes from in a transformers state dict, and how:
//   - GPT-2's Conv1D weights are [in, out] like strata's, so they are copied;
//     its fused c_attn [H, 3H] (and bias [3H]) is split into q, k, v.
//   - nn.Linear weights (Llama) are [out, in] and are transposed.
//   - The embedding gains Megatron's zero padding rows [V, H] -> [Vp, H];
//     an untied head [V, H] becomes lm_head.w [H, Vp] with zero columns.
//   - Falcon's query_key_value [(nh + 2 nkv) D, H] is split into q, k, v
//     by KV group ([nkv][nh/nkv + 2][D] rows) and transposed.
//   - Llama's q/k: transformers stores them permuted for rotate_half
//     (convert_llama_weights_to_hf.py), the form strata's rope uses, so they
//     are copied (transposed) without a permutation.
// Export applies the inverse and strips the padding; import(export(x)) is
// bitwise x.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "runtime/io/Safetensors.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace strata {

/// strata's parameters of `c` (in graph input order) from the tensors of
/// `model`. Errors name the file and tensor: a missing tensor, a shape that
/// does not match config.json, an unexpected tensor (a model variant strata
/// does not implement), a tied head whose lm_head.weight differs from the
/// embedding.
llvm::Expected<std::vector<NamedTensor>>
importHfWeights(const ModelConfig &c, const SafetensorsModel &model);

/// The transformers state dict of `c` from strata's parameters (f32), in
/// the order transformers lists them; the error names a missing or
/// mis-shaped parameter.
llvm::Expected<std::vector<NamedTensor>>
exportHfWeights(const ModelConfig &c,
                const llvm::StringMap<const HostTensor *> &params);

} // namespace strata
