//===- Evaluate.cpp - Logits and held-out loss of a model -----------------===//
#include "runtime/train/Evaluate.h"

#include <algorithm>
#include <cmath>

namespace strata {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

double EvalResult::perplexity() const { return std::exp(loss); }

llvm::Expected<EvalResult> evaluateTokens(LogitsModel &model,
                                          llvm::ArrayRef<int32_t> ids,
                                          int64_t stride) {
  const ModelConfig &c = model.config();
  const int64_t S = c.seq, N = int64_t(ids.size());
  if (stride < 1 || stride > S)
    return err("--stride must be in [1, seq_len = " + llvm::Twine(S) +
               "], got " + llvm::Twine(stride));
  if (N < 2)
    return err("the text has " + llvm::Twine(N) +
               " tokens; at least 2 are needed");
  EvalResult r;
  double nll = 0;
  int64_t scored = 0; // targets ids[1..scored] are done
  for (int64_t begin = 0; scored < N - 1; begin += stride) {
    // Inputs ids[begin, end) predict targets ids[begin+1, end+1).
    int64_t end = std::min(begin + S, N - 1);
    auto logits = model.run(ids.slice(begin, end - begin));
    if (!logits)
      return logits.takeError();
    ++r.windows;
    for (int64_t j = std::max(scored + 1, begin + 1); j <= end; ++j) {
      const float *row = *logits + (j - 1 - begin) * c.paddedVocab;
      // log-sum-exp over the real vocabulary, in double.
      double mx = *std::max_element(row, row + c.vocab), sum = 0;
      for (int64_t v = 0; v < c.vocab; ++v)
        sum += std::exp(double(row[v]) - mx);
      nll += mx + std::log(sum) - double(row[ids[j]]);
      ++r.tokens;
    }
    scored = end;
  }
  r.loss = nll / double(r.tokens);
  return r;
}

} // namespace strata
