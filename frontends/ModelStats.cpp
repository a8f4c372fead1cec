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

double megatronFlopsPerStep(const ModelConfig &c, int64_t batch) {
  double B = double(batch), s = double(c.seq), l = double(c.layers);
  double h = double(c.hidden), V = double(c.paddedVocab);
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

double megatronFlopsPerToken(const ModelConfig &c) {
  return megatronFlopsPerStep(c, 1) / double(c.seq);
}

} // namespace strata
