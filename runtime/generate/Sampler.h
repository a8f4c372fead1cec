//===- Sampler.h - Choosing the next token from logits
//---------------------===//
//
// Sampling as Hugging Face's warpers apply it, in this order: divide the
// logits by the temperature, keep the k most likely tokens (top-k), then
// keep the smallest set of most likely tokens whose probability reaches p
// (top-p, nucleus), renormalize and draw. Temperature 0 is greedy (the most
// likely token; the lowest id among equals). Only the real vocabulary
// [0, V) is ever drawn; Megatron's padding columns never are.
//
// Logprobs are log_softmax of the raw logits over every column, padding
// included, as strata's training loss computes them: the mean of -logprob
// over a text equals its cross-entropy loss.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/Error.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace strata::generate {

struct SamplingParams {
  double temperature = 1.0; ///< >= 0; 0 is greedy
  int64_t topK = 0;         ///< >= 0; 0 keeps every token
  double topP = 1.0;        ///< in (0, 1]; 1 keeps every token
  uint64_t seed = 0;
};

/// Checks the ranges above (finite values, temperature <= 100 as Megatron's
/// server allows). Messages name the field as `--temperature` etc. when
/// `flagStyle`, else as the JSON field (`temperature`).
llvm::Error checkSamplingParams(const SamplingParams &p, bool flagStyle);

/// A (token, probability) pair of the sampling distribution.
using TokenProb = std::pair<int32_t, double>;

/// The distribution `p` draws from, most likely first (ties: lower id
/// first), probabilities summing to 1. logits is (V) or longer; only the
/// first V entries are candidates. Not for temperature 0.
std::vector<TokenProb> samplingDistribution(const float *logits, int64_t V,
                                            const SamplingParams &p);

/// log(sum(exp(logits[0..n)))) in double.
double logSumExp(const float *logits, int64_t n);

/// Draws tokens for one sequence; its generator is seeded by (seed, index)
/// so each prompt of a batch has its own stream. One uniform draw per token
/// walks the distribution: most likely first with top-k or top-p, in id
/// order with temperature alone.
class Sampler {
public:
  Sampler(const SamplingParams &p, uint64_t index);
  /// The next token from `logits` (V real entries first).
  int32_t next(const float *logits, int64_t V);

private:
  SamplingParams p_;
  std::mt19937_64 rng_;
};

} // namespace strata::generate
