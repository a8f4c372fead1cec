//===- ApiTest.cpp - Parsing and checking the server's request bodies
//------===//
#include "TestModels.h"

#include "runtime/generate/Api.h"

#include <gtest/gtest.h>

using namespace strata;
using namespace strata::generate;

namespace {

struct ApiTest : ::testing::Test {
  ModelConfig c = strata::test::tinyConfig(true, 32);
  Tokenizer tok = Tokenizer::byteLevel();
  ServeContext ctx;
  ApiTest() {
    ctx.config = &c;
    ctx.tokenizer = &tok;
    ctx.modelName = "m";
    ctx.sampleVocab = 65;
  }
  std::string megatronError(llvm::StringRef body) {
    auto r = parseMegatronRequest(body, ctx, 1);
    auto *e = std::get_if<ApiError>(&r);
    return e ? e->message : "<accepted>";
  }
  std::string completionError(llvm::StringRef body) {
    auto r = parseCompletionRequest(body, ctx, 1);
    auto *e = std::get_if<ApiError>(&r);
    return e ? e->message : "<accepted>";
  }
};

TEST_F(ApiTest, MegatronRequestIsParsed) {
  auto r = parseMegatronRequest(
      R"({"prompts": ["AB", "C"], "tokens_to_generate": 5, "temperature": 0.5,
          "top_p": 0.9, "logprobs": true, "random_seed": 3, "stop_token": 10})",
      ctx, 1);
  ASSERT_TRUE(std::holds_alternative<ApiRequest>(r))
      << std::get<ApiError>(r).message;
  const ApiRequest &q = std::get<ApiRequest>(r);
  ASSERT_EQ(q.sequences.size(), 2u);
  EXPECT_EQ(q.sequences[0].prompt, (std::vector<int32_t>{'A', 'B'}));
  EXPECT_EQ(q.sequences[1].streamIndex, 1u);
  EXPECT_EQ(q.sequences[1].maxNewTokens, 5);
  EXPECT_EQ(q.sequences[1].sampling.seed, 3u);
  EXPECT_EQ(q.sequences[1].sampling.topP, 0.9);
  EXPECT_TRUE(q.sequences[1].promptLogprobs);
  EXPECT_EQ(q.sequences[1].stopTokens, std::vector<int32_t>{10});
}

TEST_F(ApiTest, MegatronRefusals) {
  const std::pair<const char *, const char *> cases[] = {
      {"", "malformed JSON"},
      {"{\"prompts\": [\"a\"]", "malformed JSON"},
      {"[1]", "must be a JSON object"},
      {"{}", "prompts argument required"},
      {R"({"prompts": "a"})", "prompts is not a list of strings"},
      {R"({"prompts": [1]})", "prompts is not a list of strings"},
      {R"({"prompts": []})", "prompts is empty"},
      {R"({"prompts": ["a"], "max_len": 3})", "max_len is no longer used"},
      {R"({"prompts": ["a"], "tokens_to_generate": "5"})",
       "tokens_to_generate must be an integer"},
      {R"({"prompts": ["a"], "tokens_to_generate": -1})",
       "tokens_to_generate must be an integer in [0, 32]"},
      {R"({"prompts": ["a"], "tokens_to_generate": 0})",
       "tokens_to_generate=0 implies logprobs"},
      {R"({"prompts": ["a"], "temperature": -1})",
       "temperature must be a number in [0, 100]"},
      {R"({"prompts": ["a"], "temperature": true})",
       "temperature must be a number"},
      {R"({"prompts": ["a"], "top_k": 2.5})", "top_k must be an integer"},
      {R"({"prompts": ["a"], "top_k": 2, "top_p": 0.5})",
       "cannot set both top-k and top-p"},
      {R"({"prompts": ["a"], "top_p": 1.5})",
       "top_p must be a number in [0, 1]"},
      {R"({"prompts": ["a"], "logprobs": 1})", "logprobs must be a boolean"},
      {R"({"prompts": ["a"], "random_seed": -2})",
       "random_seed must be an integer"},
      {R"({"prompts": ["a"], "stop_token": 65})",
       "stop_token must be an integer in [0, 64]"},
      {R"({"prompts": ["a"], "add_BOS": true})", "has no BOS token"},
      {R"({"prompts": [""]})", "Empty prompts require add_BOS=true"},
      {R"({"prompts": ["a"], "beam_width": 2})", "beam_width is not supported"},
      {R"({"prompts": ["a"], "colour": 2})", "unknown field colour"},
      {R"({"prompts": ["0123456789012345678901234567890"], "tokens_to_generate": 2})",
       "Length of prompt + tokens_to_generate longer than allowed"},
  };
  for (auto [body, want] : cases)
    EXPECT_NE(megatronError(body).find(want), std::string::npos)
        << body << " -> " << megatronError(body);
  std::string many = "{\"prompts\": [";
  for (int i = 0; i < 129; ++i)
    many += std::string(i ? "," : "") + "\"a\"";
  EXPECT_EQ(megatronError(many + "]}"), "Maximum number of prompts is 128");
}

