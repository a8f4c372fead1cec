//===- Generate.cpp - `strata generate CHECKPOINT --prompt TEXT`
//-----------===//
//
// Samples text from a checkpoint written by `strata train`: the checkpoint
// carries the model spec and the tokenizer, so no data file is needed.
// Decoding is incremental (runtime/generate: a key/value cache, the prompt
// prefilled in one pass); --no-kv-cache runs the whole forward graph per
// token instead. Text streams to stdout as tokens are made. Several
// --prompt flags run as one batch; --json prints one object per prompt
// with tokens and logprobs.
//
//===----------------------------------------------------------------------===//
#include "runtime/generate/Engine.h"
#include "runtime/generate/LoadedModel.h"
#include "runtime/parallel/Backend.h"
#include "tools/strata/Flags.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace strata::generate;

namespace strata {
namespace {

cl::SubCommand generateCmd("generate",
                           "Sample text from a training checkpoint");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> ckptPath(cl::Positional, cl::Required,
                              cl::desc("<checkpoint.bin>"),
                              cl::sub(generateCmd), cl::cat(cat));
cl::list<std::string>
    prompts("prompt",
            cl::desc("Text to continue; repeat for a batch "
                     "(default: one empty prompt, from BOS or token 0)"),
            cl::sub(generateCmd), cl::cat(cat));
cl::opt<int64_t> numTokens("tokens", cl::desc("Tokens to generate per prompt"),
                           cl::init(300), cl::sub(generateCmd), cl::cat(cat));
cl::opt<double>
    temperature("temperature",
                cl::desc("Softmax temperature, 0 to 100 (0: greedy)"),
                cl::init(0.8), cl::sub(generateCmd), cl::cat(cat));
cl::opt<int64_t>
    topK("top-k", cl::desc("Sample among the k most likely tokens (0: all)"),
         cl::init(40), cl::sub(generateCmd), cl::cat(cat));
cl::opt<double> topP("top-p",
                     cl::desc("Sample among the most likely tokens holding "
                              "probability p, after top-k (1: all)"),
                     cl::init(1.0), cl::sub(generateCmd), cl::cat(cat));
cl::opt<int64_t> seed("seed",
                      cl::desc("Sampling seed (prompt i draws from stream i)"),
                      cl::init(1337), cl::sub(generateCmd), cl::cat(cat));
cl::list<std::string>
    stopStrings("stop",
                cl::desc("End a completion before this text (repeatable)"),
                cl::sub(generateCmd), cl::cat(cat));
cl::list<int>
    stopTokens("stop-token",
               cl::desc("End a completion at this token id (repeatable)"),
               cl::sub(generateCmd), cl::cat(cat));
cl::opt<bool>
    ignoreEos("ignore-eos",
              cl::desc("Go on past the tokenizer's EOS token (default: it "
                       "ends a completion)"),
              cl::sub(generateCmd), cl::cat(cat));
cl::opt<std::string>
    context("context",
            cl::desc("Past the model's seq_len: slide (go on from "
                     "the last seq/2 tokens) or stop"),
            cl::init("slide"), cl::sub(generateCmd), cl::cat(cat));
cl::opt<bool>
    json("json",
         cl::desc("Print one JSON object per prompt (text, tokens, "
                  "logprobs, finish_reason) instead of streaming text"),
         cl::sub(generateCmd), cl::cat(cat));
cl::opt<std::string> tokenizerFlag(
    "tokenizer",
    cl::desc("byte, or a tokenizer.json / SentencePiece .model to "
             "use instead of the checkpoint's tokenizer"),
    cl::sub(generateCmd), cl::cat(cat));
cl::opt<bool> noCache("no-kv-cache",
                      cl::desc("Run the whole forward graph for every token "
                               "(the reference the cache is tested against)"),
                      cl::sub(generateCmd), cl::cat(cat));
cl::opt<std::string> device(
    "device",
    cl::desc("Where the model runs: cpu (default; the key/value cache), "
             "cuda-interpret or cuda (the model's graph for every token)"),
    cl::init("cpu"), cl::sub(generateCmd), cl::cat(cat));

Error checkGenerateFlags() {
  if (auto e = checkFlags({
          atLeast(numTokens, 0, "tokens to generate per prompt"),
          inInterval(temperature, 0, 100, Ends::Closed, "0 is greedy decoding"),
          atLeast(topK, 0, "0 keeps every token"),
          inInterval(topP, 0, 1, Ends::OpenLow, "1 keeps every token"),
          atLeast(seed, 0, "any non-negative integer"),
          oneOf(context, {"slide", "stop"}),
      }))
    return e;
  for (const std::string &s : stopStrings)
    if (s.empty())
      return usageError(
          "--stop must not be empty (give the text that ends a completion)");
  return Error::success();
}

json::Value resultJSON(size_t index, StringRef prompt,
                       const GenerationResult &r) {
  json::Array lps;
  for (double lp : r.logprobs)
    lps.push_back(lp);
  json::Array toks;
  for (int32_t t : r.tokens)
    toks.push_back(t);
  return json::Object{
      {"index", int64_t(index)},       {"prompt", json::fixUTF8(prompt)},
      {"text", json::fixUTF8(r.text)}, {"tokens", std::move(toks)},
      {"logprobs", std::move(lps)},    {"finish_reason", finishName(r.finish)}};
}

int runGenerate() {
  if (auto e = checkGenerateFlags())
    return reportError(std::move(e));
  auto backend = parseBackend(device);
  if (!backend)
    return reportError(
        usageError("--device: " + toString(backend.takeError())));
  auto model = LoadedModel::load(ckptPath);
  if (!model)
    return reportError(model.takeError());
  // --tokenizer: instead of the checkpoint's (docs/tokenizers.md).
  if (auto e = (*model)->chooseTokenizer(tokenizerFlag, ckptPath))
    return reportError(std::move(e));
  const Tokenizer &tok = *(*model)->tokenizer;
  int64_t vocab = std::min((*model)->config.vocab, tok.vocabSize());
  for (int t : stopTokens)
    if (t < 0 || t >= vocab)
      return reportError(usageError("--stop-token must be a token id in [0, " +
                                    Twine(vocab) + "), got " + Twine(t)));

  std::vector<std::string> texts(prompts.begin(), prompts.end());
  if (texts.empty())
    texts.push_back("");
  std::vector<GenerationRequest> reqs(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    GenerationRequest &r = reqs[i];
    if (auto e = tok.encode(texts[i], r.prompt))
      return reportError(usageError("--prompt: " + toString(std::move(e))));
    // An empty prompt starts from BOS, or token 0 (nanoGPT's newline).
    if (r.prompt.empty())
      r.prompt.push_back(tok.bosId().value_or(0));
    r.maxNewTokens = numTokens;
    r.sampling = {temperature, topK, topP, uint64_t(int64_t(seed))};
    r.streamIndex = i;
    r.stopStrings.assign(stopStrings.begin(), stopStrings.end());
    r.stopTokens.assign(stopTokens.begin(), stopTokens.end());
    if (auto eos = tok.eosId(); eos && !ignoreEos)
      r.stopTokens.push_back(*eos);
    r.overflow = context == "stop" ? Overflow::Stop : Overflow::Slide;
  }

  // The key/value-cache decoder is a host engine; other devices run the
  // model's graph (runtime/generate/LogitsModel) for every token.
  auto dev = makeDevice(*backend, 0, 0);
  if (!dev)
    return reportError(dev.takeError());
  bool cached = !noCache && *backend == Backend::Cpu;
  auto decoder = (*model)->makeDecoder(cached, int64_t(reqs.size()), **dev);
  if (!decoder)
    return reportError(decoder.takeError());

  // One prompt in text mode streams; several print as each finishes.
  bool stream = !json && texts.size() == 1;
  std::vector<Sink> sinks(texts.size());
  std::vector<size_t> printed(texts.size());
  std::vector<std::optional<GenerationResult>> done(texts.size());
  size_t next = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (stream) {
      outs() << texts[i];
      outs().flush();
      sinks[i].onToken = [&, i](const TokenEvent &ev) {
        outs() << ev.text;
        outs().flush();
        printed[i] += ev.text.size();
        return true;
      };
    }
    sinks[i].onFinish = [&, i](GenerationResult r) {
      if (json) {
        // Objects come in prompt order: hold finished ones until then.
        done[i] = std::move(r);
        for (; next < done.size() && done[next]; ++next)
          outs() << resultJSON(next, texts[next], *done[next]) << '\n';
      } else if (stream) {
        outs() << StringRef(r.text).substr(printed[i]) << '\n';
      } else {
        outs() << "--- prompt " << i << " (" << finishName(r.finish) << ")\n"
               << texts[i] << r.text << '\n';
      }
      outs().flush();
    };
  }
  if (auto e = generateAll(**decoder, tok, std::move(reqs), std::move(sinks)))
    return reportError(std::move(e));
  return kExitOk;
}

VerbRegistration reg(generateCmd, runGenerate);

} // namespace
} // namespace strata
