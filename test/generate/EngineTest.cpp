//===- EngineTest.cpp - Streaming text, stop tokens and stop strings
//-------===//
#include "TestModels.h"

#include "runtime/generate/Engine.h"

#include <gtest/gtest.h>

using namespace strata;
using namespace strata::generate;
using strata::test::TestParams;
using strata::test::tinyConfig;

namespace {

/// 65 characters: newline and ASCII 32..95, a char tokenizer for vocab 65.
Tokenizer testTokenizer() {
  std::string text = "\n";
  for (char ch = 32; ch < 96; ++ch)
    text += ch;
  return llvm::cantFail(Tokenizer::charLevel(text));
}

struct Outcome {
  GenerationResult result;
  std::string streamed;
  size_t events = 0;
};

Outcome generate(Decoder &d, const Tokenizer &tok, GenerationRequest r) {
  Outcome run;
  Sink s;
  s.onToken = [&](const TokenEvent &ev) {
    run.streamed += ev.text;
    ++run.events;
    return true;
  };
  s.onFinish = [&](GenerationResult res) { run.result = std::move(res); };
  EXPECT_FALSE(bool(generateAll(d, tok, {r}, {s})));
  return run;
}

struct EngineTest : ::testing::Test {
  ModelConfig c = tinyConfig(true, 64);
  TestParams params{c, 21};
  ModelWeights weights = llvm::cantFail(ModelWeights::bind(c, params.map));
  Tokenizer tok = testTokenizer();
  GenerationRequest base() {
    GenerationRequest r;
    llvm::cantFail(tok.encode("ROMEO:", r.prompt));
    r.maxNewTokens = 40;
    r.sampling = {0.9, 0, 1.0, 5};
    return r;
  }
};

TEST_F(EngineTest, StreamedTextIsTheResultText) {
  CachedDecoder d(weights, 1);
  Outcome run = generate(d, tok, base());
  EXPECT_EQ(run.events, 40u);
  EXPECT_EQ(run.result.tokens.size(), 40u);
  EXPECT_EQ(run.streamed, run.result.text); // char tokens: nothing held back
  EXPECT_EQ(run.result.text, llvm::cantFail(tok.decode(run.result.tokens)));
  EXPECT_EQ(run.result.finish, Finish::Length);
}

TEST_F(EngineTest, StopTokenEndsBeforeIt) {
  CachedDecoder d(weights, 1);
  Outcome free = generate(d, tok, base());
  int32_t stop = free.result.tokens[7];
  size_t first =
      std::find(free.result.tokens.begin(), free.result.tokens.end(), stop) -
      free.result.tokens.begin();
  GenerationRequest r = base();
  r.stopTokens = {stop};
  Outcome run = generate(d, tok, r);
  EXPECT_EQ(run.result.finish, Finish::Stop);
  EXPECT_EQ(run.result.tokens,
            std::vector<int32_t>(free.result.tokens.begin(),
                                 free.result.tokens.begin() + first));
}

TEST_F(EngineTest, StopStringCutsTheTextAndIsNeverStreamed) {
  CachedDecoder d(weights, 1);
  Outcome free = generate(d, tok, base());
  std::string stop = free.result.text.substr(20, 3);
  size_t at = free.result.text.find(stop);
  GenerationRequest r = base();
  r.stopStrings = {"no such text", stop};
  Outcome run = generate(d, tok, r);
  EXPECT_EQ(run.result.finish, Finish::Stop);
  EXPECT_EQ(run.result.text, free.result.text.substr(0, at));
  // Held-back text (a possible start of the stop string) is not streamed.
  EXPECT_EQ(run.streamed, run.result.text);
}

TEST_F(EngineTest, CancelledSinkEndsTheSequence) {
  CachedDecoder d(weights, 1);
  GenerationResult got;
  int calls = 0;
  Sink s;
  s.onToken = [&](const TokenEvent &) { return ++calls < 3; };
  s.onFinish = [&](GenerationResult r) { got = std::move(r); };
  ASSERT_FALSE(bool(generateAll(d, tok, {base()}, {s})));
  EXPECT_EQ(got.finish, Finish::Cancelled);
  EXPECT_EQ(calls, 3);
}

TEST_F(EngineTest, BatchedSamplingEqualsEachAlone) {
  // Sequences join a batch with their own stream index: the batch gives
  // each the draws it gets alone.
  std::vector<GenerationRequest> reqs;
  for (const char *p : {"A", "BE IT", "KING:\n"}) {
    GenerationRequest r = base();
    r.prompt.clear();
    llvm::cantFail(tok.encode(p, r.prompt));
    r.streamIndex = reqs.size();
    reqs.push_back(r);
  }
  CachedDecoder batch(weights, 3);
  std::vector<GenerationResult> together(3);
  std::vector<Sink> sinks(3);
  for (size_t i = 0; i < 3; ++i)
    sinks[i].onFinish = [&, i](GenerationResult r) {
      together[i] = std::move(r);
    };
  ASSERT_FALSE(bool(generateAll(batch, tok, reqs, sinks)));
  for (size_t i = 0; i < 3; ++i) {
    CachedDecoder one(weights, 1);
    EXPECT_EQ(generate(one, tok, reqs[i]).result.tokens, together[i].tokens)
        << i;
  }
}

TEST_F(EngineTest, RefusesBadRequests) {
  CachedDecoder d(weights, 1);
  Engine e(d, tok);
  auto msg = [&](GenerationRequest r) {
    return llvm::toString(e.add(std::move(r), Sink{}));
  };
  GenerationRequest r = base();
  r.prompt.clear();
  EXPECT_NE(msg(r).find("the prompt has no tokens"), std::string::npos);
  r = base();
  r.prompt.push_back(65);
  EXPECT_NE(msg(r).find("prompt token id 65 is outside the vocabulary"),
            std::string::npos);
  r = base();
  r.sampling.temperature = NAN;
  EXPECT_NE(msg(r).find("temperature must be a number"), std::string::npos);
  r = base();
  r.stopStrings = {""};
  EXPECT_NE(msg(r).find("stop strings must not be empty"), std::string::npos);
  EXPECT_EQ(e.active(), 0);
  EXPECT_EQ(e.freeSlots(), 1);
}

} // namespace