TEST_F(ApiTest, CompletionRequestIsParsed) {
  auto r = parseCompletionRequest(
      R"({"model": "m", "prompt": "AB", "max_tokens": 4, "temperature": 0,
          "stream": true, "logprobs": 2, "stop": ["\n", "x"], "seed": 9,
          "presence_penalty": 0, "logit_bias": {}, "user": "u"})",
      ctx, 1);
  ASSERT_TRUE(std::holds_alternative<ApiRequest>(r))
      << std::get<ApiError>(r).message;
  const ApiRequest &q = std::get<ApiRequest>(r);
  ASSERT_EQ(q.sequences.size(), 1u);
  EXPECT_TRUE(q.stream);
  EXPECT_TRUE(q.logprobs);
  EXPECT_EQ(q.sequences[0].topLogprobs, 2);
  EXPECT_EQ(q.sequences[0].stopStrings, (std::vector<std::string>{"\n", "x"}));
  EXPECT_EQ(q.sequences[0].sampling.seed, 9u);
  EXPECT_EQ(q.sequences[0].sampling.temperature, 0);
}

TEST_F(ApiTest, CompletionRefusals) {
  const std::pair<const char *, const char *> cases[] = {
      {"nope", "malformed JSON"},
      {"{}", "prompt is required"},
      {R"({"prompt": 5})", "prompt must be a string or a list"},
      {R"({"prompt": [[1, 2]]})", "prompt must be a string or a list"},
      {R"({"prompt": "a", "max_tokens": 1e9})",
       "max_tokens must be an integer"},
      {R"({"prompt": "a", "temperature": 3})",
       "temperature must be a number in [0, 2]"},
      {R"({"prompt": "a", "top_p": 0})", "top_p must be a number in (0, 1]"},
      {R"({"prompt": "a", "n": 2})", "n must be an integer in [1, 1]"},
      {R"({"prompt": "a", "stream": "yes"})", "stream must be a boolean"},
      {R"({"prompt": "a", "logprobs": 6})",
       "logprobs must be an integer in [0, 5]"},
      {R"({"prompt": "a", "stop": ["a", "b", "c", "d", "e"]})",
       "stop must be a string or a list of 1 to 4"},
      {R"({"prompt": "a", "stop": ""})", "stop strings must not be empty"},
      {R"({"prompt": "a", "presence_penalty": 0.5})",
       "presence_penalty must be a number in [0, 0]"},
      {R"({"prompt": "a", "logit_bias": {"1": 2}})",
       "logit_bias is not supported"},
      {R"({"prompt": "a", "suffix": "b"})", "suffix is not supported"},
      {R"({"prompt": "a", "echo": true, "logprobs": 1})", "echo with logprobs"},
      {R"({"prompt": "a", "functions": []})", "unknown field functions"},
      {R"({"prompt": ""})", "prompt 0 is empty"},
      {R"({"prompt": "0123456789012345678901234567890", "max_tokens": 5})",
       "maximum context length is 32 tokens, however you requested 36 tokens"},
  };
  for (auto [body, want] : cases)
    EXPECT_NE(completionError(body).find(want), std::string::npos)
        << body << " -> " << completionError(body);
}

TEST_F(ApiTest, ResponsesHaveTheApisShapes) {
  auto r = parseMegatronRequest(
      R"({"prompts": ["AB"], "tokens_to_generate": 2, "logprobs": true})", ctx,
      1);
  const ApiRequest &q = std::get<ApiRequest>(r);
  GenerationResult g;
  g.tokens = {'C', 'D'};
  g.logprobs = {-1, -2};
  g.promptLogprobs = {-0.5};
  g.text = "CD";
  llvm::json::Value v = megatronResponse(q, {g}, ctx);
  std::string s;
  llvm::raw_string_ostream(s) << v;
  EXPECT_EQ(s, R"({"logprobs":[[-0.5,-1,-2]],"segments":[["A","B","C","D"]],)"
               R"("text":["ABCD"],"tokens":[[65,66,67,68]]})");
  auto r2 =
      parseCompletionRequest(R"({"prompt": "AB", "max_tokens": 2})", ctx, 1);
  llvm::json::Value w =
      completionResponse(std::get<ApiRequest>(r2), {g}, ctx, "cmpl-1", 7);
  s.clear();
  llvm::raw_string_ostream(s) << w;
  EXPECT_EQ(
      s,
      R"({"choices":[{"finish_reason":"length","index":0,"logprobs":null,)"
      R"("text":"CD"}],"created":7,"id":"cmpl-1","model":"m","object":"text_completion",)"
      R"("usage":{"completion_tokens":2,"prompt_tokens":2,"total_tokens":4}})");
}

} // namespace
