//===- Engine.h - Sequences in flight: prefill, batched decode, stopping --===//
//
// The generation loop shared by `strata generate` and `strata serve`. Each
// request gets a decoder slot; add() runs its prompt's prefill and samples
// its first token, step() decodes one more token for every sequence in
// flight as one batch (continuous batching: sequences join and leave
// between steps). Tokens are reported as they are made, with the text they
// add, so callers stream.
//
// Context: a slot holds at most seq tokens. A longer prompt keeps its last
// seq tokens. When a sequence needs position seq, Overflow::Slide starts
// its window over on the last seq/2 tokens (one prefill of those, then
// incremental decoding again); Overflow::Stop ends it with finish reason
// "length". Both decoders see the same windows, so cached and uncached
// generation agree.
//
// Text: the text of a sequence is the decoding of its generated tokens.
// What is reported holds back an incomplete UTF-8 sequence at the end and
// any end that could begin a stop string; a stop string ends the text just
// before it. A stop token ends the sequence and is not part of its tokens
// or text.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/data/Tokenizer.h"
#include "runtime/generate/Decoder.h"
#include "runtime/generate/Sampler.h"

#include <functional>
#include <list>
#include <string>
#include <vector>

namespace strata::generate {

/// What happens when a sequence outgrows the model's context.
enum class Overflow { Slide, Stop };

/// Why a sequence ended: "length" (token budget or context), "stop" (stop
/// token or string), "cancelled" (the caller stopped listening).
enum class Finish { Length, Stop, Cancelled };
const char *finishName(Finish f);

struct GenerationRequest {
  std::vector<int32_t> prompt; ///< Token ids; at least one.
  int64_t maxNewTokens = 64;
  SamplingParams sampling;
  uint64_t streamIndex = 0; ///< Seeds this sequence's draws with sampling.seed.
  std::vector<int32_t> stopTokens;
  std::vector<std::string> stopStrings;
  bool promptLogprobs =
      false; ///< Logprobs of prompt tokens 1..n-1 (needs n <= seq).
  int64_t topLogprobs = 0; ///< Most likely alternatives reported per token.
  Overflow overflow = Overflow::Slide;
};

/// One generated token.
struct TokenEvent {
  int32_t id = 0;
  double logprob = 0;
  std::string text;           ///< Text this token releases (may be empty).
  std::vector<TokenProb> top; ///< (id, logprob) alternatives when asked.
};

struct GenerationResult {
  std::vector<int32_t> tokens; ///< Generated tokens (no prompt, no stop token).
  std::vector<double> logprobs;
  std::vector<double> promptLogprobs; ///< For prompt tokens 1..n-1.
  std::vector<std::vector<TokenProb>> topLogprobs;
  std::string text;
  Finish finish = Finish::Length;
  std::string error; ///< Why the engine failed it (finish is Cancelled).
};

/// Callbacks of one sequence. onToken returns false to cancel the sequence.
struct Sink {
  std::function<bool(const TokenEvent &)> onToken;
  std::function<void(GenerationResult)> onFinish;
};

class Engine {
public:
  /// `decoder` and `tokenizer` must outlive the engine.
  Engine(Decoder &decoder, const Tokenizer &tokenizer);
  ~Engine();

  /// The checks add() makes, for callers that want them before queueing.
  static llvm::Error check(const GenerationRequest &req,
                           const ModelConfig &config, int64_t sampleVocab);
  /// Checks `req` (errors name the problem; nothing changes), claims a free
  /// slot, prefills and reports the first token. Fails when no slot is free.
  llvm::Error add(GenerationRequest req, Sink sink);
  /// Decodes one token for every sequence in flight.
  llvm::Error step();
  /// Ends every sequence in flight with Finish::Cancelled and `error`.
  void cancelAll(llvm::StringRef error);

  int64_t active() const { return int64_t(seqs_.size()); }
  int64_t freeSlots() const { return decoder_.slots() - active(); }
  /// Tokens that may be sampled: the model's and tokenizer's vocabulary.
  int64_t sampleVocab() const { return sampleVocab_; }

private:
  struct Sequence;
  /// Samples from `logits` (one row) and reports; true when it finished.
  bool consume(Sequence &s, const float *logits);
  void finish(Sequence &s, Finish why);
  /// Re-prefills the last seq/2 tokens of `s` into its slot.
  llvm::Error slide(Sequence &s, float *logits);

  Decoder &decoder_;
  const Tokenizer &tokenizer_;
  int64_t sampleVocab_;
  std::list<Sequence> seqs_;
  std::vector<bool> slotBusy_;
  std::vector<float> logits_;
};

/// Runs `requests` to completion as one batch on `decoder`; `sinks[i]`
/// hears about request i.
llvm::Error generateAll(Decoder &decoder, const Tokenizer &tokenizer,
                        std::vector<GenerationRequest> requests,
                        std::vector<Sink> sinks);

} // namespace strata::generate
