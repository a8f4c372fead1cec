//===- HfRopeScaling.h - config.json "rope_scaling" <-> the spec's -*- C++
//-*-===//
//
// transformers' `rope_scaling` is null or an object naming its type in
// "rope_type" (or the older "type"). strata implements Llama-3.1's "llama3"
// (factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings; docs/models.md "Llama"); any other type
// (linear, dynamic, yarn, longrope, ...) or key is an error naming it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace strata {

/// Reads config.json's `rope_scaling` value `v` (null or absent: none) into
/// `spec.rope_scaling`. Errors read `<path>: field "rope_scaling": ...`.
llvm::Error readHfRopeScaling(const llvm::json::Value *v, llvm::StringRef path,
                              pb::ModelSpec &spec);

/// config.json's `rope_scaling` for `c`: null, or the "llama3" object.
llvm::json::Value makeHfRopeScaling(const ModelConfig &c);

} // namespace strata
