//===- BatchSampler.cpp - Random language-model batches, resumable --------===//
#include "runtime/data/BatchSampler.h"

#include "llvm/ADT/StringExtras.h"

namespace strata {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// splitmix64's output function: a bijective 64-bit mix.
static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Folds one more counter into a hash chain.
static uint64_t absorb(uint64_t h, uint64_t v) {
  return splitmix64(h ^ splitmix64(v));
}

//===----------------------------------------------------------------------===//
// SamplerState
//===----------------------------------------------------------------------===//

llvm::json::Value SamplerState::toJSON() const {
  return llvm::json::Object{
      {"seed", llvm::utostr(seed)}, {"step", step}, {"microbatch", microbatch}};
}

llvm::Expected<SamplerState>
SamplerState::fromJSON(const llvm::json::Value &v) {
  auto bad = [](const llvm::Twine &why) {
    return fail("bad data sampler state: " + why);
  };
  const llvm::json::Object *obj = v.getAsObject();
  if (!obj)
    return bad("expected an object");
  SamplerState s;
  auto seed = obj->getString("seed");
  if (!seed || seed->getAsInteger(10, s.seed))
    return bad("\"seed\" must be a decimal string");
  auto step = obj->getInteger("step");
  auto micro = obj->getInteger("microbatch");
  if (!step || *step < 0 || !micro || *micro < 0)
    return bad("\"step\" and \"microbatch\" must be non-negative integers");
  s.step = *step;
  s.microbatch = *micro;
  return s;
}

//===----------------------------------------------------------------------===//
// BatchSampler
//===----------------------------------------------------------------------===//

llvm::Expected<BatchSampler> BatchSampler::create(TokenSpan data,
                                                  const SamplerConfig &c) {
  if (c.batch <= 0 || c.seqLen <= 0 || c.microbatches <= 0 || c.rank < 0)
    return fail("batch sampler needs positive batch, seq_len and microbatches "
                "and a non-negative rank");
  if (data.size() < c.seqLen + 1)
    return fail(data.describe() + " has " + llvm::Twine(data.size()) +
                " tokens; a sequence length of " + llvm::Twine(c.seqLen) +
                " needs at least " + llvm::Twine(c.seqLen + 1) +
                " (use more text or a shorter sequence)");
  return BatchSampler(std::move(data), c);
}

int64_t BatchSampler::offset(int64_t step, int64_t microbatch,
                             int64_t row) const {
  uint64_t h = splitmix64(config_.seed);
  h = absorb(h, uint64_t(config_.rank));
  h = absorb(h, uint64_t(step));
  h = absorb(h, uint64_t(microbatch));
  h = absorb(h, uint64_t(row));
  // Offsets i in [0, n - T) keep data[i + T] (the last label) in range; the
  // multiply-high maps h onto that range; offsets differ in probability by
  // at most choices / 2^64 (2^-34 for 1e9 tokens).
  auto choices = uint64_t(data_.size() - config_.seqLen);
  return int64_t((unsigned __int128)h * choices >> 64);
}

void BatchSampler::fill(int64_t step, int64_t microbatch, int32_t *tokens,
                        int32_t *labels) const {
  const int64_t T = config_.seqLen;
  for (int64_t b = 0; b < config_.batch; ++b) {
    int64_t i = offset(step, microbatch, b);
    data_.copy(i, T, tokens + b * T);
    data_.copy(i + 1, T, labels + b * T);
  }
}

void BatchSampler::next(int32_t *tokens, int32_t *labels) {
  fill(step_, microbatch_, tokens, labels);
  if (++microbatch_ == config_.microbatches) {
    microbatch_ = 0;
    ++step_;
  }
}

llvm::Error BatchSampler::restore(const SamplerState &s) {
  if (s.seed != config_.seed)
    return fail("data sampler state was saved with seed " +
                llvm::Twine(s.seed) + " but this sampler uses seed " +
                llvm::Twine(config_.seed));
  if (s.step < 0 || s.microbatch < 0 || s.microbatch >= config_.microbatches)
    return fail("data sampler state (step " + llvm::Twine(s.step) +
                ", microbatch " + llvm::Twine(s.microbatch) +
                ") is outside this sampler's " +
                llvm::Twine(config_.microbatches) + " microbatches per step");
  step_ = s.step;
  microbatch_ = s.microbatch;
  return llvm::Error::success();
}

} // namespace strata
