//===- GraphDecoder.cpp - Next-token logits by the whole forward graph ----===//
//
// The reference the key/value cache is tested against, and `strata generate
// --no-kv-cache`: the model's forward graph (batch 1, the spec's seq) runs
// on the interpreter for every new token. The window is left-aligned and
// padded with token 0; causal attention makes the padding after the last
// real token irrelevant to the logits of the real rows.
//
//===----------------------------------------------------------------------===//
#include "runtime/generate/Decoder.h"

#include "frontends/Models.h"
#include "runtime/Executable.h"

#include <algorithm>

namespace strata::generate {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

GraphDecoder::GraphDecoder(const ModelConfig &config, int64_t slots)
    : Decoder(config, slots), windows_(static_cast<size_t>(slots)) {}

GraphDecoder::~GraphDecoder() = default;

llvm::Expected<std::unique_ptr<GraphDecoder>>
GraphDecoder::create(const ModelConfig &config,
                     const llvm::StringMap<const HostTensor *> &params,
                     Device &device, int64_t slots) {
  ModelConfig c = config;
  c.microBatch = 1;
  c.dropout = 0;
  std::unique_ptr<GraphDecoder> d(new GraphDecoder(c, slots));
  d->graph_ = buildModelGraph(c);
  // The logits feed the loss; make them the output.
  Graph &g = d->graph_;
  const Node &ce = g.node(g.value(g.outputs()[0]).defNode);
  g.setOutputs({ce.operands[0]});
  d->tokens_ = HostTensor(TensorType{DType::I32, {1, c.seq}});
  d->labels_ = HostTensor(TensorType{DType::I32, {1, c.seq}});
  for (ValueId v : g.inputs()) {
    const Value &val = g.value(v);
    if (val.name == "tokens") {
      d->inputs_.push_back(d->tokens_.raw());
    } else if (val.name == "labels") {
      d->inputs_.push_back(d->labels_.raw());
    } else if (auto it = params.find(val.name); it != params.end()) {
      if (it->second->type() != val.type)
        return err("parameter " + val.name + " is " +
                   it->second->type().str() + ", the model wants " +
                   val.type.str());
      d->inputs_.push_back(it->second->raw());
    } else {
      return err("the checkpoint has no parameter " + val.name);
    }
  }
  auto interp = Executable::create(g, device);
  if (!interp)
    return interp.takeError();
  d->interp_ = std::move(*interp);
  return d;
}

llvm::Expected<const float *> GraphDecoder::run(int64_t slot) {
  const std::vector<int32_t> &w = windows_[size_t(slot)];
  int32_t *t = tokens_.data<int32_t>();
  std::fill_n(t, config_.seq, 0);
  std::copy(w.begin(), w.end(), t);
  std::vector<void *> outs;
  if (auto e = interp_->run(inputs_, outs))
    return e;
  return static_cast<const float *>(outs[0]);
}

llvm::Error GraphDecoder::prefill(int64_t slot, llvm::ArrayRef<int32_t> tokens,
                                  bool allRows, float *logits) {
  if (auto e = checkPrefill(slot, tokens))
    return e;
  windows_[size_t(slot)].assign(tokens.begin(), tokens.end());
  lengths_[size_t(slot)] = int64_t(tokens.size());
  auto out = run(slot);
  if (!out)
    return out.takeError();
  int64_t Vp = config_.paddedVocab, n = int64_t(tokens.size());
  int64_t first = allRows ? 0 : n - 1;
  std::copy(*out + first * Vp, *out + n * Vp, logits);
  return llvm::Error::success();
}

llvm::Error GraphDecoder::decode(llvm::ArrayRef<int64_t> slots,
                                 llvm::ArrayRef<int32_t> tokens,
                                 float *logits) {
  if (auto e = checkDecode(slots, tokens))
    return e;
  int64_t Vp = config_.paddedVocab;
  for (size_t i = 0; i < slots.size(); ++i) {
    int64_t s = slots[i];
    windows_[size_t(s)].push_back(tokens[i]);
    int64_t n = ++lengths_[size_t(s)];
    auto out = run(s);
    if (!out)
      return out.takeError();
    std::copy(*out + (n - 1) * Vp, *out + n * Vp, logits + int64_t(i) * Vp);
  }
  return llvm::Error::success();
}

} // namespace strata::generate
