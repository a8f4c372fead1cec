//===- MegatronApi.cpp - Megatron-LM's `PUT /api` -------------------------===//
//
// Field names, defaults, checks and messages follow Megatron-LM's
// MegatronGenerate.put (megatron/inference/text_generation_server.py), with
// these differences: every refusal is HTTP 400 (Megatron answers some with
// 200); temperature 0 is allowed and means greedy; top_p may be written as
// an integer; unknown fields are refused; beam search and top_p_decay /
// top_p_bound are not implemented and say so; stop_on_eol and
// stop_on_double_eol stop before "\n" / "\n\n" (the newline is not part of
// the text); add_BOS needs a tokenizer with a BOS token; without stop_token
// generation stops at the tokenizer's EOS token, if it has one.
//
//===----------------------------------------------------------------------===//
#include "runtime/generate/Api.h"
#include "runtime/generate/ApiFields.h"

namespace strata::generate {

namespace {

constexpr llvm::StringLiteral kMegatronFields =
    "prompts, tokens_to_generate, logprobs, temperature, top_k, top_p, "
    "add_BOS, stop_on_eol, stop_on_double_eol, random_seed, stop_token, "
    "no_log";

ApiError bad(const std::string &msg) { return ApiError{400, msg}; }

/// Tokenizes `prompts` into `out`; empty prompts stay empty.
std::optional<ApiError> tokenize(const std::vector<std::string> &prompts,
                                 const ServeContext &ctx, ApiRequest &out) {
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest g;
    if (auto e = ctx.tokenizer->encode(prompts[i], g.prompt))
      return bad("prompt " + std::to_string(i) +
                 " cannot be tokenized: " + llvm::toString(std::move(e)));
    out.sequences.push_back(std::move(g));
  }
  out.prompts = prompts;
  return std::nullopt;
}

} // namespace

