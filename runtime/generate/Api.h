//===- Api.h - The HTTP APIs of `strata serve`, without the HTTP ----------===//
//
// Request bodies in, GenerationRequests out; results in, response bodies
// out. Two APIs:
//  - Megatron-LM's text generation server, `PUT /api` (fields prompts,
//    tokens_to_generate, temperature, top_k, top_p, add_BOS, logprobs,
//    random_seed, stop_token, stop_on_eol, stop_on_double_eol, no_log), with
//    its checks and messages; the response is {"text", "segments",
//    "tokens"[, "logprobs"]} over prompt + generation, as Megatron's
//    mcore engine server returns it.
//  - OpenAI's completions, `POST /v1/completions` (model, prompt, max_tokens,
//    temperature, top_p, top_k, n, stream, logprobs, echo, stop, seed, user,
//    and the penalties / best_of / logit_bias / suffix at their neutral
//    values), answered whole or as server-sent events.
// Any malformed body, unknown field, value of the wrong type or out of
// range, or prompt that does not fit the context is an ApiError: HTTP 400
// with a message saying what is wrong.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/generate/Engine.h"

#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace strata::generate {

/// What the server knows about its model.
struct ServeContext {
  const ModelConfig *config = nullptr;
  const Tokenizer *tokenizer = nullptr;
  std::string modelName;
  int64_t sampleVocab = 0;
  int64_t maxPrompts = 128; ///< Megatron's limit per request.
};

/// A parsed, checked request of either API.
struct ApiRequest {
  std::vector<std::string> prompts;
  std::vector<GenerationRequest> sequences; ///< One per prompt.
  bool stream = false;
  bool logprobs = false; ///< Megatron: logprobs; OpenAI: logprobs given.
  bool echo = false;     ///< OpenAI: the prompt opens the text.
};

/// A request the server refuses, with the message for the client.
struct ApiError {
  int status = 400;
  std::string message;
};

/// Parses a `PUT /api` body. `randomSeed` seeds requests without
/// random_seed.
std::variant<ApiRequest, ApiError> parseMegatronRequest(llvm::StringRef body,
                                                        const ServeContext &ctx,
                                                        uint64_t randomSeed);
/// The `PUT /api` response for `results` (one per prompt, in order).
llvm::json::Value megatronResponse(const ApiRequest &req,
                                   const std::vector<GenerationResult> &results,
                                   const ServeContext &ctx);

/// Parses a `POST /v1/completions` body.
std::variant<ApiRequest, ApiError>
parseCompletionRequest(llvm::StringRef body, const ServeContext &ctx,
                       uint64_t randomSeed);
/// The whole completion response.
llvm::json::Value completionResponse(
    const ApiRequest &req, const std::vector<GenerationResult> &results,
    const ServeContext &ctx, llvm::StringRef id, int64_t created);
/// One server-sent event's JSON: `text` for choice `index`, the token's
/// logprobs when asked, and finish_reason when `finish` is set.
llvm::json::Value completionChunk(const ApiRequest &req, size_t index,
                                  llvm::StringRef text, const TokenEvent *token,
                                  std::optional<Finish> finish,
                                  const ServeContext &ctx, llvm::StringRef id,
                                  int64_t created);

/// The OpenAI error body {"error": {"message", "type", ...}}.
llvm::json::Value openaiError(llvm::StringRef message);

} // namespace strata::generate
