//===- Evaluate.cpp - Logits and held-out loss of a model -----------------===//
#include "runtime/train/Evaluate.h"

#include "frontends/Models.h"

#include <algorithm>
#include <cmath>

namespace strata {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Expected<std::unique_ptr<LogitsModel>>
LogitsModel::create(const ModelConfig &config,
                    const llvm::StringMap<const HostTensor *> &params, Device &device) {
  std::unique_ptr<LogitsModel> m(new LogitsModel);
  m->c_ = config;
  m->c_.microBatch = 1;
  m->c_.dropout = 0;
  m->g_ = buildModelGraph(m->c_);
  // The logits feed the loss; make them the output.
  const Node &ce = m->g_.node(m->g_.value(m->g_.outputs()[0]).defNode);
  m->g_.setOutputs({ce.operands[0]});
  const int64_t S = m->c_.seq;
  m->tokens_ = HostTensor(TensorType{DType::I32, {1, S}});
  m->labels_ = HostTensor(TensorType{DType::I32, {1, S}});
  for (ValueId v : m->g_.inputs()) {
    const Value &val = m->g_.value(v);
    if (val.name == "tokens") {
      m->ins_.push_back(m->tokens_.raw());
    } else if (val.name == "labels") {
      m->ins_.push_back(m->labels_.raw());
    } else if (auto it = params.find(val.name); it != params.end()) {
      if (it->second->type() != val.type)
        return err("parameter " + val.name + " is " + it->second->type().str() +
                   ", the model wants " + val.type.str());
      m->ins_.push_back(it->second->raw());
    } else {
      return err("no value for parameter " + val.name);
    }
  }
  auto interp = Executable::create(m->g_, device);
  if (!interp) return interp.takeError();
  m->interp_ = std::move(*interp);
  return m;
}

llvm::Expected<const float *> LogitsModel::run(llvm::ArrayRef<int32_t> ids) {
  if (ids.empty() || int64_t(ids.size()) > c_.seq)
    return err("a window holds 1 to " + llvm::Twine(c_.seq) + " tokens, got " +
               llvm::Twine(ids.size()));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= c_.vocab)
      return err("token id " + llvm::Twine(ids[i]) + " at position " + llvm::Twine(i) +
                 " is outside the vocabulary [0, " + llvm::Twine(c_.vocab) + ")");
  // Causal attention: the zeros after the last id do not change its logits.
  int32_t *t = tokens_.data<int32_t>();
  std::fill_n(t, c_.seq, 0);
  std::copy(ids.begin(), ids.end(), t);
  std::vector<void *> outs;
  if (auto e = interp_->run(ins_, outs)) return e;
  return static_cast<const float *>(outs[0]);
}

double EvalResult::perplexity() const { return std::exp(loss); }

llvm::Expected<EvalResult> evaluateTokens(LogitsModel &model,
                                          llvm::ArrayRef<int32_t> ids,
                                          int64_t stride) {
  const ModelConfig &c = model.config();
  const int64_t S = c.seq, N = int64_t(ids.size());
  if (stride < 1 || stride > S)
    return err("--stride must be in [1, seq_len = " + llvm::Twine(S) + "], got " +
               llvm::Twine(stride));
  if (N < 2) return err("the text has " + llvm::Twine(N) + " tokens; at least 2 are needed");
  EvalResult r;
  double nll = 0;
  int64_t scored = 0; // targets ids[1..scored] are done
  for (int64_t begin = 0; scored < N - 1; begin += stride) {
    // Inputs ids[begin, end) predict targets ids[begin+1, end+1).
    int64_t end = std::min(begin + S, N - 1);
    auto logits = model.run(ids.slice(begin, end - begin));
    if (!logits) return logits.takeError();
    ++r.windows;
    for (int64_t j = std::max(scored + 1, begin + 1); j <= end; ++j) {
      const float *row = *logits + (j - 1 - begin) * c.paddedVocab;
      // log-sum-exp over the real vocabulary, in double.
      double mx = *std::max_element(row, row + c.vocab), sum = 0;
      for (int64_t v = 0; v < c.vocab; ++v) sum += std::exp(double(row[v]) - mx);
      nll += mx + std::log(sum) - double(row[ids[j]]);
      ++r.tokens;
    }
    scored = end;
  }
  r.loss = nll / double(r.tokens);
  return r;
}

} // namespace strata
