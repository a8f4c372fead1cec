//===- Sampler.cpp - Choosing the next token from logits ------------------===//
#include "runtime/generate/Sampler.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

namespace strata::generate {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error checkSamplingParams(const SamplingParams &p, bool flagStyle) {
  auto name = [&](const char *flag, const char *field) {
    return std::string(flagStyle ? flag : field);
  };
  auto num = [](double v) { return llvm::formatv("{0}", v).str(); };
  if (!std::isfinite(p.temperature) || p.temperature < 0 || p.temperature > 100)
    return err(name("--temperature", "temperature") +
               " must be a number in [0, 100] (got " + num(p.temperature) +
               "; 0 is greedy decoding)");
  if (p.topK < 0)
    return err(name("--top-k", "top_k") + " must be >= 0 (got " +
               llvm::Twine(p.topK) + "; 0 keeps every token)");
  if (!std::isfinite(p.topP) || p.topP <= 0 || p.topP > 1)
    return err(name("--top-p", "top_p") + " must be in (0, 1] (got " +
               num(p.topP) + "; 1 keeps every token)");
  return llvm::Error::success();
}

double logSumExp(const float *logits, int64_t n) {
  double mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i)
    mx = std::max(mx, double(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(double(logits[i]) - mx);
  return mx + std::log(sum);
}

std::vector<TokenProb> samplingDistribution(const float *logits, int64_t V,
                                            const SamplingParams &p) {
  std::vector<TokenProb> cand(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v)
    cand[size_t(v)] = {int32_t(v), double(logits[v]) / p.temperature};
  auto before = [](const TokenProb &a, const TokenProb &b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  };
  int64_t k = p.topK > 0 ? std::min(p.topK, V) : V;
  std::partial_sort(cand.begin(), cand.begin() + k, cand.end(), before);
  cand.resize(size_t(k));
  // Softmax over the top k (the scaled logits, max first).
  double mx = cand[0].second, sum = 0;
  for (TokenProb &c : cand)
    sum += c.second = std::exp(c.second - mx);
  for (TokenProb &c : cand)
    c.second /= sum;
  if (p.topP < 1) {
    // Keep tokens while the mass before them is below p.
    double mass = 0;
    size_t keep = 0;
    while (keep < cand.size() && mass < p.topP)
      mass += cand[keep++].second;
    cand.resize(keep);
    for (TokenProb &c : cand)
      c.second /= mass;
  }
  return cand;
}

Sampler::Sampler(const SamplingParams &p, uint64_t index)
    : p_(p), rng_(p.seed + 0x9E3779B97F4A7C15ull * index) {}

int32_t Sampler::next(const float *logits, int64_t V) {
  if (p_.temperature == 0)
    return int32_t(std::max_element(logits, logits + V) - logits);
  double u = std::uniform_real_distribution<double>(0, 1)(rng_);
  if (p_.topK == 0 && p_.topP >= 1) {
    // Temperature alone needs no order: draw over the ids as they are (no
    // sort of a 50K vocabulary per token).
    double mx = *std::max_element(logits, logits + V), sum = 0;
    std::vector<double> w(static_cast<size_t>(V));
    for (int64_t v = 0; v < V; ++v)
      sum += w[size_t(v)] = std::exp((double(logits[v]) - mx) / p_.temperature);
    u *= sum;
    for (int64_t v = 0; v < V; ++v) {
      if (u < w[size_t(v)])
        return int32_t(v);
      u -= w[size_t(v)];
    }
    return int32_t(V - 1); // rounding left u just above the total
  }
  std::vector<TokenProb> dist = samplingDistribution(logits, V, p_);
  for (const TokenProb &c : dist) {
    if (u < c.second)
      return c.first;
    u -= c.second;
  }
  return dist.back().first; // rounding left u just above the total
}

} // namespace strata::generate
