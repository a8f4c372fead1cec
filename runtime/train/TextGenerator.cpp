//===- TextGenerator.cpp - Sampling text from a trained model --------------===//
#include "runtime/train/TextGenerator.h"

#include "frontends/Models.h"
#include "runtime/Executable.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace strata {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Expected<std::string>
generateText(const ModelConfig &config,
             const llvm::StringMap<const HostTensor *> &params,
             const Tokenizer &tokenizer, llvm::StringRef prompt,
             const SampleOptions &options, Device &device) {
  if (options.temperature <= 0)
    return err("temperature must be > 0 (got " +
               std::to_string(options.temperature) + ")");
  ModelConfig c = config;
  c.microBatch = 1;
  c.dropout = 0;
  Graph g = buildModelGraph(c);
  // The logits feed the loss; make them the output.
  const Node &ce = g.node(g.value(g.outputs()[0]).defNode);
  g.setOutputs({ce.operands[0]});
  auto interp = Executable::create(g, device);
  if (!interp) return interp.takeError();

  std::vector<int32_t> context;
  if (auto e = tokenizer.encode(prompt, context)) return e;
  if (context.empty()) context.push_back(0);
  size_t promptLen = context.size();

  const int64_t S = c.seq, V = c.vocab, Vp = c.paddedVocab;
  HostTensor tokens(TensorType{DType::I32, {1, S}});
  HostTensor labels(TensorType{DType::I32, {1, S}});
  std::vector<const void *> ins;
  for (ValueId v : g.inputs()) {
    const Value &val = g.value(v);
    if (val.name == "tokens") ins.push_back(tokens.raw());
    else if (val.name == "labels") ins.push_back(labels.raw());
    else if (auto it = params.find(val.name); it != params.end()) {
      if (it->second->type() != val.type)
        return err("parameter " + val.name + " is " + it->second->type().str() +
                   ", the model wants " + val.type.str());
      ins.push_back(it->second->raw());
    } else {
      return err("no value for parameter " + val.name);
    }
  }

  std::mt19937_64 rng(options.seed);
  std::vector<std::pair<float, int32_t>> cand(V);
  std::vector<void *> outs;
  for (int64_t n = 0; n < options.maxNewTokens; ++n) {
    // The window is left-aligned; causal attention makes the padding after
    // the last real token irrelevant to its logits.
    int64_t len = std::min<int64_t>(S, int64_t(context.size()));
    std::fill_n(tokens.data<int32_t>(), S, 0);
    std::copy(context.end() - len, context.end(), tokens.data<int32_t>());
    if (auto e = (*interp)->run(ins, outs)) return e;
    const float *logits = static_cast<const float *>(outs[0]) + (len - 1) * Vp;
    // Only real vocabulary entries are candidates (padding rows never are).
    for (int64_t v = 0; v < V; ++v)
      cand[v] = {float(logits[v] / options.temperature), int32_t(v)};
    int64_t k = options.topK > 0 ? std::min(options.topK, V) : V;
    std::partial_sort(cand.begin(), cand.begin() + k, cand.end(),
                      [](auto &a, auto &b) { return a.first > b.first; });
    double sum = 0;
    std::vector<double> p(k);
    for (int64_t j = 0; j < k; ++j) sum += p[j] = std::exp(double(cand[j].first - cand[0].first));
    double u = std::uniform_real_distribution<double>(0, sum)(rng);
    int64_t pick = 0;
    while (pick + 1 < k && (u -= p[pick]) > 0) ++pick;
    context.push_back(cand[pick].second);
  }
  return tokenizer.decode(llvm::ArrayRef<int32_t>(context).drop_front(promptLen));
}

} // namespace strata
