//===- TinyModels.h - The small models and options of the parallel tests
//---===//
//
// GPT: padded vocab 32, hidden 16, 4 heads of 4, ffn 64, tied wte. Llama:
// hidden 32, 8 query heads over 4 KV heads (GQA), ffn 48, untied head. Small
// enough that every layout of the test matrices runs in well under a second
// on 2 cores, with every dimension tp 4 divides.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/Models.h"
#include "runtime/parallel/DeviceGroup.h"
#include "runtime/train/TrainOptions.h"

#include <chrono>

namespace strata::test {

inline ModelConfig tinyGpt(double dropout, int64_t layers) {
  ModelConfig c;
  c.family = pb::ModelSpec::GPT;
  c.name = "gpt-tiny-test";
  c.vocab = 30;
  c.paddedVocab = 32;
  c.hidden = 16;
  c.layers = layers;
  c.heads = 4;
  c.kvHeads = 4;
  c.headDim = 4;
  c.ffn = 64;
  c.seq = 8;
  c.microBatch = 4;
  c.dropout = dropout;
  c.normEps = 1e-5;
  c.initStd = 0.02;
  c.tieEmbeddings = true;
  return c;
}

inline ModelConfig tinyLlama(double dropout, int64_t layers) {
  ModelConfig c = tinyGpt(dropout, layers);
  c.family = pb::ModelSpec::LLAMA;
  c.name = "llama-tiny-test";
  c.hidden = 32;
  c.heads = 8;
  c.kvHeads = 4;
  c.headDim = 4;
  c.ffn = 48;
  c.ropeTheta = 10000;
  c.tieEmbeddings = false;
  return c;
}

/// AdamW with decay 0.1, warmup 1 step then cosine over 5, seed 7.
inline TrainOptions tinyTraining(int64_t gradAccum, double gradClip = 1.0) {
  TrainOptions t;
  t.gradAccum = gradAccum;
  t.schedule = LRSchedule{1e-2, 1e-3, 1, 5};
  t.optimizer.weight_decay = 0.1;
  t.optimizer.grad_clip = gradClip;
  t.seed = 7;
  return t;
}

/// A minute before a stuck collective fails the test.
inline DeviceGroupOptions quickDevices() {
  DeviceGroupOptions o;
  o.timeout = std::chrono::seconds(60);
  return o;
}

} // namespace strata::test
