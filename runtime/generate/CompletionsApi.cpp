//===- CompletionsApi.cpp - OpenAI's `POST /v1/completions` ---------------===//
//
// The legacy completions API: prompt (a string or a list of strings), at
// most n = 1 choice per prompt, logprobs as the number (0..5) of top
// alternatives, echo, up to 4 stop strings, seed. top_k is an extension
// (as vLLM has it). Penalties, best_of, logit_bias and suffix are accepted
// only at their neutral values. A prompt plus max_tokens must fit the
// model's context, as OpenAI requires. An empty prompt starts from the
// tokenizer's BOS token; the EOS token ends a completion.
//
//===----------------------------------------------------------------------===//
#include "runtime/generate/Api.h"
#include "runtime/generate/ApiFields.h"

namespace strata::generate {

namespace {

constexpr llvm::StringLiteral kCompletionFields =
    "model, prompt, max_tokens, temperature, top_p, top_k, n, stream, "
    "logprobs, echo, stop, seed, user, presence_penalty, frequency_penalty, "
    "best_of, logit_bias, suffix";

ApiError bad(const std::string &msg) { return ApiError{400, msg}; }

std::string tokenText(const ServeContext &ctx, int32_t id) {
  auto s = ctx.tokenizer->decode(llvm::ArrayRef<int32_t>(id));
  if (!s) {
    llvm::consumeError(s.takeError());
    return "";
  }
  return llvm::json::fixUTF8(*s);
}

/// OpenAI's logprobs object for `tokens` starting at text offset `offset`.
llvm::json::Object logprobsJSON(const ServeContext &ctx,
                                llvm::ArrayRef<int32_t> tokens,
                                llvm::ArrayRef<double> lps,
                                llvm::ArrayRef<std::vector<TokenProb>> tops,
                                int64_t offset) {
  llvm::json::Array toks, tlps, topArr, offs;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string t = tokenText(ctx, tokens[i]);
    toks.push_back(t);
    tlps.push_back(lps[i]);
    llvm::json::Object alt;
    if (i < tops.size())
      for (auto [id, lp] : tops[i])
        alt[tokenText(ctx, id)] = lp;
    topArr.push_back(std::move(alt));
    offs.push_back(offset);
    offset += int64_t(t.size());
  }
  return llvm::json::Object{{"tokens", std::move(toks)},
                            {"token_logprobs", std::move(tlps)},
                            {"top_logprobs", std::move(topArr)},
                            {"text_offset", std::move(offs)}};
}

} // namespace

std::variant<ApiRequest, ApiError>
parseCompletionRequest(llvm::StringRef body, const ServeContext &ctx,
                       uint64_t randomSeed) {
  if (!nestingWithin(body, 32))
    return bad("the request nests arrays or objects more than 32 deep");
  auto parsed = llvm::json::parse(body);
  if (!parsed)
    return bad("malformed JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *o = parsed->getAsObject();
  if (!o)
    return bad("the request body must be a JSON object");
  Fields f(*o);
  std::vector<std::string> prompts, stops, model, user;
  int64_t maxTokens = 16, topK = 0, n = 1, logprobs = -1, seed = -1, bestOf = 1;
  double temperature = 1.0, topP = 1.0, presence = 0, frequency = 0;
  bool stream = false, echo = false;
  if (!f.has("prompt"))
    return bad("prompt is required (a string or a list of strings)");
  f.getStrings("prompt", prompts, true, size_t(ctx.maxPrompts));
  f.getStrings("model", model, false, 1);
  f.getInt("max_tokens", maxTokens, 0, ctx.config->seq,
           "the model's context is " + std::to_string(ctx.config->seq) +
               " tokens");
  f.getNumber("temperature", temperature, 0, 2, "0 is greedy");
  f.getNumber("top_p", topP, 0, 1);
  f.getInt("top_k", topK, 0, 1000, "0 keeps every token");
  f.getInt("n", n, 1, 1, "one choice per prompt");
  f.getBool("stream", stream);
  f.getInt("logprobs", logprobs, 0, 5, "top alternatives per token");
  f.getBool("echo", echo);
  f.getStrings("stop", stops, true, 4);
  f.getInt("seed", seed, 0, INT64_MAX);
  f.getStrings("user", user, false, 1);
  f.getNumber("presence_penalty", presence, 0, 0,
              "penalties are not supported");
  f.getNumber("frequency_penalty", frequency, 0, 0,
              "penalties are not supported");
  f.getInt("best_of", bestOf, 1, 1, "one choice per prompt");
  if (f.has("logit_bias")) {
    const llvm::json::Object *lb = o->getObject("logit_bias");
    if (!lb || !lb->empty())
      f.fail("logit_bias is not supported (leave it out or give {})");
  }
  if (f.has("suffix"))
    f.fail("suffix is not supported (leave it out or give null)");
  f.checkUnknown(kCompletionFields);
  if (!f.ok())
    return bad(f.error());
  if (topP <= 0)
    return bad("top_p must be a number in (0, 1] (1 keeps every token)");
  if (echo && logprobs >= 0)
    return bad("echo with logprobs is not supported (ask for one of them)");
  for (const std::string &s : stops)
    if (s.empty())
      return bad("stop strings must not be empty");

  ApiRequest req;
  req.stream = stream;
  req.echo = echo;
  req.logprobs = logprobs >= 0;
  req.prompts = prompts;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest g;
    if (auto e = ctx.tokenizer->encode(prompts[i], g.prompt))
      return bad("prompt " + std::to_string(i) +
                 " cannot be tokenized: " + llvm::toString(std::move(e)));
    if (g.prompt.empty()) {
      if (auto bos = ctx.tokenizer->bosId())
        g.prompt.push_back(*bos);
      else
        return bad("prompt " + std::to_string(i) +
                   " is empty (this model's "
                   "tokenizer has no BOS token to start from)");
    }
    int64_t len = int64_t(g.prompt.size());
    if (len + maxTokens > ctx.config->seq)
      return bad("This model's maximum context length is " +
                 std::to_string(ctx.config->seq) +
                 " tokens, however you "
                 "requested " +
                 std::to_string(len + maxTokens) + " tokens (" +
                 std::to_string(len) + " in your prompt; " +
                 std::to_string(maxTokens) +
                 " for the completion). Please "
                 "reduce your prompt; or completion length.");
    g.maxNewTokens = maxTokens;
    g.sampling = {temperature, topK, topP,
                  seed >= 0 ? uint64_t(seed) : randomSeed};
    g.streamIndex = i;
    g.stopStrings = stops;
    if (auto eos = ctx.tokenizer->eosId())
      g.stopTokens.push_back(*eos);
    g.topLogprobs = std::max<int64_t>(logprobs, 0);
    g.overflow = Overflow::Stop;
    req.sequences.push_back(std::move(g));
  }
  return req;
}

