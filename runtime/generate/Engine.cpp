//===- Engine.cpp - Sequences in flight: prefill, batched decode, stopping ===//
#include "runtime/generate/Engine.h"

#include <algorithm>

namespace strata::generate {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

const char *finishName(Finish f) {
  switch (f) {
  case Finish::Length:
    return "length";
  case Finish::Stop:
    return "stop";
  case Finish::Cancelled:
    return "cancelled";
  }
  return "?";
}

/// Bytes at the end of `s` that begin a UTF-8 sequence without completing it.
static size_t incompleteUTF8Tail(llvm::StringRef s) {
  for (size_t back = 1; back <= std::min<size_t>(3, s.size()); ++back) {
    auto b = static_cast<uint8_t>(s[s.size() - back]);
    if ((b & 0xC0) == 0x80)
      continue; // a continuation byte: look further back
    size_t need = (b & 0xE0) == 0xC0   ? 2
                  : (b & 0xF0) == 0xE0 ? 3
                  : (b & 0xF8) == 0xF0 ? 4
                                       : 1;
    return need > back ? back : 0;
  }
  return 0;
}

/// Bytes at the end of `s` that are a proper prefix of some stop string.
static size_t stopPrefixTail(llvm::StringRef s,
                             const std::vector<std::string> &stops) {
  size_t best = 0;
  for (const std::string &stop : stops)
    for (size_t len = std::min(stop.size() - 1, s.size()); len > best; --len)
      if (s.endswith(llvm::StringRef(stop).take_front(len))) {
        best = len;
        break;
      }
  return best;
}

struct Engine::Sequence {
  Sequence(GenerationRequest r, Sink k, int64_t slot)
      : req(std::move(r)), sink(std::move(k)), slot(slot),
        sampler(req.sampling, req.streamIndex) {}
  GenerationRequest req;
  Sink sink;
  int64_t slot;
  Sampler sampler;
  std::vector<int32_t> context; ///< The tokens a slide may keep.
  int32_t pending = -1;         ///< Sampled, not yet in the decoder.
  GenerationResult result;
  size_t reported = 0; ///< Bytes of result.text given to onToken.
  bool done = false;
};

Engine::Engine(Decoder &decoder, const Tokenizer &tokenizer)
    : decoder_(decoder), tokenizer_(tokenizer),
      sampleVocab_(std::min(decoder.config().vocab, tokenizer.vocabSize())),
      slotBusy_(size_t(decoder.slots())) {}

Engine::~Engine() = default;

llvm::Error Engine::check(const GenerationRequest &req, const ModelConfig &c,
                          int64_t sampleVocab) {
  int64_t n = int64_t(req.prompt.size());
  if (n == 0)
    return err("the prompt has no tokens (give some text, or a BOS token)");
  for (int32_t t : req.prompt)
    if (t < 0 || t >= sampleVocab)
      return err("prompt token id " + llvm::Twine(t) +
                 " is outside the vocabulary [0, " + llvm::Twine(sampleVocab) +
                 ")");
  if (req.maxNewTokens < 0)
    return err("the number of tokens to generate must be >= 0");
  if (auto e = checkSamplingParams(req.sampling, /*flagStyle=*/false))
    return e;
  if (req.topLogprobs < 0 || req.topLogprobs > 20)
    return err("top logprobs must be in [0, 20]");
  if (req.promptLogprobs && n > c.seq)
    return err("prompt logprobs need a prompt of at most " +
               llvm::Twine(c.seq) + " tokens (got " + llvm::Twine(n) + ")");
  for (const std::string &s : req.stopStrings)
    if (s.empty())
      return err("stop strings must not be empty");
  return llvm::Error::success();
}

llvm::Error Engine::add(GenerationRequest req, Sink sink) {
  const ModelConfig &c = decoder_.config();
  int64_t n = int64_t(req.prompt.size());
  if (auto e = check(req, c, sampleVocab_))
    return e;
  auto free = std::find(slotBusy_.begin(), slotBusy_.end(), false);
  if (free == slotBusy_.end())
    return err("every decoder slot is busy");

  int64_t slot = free - slotBusy_.begin();
  seqs_.emplace_back(std::move(req), std::move(sink), slot);
  Sequence &s = seqs_.back();
  slotBusy_[size_t(slot)] = true;
  int64_t keep = std::min(n, c.seq), Vp = c.paddedVocab;
  s.context.assign(s.req.prompt.end() - keep, s.req.prompt.end());
  int64_t rows = s.req.promptLogprobs ? keep : 1;
  logits_.resize(size_t(rows * Vp));
  if (auto e = decoder_.prefill(slot, s.context, s.req.promptLogprobs,
                                logits_.data())) {
    slotBusy_[size_t(slot)] = false;
    seqs_.pop_back();
    return e;
  }
  for (int64_t i = 1; s.req.promptLogprobs && i < n; ++i) {
    const float *row = logits_.data() + (i - 1) * Vp;
    s.result.promptLogprobs.push_back(row[s.context[size_t(i)]] -
                                      logSumExp(row, Vp));
  }
  if (s.req.maxNewTokens == 0)
    finish(s, Finish::Length);
  else
    consume(s, logits_.data() + (rows - 1) * Vp);
  seqs_.remove_if([](const Sequence &q) { return q.done; });
  return llvm::Error::success();
}

bool Engine::consume(Sequence &s, const float *logits) {
  int64_t Vp = decoder_.config().paddedVocab;
  TokenEvent ev;
  ev.id = s.sampler.next(logits, sampleVocab_);
  double lse = logSumExp(logits, Vp);
  ev.logprob = logits[ev.id] - lse;
  const std::vector<int32_t> &stops = s.req.stopTokens;
  if (std::find(stops.begin(), stops.end(), ev.id) != stops.end()) {
    finish(s, Finish::Stop);
    return true;
  }
  if (s.req.topLogprobs > 0) {
    SamplingParams all; // temperature 1: the model's own distribution
    all.topK = s.req.topLogprobs;
    for (auto [id, p] : samplingDistribution(logits, sampleVocab_, all))
      ev.top.push_back({id, logits[id] - lse});
    s.result.topLogprobs.push_back(ev.top);
  }
  GenerationResult &r = s.result;
  r.tokens.push_back(ev.id);
  r.logprobs.push_back(ev.logprob);
  if (auto text = tokenizer_.decode(r.tokens))
    r.text = std::move(*text);
  else
    llvm::consumeError(text.takeError()); // ids < sampleVocab always decode
  bool stopped = false;
  size_t end = r.text.size();
  for (const std::string &stop : s.req.stopStrings) {
    size_t at = r.text.find(stop);
    if (at != std::string::npos && at < end)
      end = at, stopped = true;
  }
  if (stopped) {
    r.text.resize(end);
  } else {
    llvm::StringRef t(r.text);
    end -=
        std::max(incompleteUTF8Tail(t), stopPrefixTail(t, s.req.stopStrings));
  }
  if (end > s.reported) {
    ev.text = r.text.substr(s.reported, end - s.reported);
    s.reported = end;
  }
  if (s.sink.onToken && !s.sink.onToken(ev)) {
    finish(s, Finish::Cancelled);
    return true;
  }
  if (stopped || int64_t(r.tokens.size()) == s.req.maxNewTokens) {
    finish(s, stopped ? Finish::Stop : Finish::Length);
    return true;
  }
  s.pending = ev.id;
  s.context.push_back(ev.id);
  return false;
}

void Engine::finish(Sequence &s, Finish why) {
  s.result.finish = why;
  s.done = true;
  slotBusy_[size_t(s.slot)] = false;
  if (s.sink.onFinish)
    s.sink.onFinish(std::move(s.result));
}

llvm::Error Engine::slide(Sequence &s, float *logits) {
  int64_t keep = decoder_.config().seq / 2;
  s.context.erase(s.context.begin(), s.context.end() - keep);
  return decoder_.prefill(s.slot, s.context, false, logits);
}

llvm::Error Engine::step() {
  const ModelConfig &c = decoder_.config();
  int64_t Vp = c.paddedVocab;
  std::vector<Sequence *> batch;
  std::vector<int64_t> slots;
  std::vector<int32_t> tokens;
  for (Sequence &s : seqs_) {
    if (decoder_.length(s.slot) < c.seq) {
      batch.push_back(&s);
      slots.push_back(s.slot);
      tokens.push_back(s.pending);
    } else if (s.req.overflow == Overflow::Stop) {
      finish(s, Finish::Length);
    } else {
      logits_.resize(size_t(Vp));
      if (auto e = slide(s, logits_.data()))
        return e;
      consume(s, logits_.data());
    }
  }
  if (!batch.empty()) {
    logits_.resize(batch.size() * size_t(Vp));
    if (auto e = decoder_.decode(slots, tokens, logits_.data()))
      return e;
    for (size_t i = 0; i < batch.size(); ++i)
      consume(*batch[i], logits_.data() + i * size_t(Vp));
  }
  seqs_.remove_if([](const Sequence &q) { return q.done; });
  return llvm::Error::success();
}

void Engine::cancelAll(llvm::StringRef error) {
  for (Sequence &s : seqs_) {
    s.result.error = error.str();
    finish(s, Finish::Cancelled);
  }
  seqs_.clear();
}

llvm::Error generateAll(Decoder &decoder, const Tokenizer &tokenizer,
                        std::vector<GenerationRequest> requests,
                        std::vector<Sink> sinks) {
  Engine engine(decoder, tokenizer);
  for (size_t i = 0; i < requests.size(); ++i)
    if (auto e = engine.add(std::move(requests[i]), std::move(sinks[i])))
      return e;
  while (engine.active() > 0)
    if (auto e = engine.step())
      return e;
  return llvm::Error::success();
}

} // namespace strata::generate
