//===- ModelStats.cpp - Parameter counts and FLOPs of a model -------------===//
#include "frontends/ModelStats.h"

#include "llvm/ADT/StringRef.h"

namespace strata {

ParamStats countParams(const Graph &g) {
  ParamStats s;
  for (ValueId v : g.params()) {
    llvm::StringRef name = g.value(v).name;
    int64_t n = g.type(v).numElements();
    s.total += n;
    if (name == "wte" || name == "wpe") {
      s.embedding += n;
    } else if (name.startswith("ln_f.")) {
      s.finalNorm += n;
    } else if (name.startswith("lm_head.")) {
      s.head += n;
    } else if (name.consume_front("layers.")) {
      // layers.<i>.<part>...
      auto [index, part] = name.split('.');
      size_t i;
      if (index.getAsInteger(10, i)) {
        s.other += n;
        continue;
      }
      if (s.layers.size() <= i)
        s.layers.resize(i + 1);
      if (part.startswith("attn."))
        s.layers[i].attention += n;
      else if (part.startswith("mlp."))
        s.layers[i].mlp += n;
      else if (part.startswith("ln"))
        s.layers[i].norms += n;
      else
        s.other += n;
    } else {
      s.other += n;
    }
  }
  return s;
}

namespace {
/// Forward FLOPs of one block's matmuls per token (without attention's
/// s² terms), and of attention's scores and values per token.
struct BlockFlops {
  double matmuls, attention;
};
BlockFlops blockFlopsPerToken(const ModelConfig &c) {
  double h = double(c.hidden), q = double(c.heads * c.headDim),
         kv = double(c.kvHeads * c.headDim), f = double(c.ffn);
  double mlpMatrices = c.isGPT() || c.isFalcon() ? 2 : 3; // Llama: SwiGLU
  return {2 * (h * q + 2 * h * kv + q * h + mlpMatrices * h * f),
          4 * double(c.seq) * q};
}
} // namespace

double modelFlopsPerStep(const ModelConfig &c, int64_t batch) {
  BlockFlops b = blockFlopsPerToken(c);
  double tokens = double(batch) * double(c.seq);
  double forward = double(c.layers) * (b.matmuls + b.attention) +
                   2 * double(c.hidden) * double(c.paddedVocab);
  return 3 * tokens * forward;
}

double recomputeFlopsPerStep(const ModelConfig &c, int64_t batch, bool full) {
  BlockFlops b = blockFlopsPerToken(c);
  double tokens = double(batch) * double(c.seq);
  return tokens * double(c.layers) *
         (full ? b.matmuls + b.attention : b.attention);
}

} // namespace strata
