//===- ModelWeights.h - A checkpoint's parameters as per-layer views ------===//
//
// The decoder reads the parameters of docs/models.md by role instead of by
// name. Binding checks every parameter the model graph of the config wants
// is present with its exact type (f32, shape) and finite, so a truncated,
// mismatched or diverged checkpoint is refused before any token is made.
// The views point into the caller's tensors, which must outlive them; the
// one copy made is the transposed tied LM head ([H, Vp]), so every GEMM of
// decoding reads its weight untransposed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "runtime/HostTensor.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace strata::generate {

/// One block's parameters; pointers are null where the family has none
/// (GPT: biases and LayerNorm; Llama: SwiGLU gate/up/down, no biases).
struct LayerWeights {
  const float *ln1W = nullptr, *ln1B = nullptr;
  const float *qW = nullptr, *qB = nullptr, *kW = nullptr, *kB = nullptr;
  const float *vW = nullptr, *vB = nullptr, *oW = nullptr, *oB = nullptr;
  const float *ln2W = nullptr, *ln2B = nullptr;
  const float *fc1W = nullptr, *fc1B = nullptr, *fc2W = nullptr,
              *fc2B = nullptr;
  const float *gateW = nullptr, *upW = nullptr, *downW = nullptr;
};

/// The whole model, ready for CachedDecoder.
struct ModelWeights {
  ModelConfig config;
  const float *wte = nullptr; ///< [Vp, H]
  const float *wpe = nullptr; ///< [S, H] (GPT only)
  const float *lnFW = nullptr, *lnFB = nullptr;
  const float *head = nullptr; ///< [H, Vp]: lm_head.w or wte^T (headT_)
  std::vector<LayerWeights> layers;

  ModelWeights() = default;
  ModelWeights(ModelWeights &&) = default;
  ModelWeights &operator=(ModelWeights &&) = default;
  ModelWeights(const ModelWeights &) = delete; // `head` may point at headT_

  /// Binds `params` (parameter name -> tensor) to `config`'s model. Errors
  /// name the parameter: missing, wrong dtype or shape, non-finite element.
  static llvm::Expected<ModelWeights>
  bind(const ModelConfig &config,
       const llvm::StringMap<const HostTensor *> &params);

private:
  std::vector<float> headT_; ///< wte^T when the head is tied.
};

/// Checks every element of `t` is finite; the error names `name` and the
/// first bad element.
llvm::Error checkFinite(llvm::StringRef name, const HostTensor &t);

} // namespace strata::generate