std::variant<ApiRequest, ApiError> parseMegatronRequest(llvm::StringRef body,
                                                        const ServeContext &ctx,
                                                        uint64_t randomSeed) {
  if (!nestingWithin(body, 32))
    return bad("the request nests arrays or objects more than 32 deep");
  auto parsed = llvm::json::parse(body);
  if (!parsed)
    return bad("malformed JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *o = parsed->getAsObject();
  if (!o)
    return bad("the request body must be a JSON object");
  if (o->get("max_len"))
    return bad("max_len is no longer used.  Replace with tokens_to_generate");
  if (o->get("sentences"))
    return bad("sentences is no longer used.  Replace with prompts");
  for (llvm::StringRef f : {"beam_width", "length_penalty", "top_p_decay",
                            "top_p_bound", "prevent_newline_after_colon"})
    if (o->get(f))
      return bad(f.str() + " is not supported by strata serve");

  Fields f(*o);
  if (!f.has("prompts"))
    return bad("prompts argument required");
  const llvm::json::Array *list = o->getArray("prompts");
  std::vector<std::string> prompts;
  for (size_t i = 0; list && i < list->size(); ++i)
    if (auto s = (*list)[i].getAsString())
      prompts.push_back(s->str());
  if (!list || prompts.size() != list->size())
    return bad("prompts is not a list of strings");
  if (prompts.empty())
    return bad("prompts is empty");
  if (int64_t(prompts.size()) > ctx.maxPrompts)
    return bad("Maximum number of prompts is " +
               std::to_string(ctx.maxPrompts));

  int64_t tokens = 64, topK = 0, seed = -1, stopToken = -1;
  bool logprobs = false, addBOS = false, stopOnEol = false,
       stopOnDoubleEol = false, noLog = false;
  double temperature = 1.0, topP = 0.0;
  f.getInt("tokens_to_generate", tokens, 0, ctx.config->seq,
           "tokens to generate; the model's context is " +
               std::to_string(ctx.config->seq) + " tokens");
  f.getBool("logprobs", logprobs);
  f.getNumber("temperature", temperature, 0, 100, "0 is greedy");
  f.getInt("top_k", topK, 0, 1000, "0 keeps every token");
  f.getNumber("top_p", topP, 0, 1, "0 keeps every token");
  f.getBool("add_BOS", addBOS);
  f.getBool("stop_on_eol", stopOnEol);
  f.getBool("stop_on_double_eol", stopOnDoubleEol);
  f.getInt("random_seed", seed, 0, INT64_MAX);
  f.getInt("stop_token", stopToken, 0, ctx.sampleVocab - 1, "a token id");
  f.getBool("no_log", noLog);
  f.checkUnknown(kMegatronFields);
  if (!f.ok())
    return bad(f.error());
  if (tokens == 0 && !logprobs)
    return bad("tokens_to_generate=0 implies logprobs should be True");
  if (topK > 0 && topP > 0)
    return bad("cannot set both top-k and top-p samplings.");
  std::optional<int32_t> bos = ctx.tokenizer->bosId();
  if (addBOS && !bos)
    return bad("add_BOS: this checkpoint's tokenizer (" +
               ctx.tokenizer->name().str() + ") has no BOS token");
  for (const std::string &p : prompts)
    if (p.empty() && !addBOS)
      return bad("Empty prompts require add_BOS=true");

  ApiRequest req;
  req.logprobs = logprobs;
  if (auto e = tokenize(prompts, ctx, req))
    return *e;
  for (size_t i = 0; i < req.sequences.size(); ++i) {
    GenerationRequest &g = req.sequences[i];
    if (addBOS)
      g.prompt.insert(g.prompt.begin(), *bos);
    int64_t n = int64_t(g.prompt.size());
    if (n + tokens > ctx.config->seq)
      return bad("Length of prompt + tokens_to_generate longer than allowed: "
                 "prompt " +
                 std::to_string(i) + " has " + std::to_string(n) +
                 " tokens, + " + std::to_string(tokens) + " > the model's " +
                 std::to_string(ctx.config->seq));
    g.maxNewTokens = tokens;
    g.sampling = {temperature, topK, topP > 0 ? topP : 1.0,
                  seed >= 0 ? uint64_t(seed) : randomSeed};
    g.streamIndex = i;
    g.promptLogprobs = logprobs;
    // Megatron stops at the end-of-document token unless told another.
    if (stopToken >= 0)
      g.stopTokens.push_back(int32_t(stopToken));
    else if (auto eos = ctx.tokenizer->eosId())
      g.stopTokens.push_back(*eos);
    if (stopOnEol)
      g.stopStrings.push_back("\n");
    else if (stopOnDoubleEol)
      g.stopStrings.push_back("\n\n");
    g.overflow = Overflow::Stop;
  }
  return req;
}

llvm::json::Value megatronResponse(const ApiRequest &req,
                                   const std::vector<GenerationResult> &results,
                                   const ServeContext &ctx) {
  llvm::json::Array text, segments, tokens, logprobs;
  for (size_t i = 0; i < results.size(); ++i) {
    const GenerationResult &r = results[i];
    text.push_back(llvm::json::fixUTF8(req.prompts[i] + r.text));
    std::vector<int32_t> all = req.sequences[i].prompt;
    all.insert(all.end(), r.tokens.begin(), r.tokens.end());
    llvm::json::Array seg, ids, lps;
    for (int32_t t : all) {
      auto s = ctx.tokenizer->decode(llvm::ArrayRef<int32_t>(t));
      seg.push_back(llvm::json::fixUTF8(
          s ? *s : (llvm::consumeError(s.takeError()), "")));
      ids.push_back(t);
    }
    for (double lp : r.promptLogprobs)
      lps.push_back(lp);
    for (double lp : r.logprobs)
      lps.push_back(lp);
    segments.push_back(std::move(seg));
    tokens.push_back(std::move(ids));
    logprobs.push_back(std::move(lps));
  }
  llvm::json::Object out{{"text", std::move(text)},
                         {"segments", std::move(segments)},
                         {"tokens", std::move(tokens)}};
  if (req.logprobs)
    out["logprobs"] = std::move(logprobs);
  return out;
}

} // namespace strata::generate
