//===- ModelSpec.h - Loading, checking and resolving model specs ----------===//
//
// A model spec is a text protobuf (proto/model_spec.proto). Loading it reports
// syntax errors, unknown fields and bad values, then checks the semantic
// constraints (sizes positive, heads dividing hidden, ...). Every error reads
// `file:line:col: error: <what> (<why>; <fix>)`, pointing at the field.
// Resolving applies the family defaults and yields the sizes the frontends
// build from.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "proto/model_spec.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace strata {

/// Llama-3.1 RoPE frequency scaling (spec field `rope_scaling`, transformers'
/// rope_type "llama3"); factor 0 means none.
struct RopeScaling {
  double factor = 0;
  double lowFreqFactor = 0;
  double highFreqFactor = 0;
  int64_t originalMaxPositions = 0;
};

/// A checked spec with every default resolved.
struct ModelConfig {
  pb::ModelSpec::Family family = pb::ModelSpec::GPT;
  std::string name;
  int64_t vocab = 0;       // real vocabulary
  int64_t paddedVocab = 0; // Megatron-padded: rows of wte, columns of the head
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kvHeads = 0;
  int64_t headDim = 0;
  int64_t ffn = 0;
  int64_t seq = 0;
  int64_t microBatch = 0;
  double dropout = 0;
  double normEps = 0;
  double ropeTheta = 0;
  RopeScaling ropeScaling;
  double initStd = 0;
  bool tieEmbeddings = false;
  int64_t slidingWindow = 0; // Mistral: keys visible to each query; 0 all
  int64_t normsPerBlock = 1; // Falcon: 1 shared LayerNorm, or ln_attn + ln_mlp

  bool isGPT() const { return family == pb::ModelSpec::GPT; }
  bool isFalcon() const { return family == pb::ModelSpec::FALCON; }
  /// "gpt", "llama" or "falcon".
  llvm::StringRef familyName() const;
};

/// Parses and checks spec text; `bufferName` prefixes error locations.
/// All errors found are returned, one per line.
llvm::Expected<pb::ModelSpec> parseModelSpec(llvm::StringRef text,
                                             llvm::StringRef bufferName);

/// Reads, parses and checks a spec file.
llvm::Expected<pb::ModelSpec> loadModelSpec(llvm::StringRef path);

/// Checks the semantic constraints of a spec that has no text (e.g. the one
/// stored in a plan); errors read `<name>: error: ...`.
llvm::Error checkModelSpec(const pb::ModelSpec &spec, llvm::StringRef name);

/// Applies defaults. `spec` must have passed the checks.
ModelConfig resolveModelSpec(const pb::ModelSpec &spec);

/// The model as a data-parallel mesh of `dp` ranks computes it. The spec's
/// micro_batch is per data-parallel rank (as Megatron-LM's
/// --micro-batch-size), so one microbatch of the logical graph holds
/// micro_batch x dp sequences, which megatron-seeds splits over dp.
ModelConfig dataParallelConfig(ModelConfig c, int64_t dp);

/// Megatron's padding: ceil(vocab / multiple) * multiple.
int64_t padVocabSize(int64_t vocab, int64_t multiple);

/// The default MLP width: 4H for GPT; for Llama 2/3 * 4H rounded up to a
/// multiple of `multipleOf` (Llama's FeedForward).
int64_t defaultFfn(pb::ModelSpec::Family family, int64_t hidden,
                   int64_t multipleOf);

} // namespace strata
