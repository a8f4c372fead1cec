//===- TrainingData.cpp - The batches a training run draws ----------------===//
#include "runtime/train/TrainingData.h"

#include "runtime/data/BatchSampler.h"
#include "runtime/data/TokenDataset.h"
#include "runtime/data/megatron/MegatronBatchSource.h"

namespace strata {

llvm::Expected<Tokenizer> dataTokenizer(const RunOptions &opts,
                                        llvm::StringRef kind) {
  if (opts.dataBlend.empty())
    return makeTokenizer(kind, opts.dataPath);
  auto tok = megatron::blendTokenizer(opts.dataBlend, kind);
  if (!tok)
    return tok.takeError();
  return tok;
}

llvm::Expected<TrainingData> openTrainingData(const RunOptions &opts,
                                              const ModelConfig &cfg,
                                              const Tokenizer &tokenizer) {
  const pb::Training &tr = opts.spec.training();
  TrainingData d;
  if (!opts.dataBlend.empty()) {
    megatron::MegatronDataConfig c;
    c.blend = opts.dataBlend;
    c.split = opts.split;
    c.batch = cfg.microBatch;
    c.seqLen = cfg.seq;
    c.microbatches = tr.grad_accum();
    c.steps = tr.steps();
    c.evalEvery = tr.eval_every();
    c.evalIters = opts.evalIters;
    c.seed = tr.seed();
    c.vocabSize = tokenizer.vocabSize();
    auto m = megatron::openMegatronData(c);
    if (!m)
      return m.takeError();
    d.train = std::move(m->train);
    d.valid = std::move(m->valid);
    return d;
  }
  auto dataset = TokenDataset::open(opts.dataPath, tokenizer, opts.outDir);
  if (!dataset)
    return dataset.takeError();
  SamplerConfig sc;
  sc.batch = cfg.microBatch;
  sc.seqLen = cfg.seq;
  sc.microbatches = tr.grad_accum();
  sc.seed = tr.seed();
  auto train = BatchSampler::create(dataset->train(), sc);
  if (!train)
    return train.takeError();
  sc.microbatches = 1;
  sc.seed = tr.seed() + 1;
  auto valid = BatchSampler::create(dataset->val(), sc);
  if (!valid)
    return valid.takeError();
  d.train = std::make_unique<BatchSampler>(std::move(*train));
  d.valid = std::make_unique<BatchSampler>(std::move(*valid));
  return d;
}

} // namespace strata
