//===- LogitsModel.cpp - A model's logits for a window of token ids -------===//
#include "runtime/generate/LogitsModel.h"

#include "frontends/Models.h"

#include <algorithm>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

llvm::Expected<std::unique_ptr<LogitsModel>>
LogitsModel::create(const ModelConfig &config,
                    const llvm::StringMap<const HostTensor *> &params,
                    Device &device) {
  std::unique_ptr<LogitsModel> m(new LogitsModel);
  m->c_ = config;
  m->c_.microBatch = 1;
  m->c_.dropout = 0;
  m->g_ = buildModelGraph(m->c_);
  // The logits feed the loss; make them the output.
  const Node &ce = m->g_.node(m->g_.value(m->g_.outputs()[0]).defNode);
  m->g_.setOutputs({ce.operands[0]});
  for (size_t i = 0; i < m->g_.inputs().size(); ++i) {
    const Value &val = m->g_.value(m->g_.inputs()[i]);
    m->inputs_.emplace_back(device, val.type);
    if (val.name == "tokens" || val.name == "labels") {
      // Labels only feed the loss (computed, not an output): valid ids.
      if (val.name == "tokens")
        m->tokensInput_ = i;
      device.fill(m->inputs_.back().data(), val.type.bytes(), 0);
      continue;
    }
    auto it = params.find(val.name);
    if (it == params.end())
      return err("no value for parameter " + val.name);
    if (it->second->type() != val.type)
      return err("parameter " + val.name + " is " + it->second->type().str() +
                 ", the model wants " + val.type.str());
    m->inputs_.back().fromHost(*it->second);
  }
  if (auto e = device.synchronize()) // the copies read `params`
    return e;
  auto exe = Executable::create(m->g_, device);
  if (!exe)
    return exe.takeError();
  m->exe_ = std::move(*exe);
  m->tokens_.assign(size_t(m->c_.seq), 0);
  return m;
}

llvm::Expected<const float *> LogitsModel::run(llvm::ArrayRef<int32_t> ids) {
  if (ids.empty() || int64_t(ids.size()) > c_.seq)
    return err("a window holds 1 to " + llvm::Twine(c_.seq) + " tokens, got " +
               llvm::Twine(ids.size()));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= c_.vocab)
      return err("token id " + llvm::Twine(ids[i]) + " at position " +
                 llvm::Twine(i) + " is outside the vocabulary [0, " +
                 llvm::Twine(c_.vocab) + ")");
  std::fill(tokens_.begin(), tokens_.end(), 0);
  std::copy(ids.begin(), ids.end(), tokens_.begin());
  Device &dev = exe_->device();
  DeviceBuffer &tokens = inputs_[tokensInput_];
  dev.copyFromHost(tokens.data(), tokens_.data(), tokens.bytes());
  std::vector<const void *> ins;
  for (const DeviceBuffer &b : inputs_)
    ins.push_back(b.data());
  std::vector<void *> outs;
  if (auto e = exe_->enqueue(ins, {}, nullptr, outs, {}))
    return e;
  size_t n = ids.size() * size_t(c_.paddedVocab);
  logits_.resize(n);
  dev.copyToHost(logits_.data(), outs[0], int64_t(n * sizeof(float)));
  if (auto e = dev.synchronize())
    return e;
  return logits_.data();
}

} // namespace strata