static llvm::json::Value choiceLogprobs(const ApiRequest &req,
                                        const GenerationResult &r,
                                        const ServeContext &ctx,
                                        int64_t offset) {
  if (!req.logprobs)
    return nullptr;
  return logprobsJSON(ctx, r.tokens, r.logprobs, r.topLogprobs, offset);
}

llvm::json::Value completionResponse(
    const ApiRequest &req, const std::vector<GenerationResult> &results,
    const ServeContext &ctx, llvm::StringRef id, int64_t created) {
  llvm::json::Array choices;
  int64_t promptTokens = 0, completionTokens = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const GenerationResult &r = results[i];
    std::string prefix = req.echo ? req.prompts[i] : "";
    choices.push_back(llvm::json::Object{
        {"text", llvm::json::fixUTF8(prefix + r.text)},
        {"index", int64_t(i)},
        {"logprobs", choiceLogprobs(req, r, ctx, int64_t(prefix.size()))},
        {"finish_reason", finishName(r.finish)}});
    promptTokens += int64_t(req.sequences[i].prompt.size());
    completionTokens += int64_t(r.tokens.size());
  }
  return llvm::json::Object{
      {"id", id},
      {"object", "text_completion"},
      {"created", created},
      {"model", ctx.modelName},
      {"choices", std::move(choices)},
      {"usage",
       llvm::json::Object{{"prompt_tokens", promptTokens},
                          {"completion_tokens", completionTokens},
                          {"total_tokens", promptTokens + completionTokens}}}};
}

llvm::json::Value completionChunk(const ApiRequest &req, size_t index,
                                  llvm::StringRef text, const TokenEvent *token,
                                  std::optional<Finish> finish,
                                  const ServeContext &ctx, llvm::StringRef id,
                                  int64_t created) {
  llvm::json::Value lp = nullptr;
  if (req.logprobs && token) {
    std::vector<std::vector<TokenProb>> tops{token->top};
    lp = logprobsJSON(ctx, token->id, token->logprob, tops, 0);
  }
  llvm::json::Value why = nullptr;
  if (finish)
    why = finishName(*finish);
  return llvm::json::Object{
      {"id", id},
      {"object", "text_completion"},
      {"created", created},
      {"model", ctx.modelName},
      {"choices", llvm::json::Array{
                      llvm::json::Object{{"text", llvm::json::fixUTF8(text)},
                                         {"index", int64_t(index)},
                                         {"logprobs", std::move(lp)},
                                         {"finish_reason", std::move(why)}}}}};
}

llvm::json::Value openaiError(llvm::StringRef message) {
  return llvm::json::Object{
      {"error", llvm::json::Object{{"message", llvm::json::fixUTF8(message)},
                                   {"type", "invalid_request_error"},
                                   {"param", nullptr},
                                   {"code", nullptr}}}};
}

} // namespace strata::generate
