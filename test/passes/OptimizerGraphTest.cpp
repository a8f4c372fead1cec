//===- OptimizerGraphTest.cpp - The AdamW optimizer-step graph
//-------------===//
#include "passes/optimizer/OptimizerGraph.h"
#include "ir/IRText.h"
#include "ir/Verifier.h"

#include "gtest/gtest.h"

namespace strata {
namespace {

// Only the params of the microbatch graph matter to the builder: a matrix
// (decayed) and a bias (not decayed), one of them sharded.
Graph microbatch() {
  auto g = parseGraph(
      R"(graph @mlp mesh<tp=2>(%x: f32[4,8], %w: f32[8,16] {param, init="normal", std=0.02, shard=[_,tp]}, %b: f32[16] {param, init="zeros"}) {
  %h = matmul(%x, %w) : f32[4,16]
  %y = add(%h, %b) : f32[4,16]
  %loss = reduce_sum(%y) : f32[]
  return %loss
}
)");
  EXPECT_TRUE(bool(g)) << llvm::toString(g.takeError());
  return std::move(*g);
}

// The whole graph: inputs in groups, the global norm, torch's clip
// coefficient, and weight decay only on the matrix.
TEST(OptimizerGraph, ClippedAdamW) {
  OptimizerConfig cfg;
  cfg.beta1 = 0.9;
  cfg.beta2 = 0.95;
  cfg.eps = 1e-8;
  cfg.weight_decay = 0.1;
  cfg.grad_clip = 0.5;
  Graph g = buildOptimizerGraph(microbatch(), cfg);
  EXPECT_FALSE(bool(verifyGraph(g)));
  EXPECT_EQ(graphToString(g), R"(graph @mlp_optimizer mesh<tp=2>(
    %w: f32[8,16] {init="normal", param, std=0.02, shard=[_,tp]},
    %b: f32[16] {init="zeros", param},
    %grad.w: f32[8,16] {shard=[_,tp]},
    %grad.b: f32[16],
    %adam_m.w: f32[8,16] {init="zeros", shard=[_,tp]},
    %adam_m.b: f32[16] {init="zeros"},
    %adam_v.w: f32[8,16] {init="zeros", shard=[_,tp]},
    %adam_v.b: f32[16] {init="zeros"},
    %lr: f32[],
    %step: f32[]) {
  %sq.w = square(%grad.w) : f32[8,16]  # optimizer.w
  %sumsq.w = reduce_sum(%sq.w) : f32[]  # optimizer.w
  %sq.b = square(%grad.b) : f32[16]  # optimizer.b
  %sumsq.b = reduce_sum(%sq.b) : f32[]  # optimizer.b
  %sumsq = add(%sumsq.w, %sumsq.b) : f32[]  # optimizer.grad_norm
  %grad_norm = sqrt(%sumsq) : f32[]  # optimizer.grad_norm
  %norm_eps = fill() {dtype="f32", shape=[], value=1e-06} : f32[]  # optimizer.clip
  %grad_norm_eps = add(%grad_norm, %norm_eps) : f32[]  # optimizer.clip
  %max_norm = fill() {dtype="f32", shape=[], value=0.5} : f32[]  # optimizer.clip
  %clip_coef = div(%max_norm, %grad_norm_eps) : f32[]  # optimizer.clip
  %one = fill() {dtype="f32", shape=[], value=1.0} : f32[]  # optimizer.clip
  %clip_coef_clamped = minimum(%clip_coef, %one) : f32[]  # optimizer.clip
  %clipped.w = mul(%grad.w, %clip_coef_clamped) : f32[8,16]  # optimizer.w
  %new.w, %new.adam_m.w, %new.adam_v.w = adamw_update(%w, %clipped.w, %adam_m.w, %adam_v.w, %lr, %step) {beta1=0.9, beta2=0.95, eps=1e-08, weight_decay=0.1} : f32[8,16], f32[8,16], f32[8,16]  # optimizer.w
  %clipped.b = mul(%grad.b, %clip_coef_clamped) : f32[16]  # optimizer.b
  %new.b, %new.adam_m.b, %new.adam_v.b = adamw_update(%b, %clipped.b, %adam_m.b, %adam_v.b, %lr, %step) {beta1=0.9, beta2=0.95, eps=1e-08, weight_decay=0.0} : f32[16], f32[16], f32[16]  # optimizer.b
  return %new.w, %new.b, %new.adam_m.w, %new.adam_m.b, %new.adam_v.w, %new.adam_v.b, %grad_norm
}
)");
}

// Without clipping the grads go to adamw_update as they are; grad_norm is
// still computed for logging.
TEST(OptimizerGraph, NoClipping) {
  OptimizerConfig cfg;
  cfg.grad_clip = 0;
  Graph g = buildOptimizerGraph(microbatch(), cfg);
  EXPECT_FALSE(bool(verifyGraph(g)));
  std::string text = graphToString(g);
  EXPECT_EQ(text.find("clip"), std::string::npos) << text;
  EXPECT_NE(text.find("adamw_update(%w, %grad.w, %adam_m.w, %adam_v.w, %lr, "
                      "%step) {beta1=0.9, beta2=0.999, eps=1e-08, "
                      "weight_decay=0.01}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("return %new.w, %new.b, %new.adam_m.w, %new.adam_m.b, "
                      "%new.adam_v.w, %new.adam_v.b, %grad_norm"),
            std::string::npos)
      << text;
}

// The text form of the optimizer graph parses back to the same text.
TEST(OptimizerGraph, RoundTrips) {
  OptimizerConfig cfg;
  cfg.grad_clip = 0.5;
  std::string text = graphToString(buildOptimizerGraph(microbatch(), cfg));
  auto back = parseGraph(text);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(graphToString(*back), text);
}

} // namespace
} // namespace strata
