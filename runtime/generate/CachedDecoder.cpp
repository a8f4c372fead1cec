//===- CachedDecoder.cpp - Incremental decoding with a key/value cache ----===//
//
// The model of docs/models.md, one row per token, on runtime/kernels. The
// rows of a call are either one slot's prompt (positions 0..n-1) or one new
// token of each of several slots; both take the same path: projections as
// one GEMM over all rows, K and V written into the cache at each row's
// position, then attention of each row over its slot's cached positions
// 0..pos (which makes a prefill causal).
//
// Cache layout per (slot, layer): K then V, each [Hkv, S, D], so the keys
// of one kv head are a dense (positions, D) matrix: the G = Hq / Hkv query
// heads sharing it score against its rows, the softmax runs on (G, T) and
// the output is the (G, T) x (T, D) product, all on contiguous rows.
//
//===----------------------------------------------------------------------===//
#include "runtime/generate/Decoder.h"

#include "runtime/kernels/Kernels.h"

#include <algorithm>
#include <cmath>

namespace strata::generate {

using namespace kernels;

namespace {

template <typename T> T *grow(std::vector<T> &v, int64_t n) {
  if (int64_t(v.size()) < n)
    v.resize(size_t(n));
  return v.data();
}

/// y = x @ W (+ b per row). x is (n, in), W is (in, out), y is (n, out).
void linear(const float *x, const float *W, const float *b, float *y, int64_t n,
            int64_t in, int64_t out) {
  GemmArgs g;
  g.M = n, g.N = out, g.K = in;
  if (b) {
    for (int64_t r = 0; r < n; ++r)
      std::copy(b, b + out, y + r * out);
    g.beta = 1.0;
  }
  matmul(x, W, y, g);
}

/// x += y + b (b per row, may be null). x, y are (n, C).
void addResidual(float *x, const float *y, const float *b, int64_t n,
                 int64_t C) {
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < C; ++c)
      x[r * C + c] += y[r * C + c] + (b ? b[c] : 0.0f);
}

} // namespace

Decoder::~Decoder() = default;

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error Decoder::checkPrefill(int64_t slot,
                                  llvm::ArrayRef<int32_t> tokens) const {
  if (slot < 0 || slot >= slots())
    return err("slot " + llvm::Twine(slot) + " out of range");
  if (tokens.empty() || int64_t(tokens.size()) > config_.seq)
    return err("a prefill takes 1 to " + llvm::Twine(config_.seq) +
               " tokens (got " + llvm::Twine(tokens.size()) + ")");
  for (int32_t t : tokens)
    if (t < 0 || t >= config_.vocab)
      return err("token id " + llvm::Twine(t) +
                 " is outside the vocabulary [0, " +
                 llvm::Twine(config_.vocab) + ")");
  return llvm::Error::success();
}

llvm::Error Decoder::checkDecode(llvm::ArrayRef<int64_t> slots,
                                 llvm::ArrayRef<int32_t> tokens) const {
  if (slots.size() != tokens.size())
    return err("decode takes one token per slot");
  std::vector<bool> seen(lengths_.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    int64_t s = slots[i];
    if (s < 0 || s >= this->slots() || seen[size_t(s)])
      return err("decode slots must be distinct and in range");
    seen[size_t(s)] = true;
    if (length(s) == 0 || length(s) >= config_.seq)
      return err("slot " + llvm::Twine(s) + " holds " + llvm::Twine(length(s)) +
                 " tokens; decode needs 1 to " + llvm::Twine(config_.seq - 1));
    if (tokens[i] < 0 || tokens[i] >= config_.vocab)
      return err("token id " + llvm::Twine(tokens[i]) +
                 " is outside the vocabulary");
  }
  return llvm::Error::success();
}

CachedDecoder::CachedDecoder(const ModelWeights &weights, int64_t slots)
    : Decoder(weights.config, slots), w_(weights),
      kvStride_(config_.kvHeads * config_.seq * config_.headDim),
      cache_(size_t(slots * config_.layers * 2 * kvStride_)) {}

llvm::Error CachedDecoder::prefill(int64_t slot, llvm::ArrayRef<int32_t> tokens,
                                   bool allRows, float *logits) {
  if (auto e = checkPrefill(slot, tokens))
    return e;
  int64_t n = int64_t(tokens.size());
  std::vector<Row> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    rows[size_t(i)] = {slot, i};
  forward(rows, tokens, allRows ? 0 : n - 1, logits);
  lengths_[size_t(slot)] = n;
  return llvm::Error::success();
}

llvm::Error CachedDecoder::decode(llvm::ArrayRef<int64_t> slots,
                                  llvm::ArrayRef<int32_t> tokens,
                                  float *logits) {
  if (auto e = checkDecode(slots, tokens))
    return e;
  std::vector<Row> rows;
  for (int64_t s : slots)
    rows.push_back({s, length(s)});
  forward(rows, tokens, 0, logits);
  for (int64_t s : slots)
    ++lengths_[size_t(s)];
  return llvm::Error::success();
}

void CachedDecoder::forward(llvm::ArrayRef<Row> rows,
                            llvm::ArrayRef<int32_t> ids, int64_t firstLogitRow,
                            float *logits) {
  const ModelConfig &c = config_;
  int64_t n = int64_t(rows.size()), H = c.hidden, Vp = c.paddedVocab;
  // x = wte[ids] (+ wpe[pos] for GPT); x is (n, H).
  float *x = grow(x_, n * H);
  embeddingFwd(w_.wte, ids.data(), x, n, Vp, H);
  if (w_.wpe)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < H; ++i)
        x[r * H + i] += w_.wpe[rows[size_t(r)].pos * H + i];
  for (int64_t l = 0; l < c.layers; ++l)
    block(w_.layers[size_t(l)], l, rows);
  // logits = norm_f(x) @ head for the rows asked for; (m, Vp).
  int64_t m = n - firstLogitRow;
  float *h = grow(h_, n * H);
  const float *xs = x + firstLogitRow * H;
  if (c.isGPT())
    layerNormFwd(xs, w_.lnFW, w_.lnFB, h, m, H, c.normEps);
  else
    rmsNormFwd(xs, w_.lnFW, h, m, H, c.normEps);
  linear(h, w_.head, nullptr, logits, m, H, Vp);
}

void CachedDecoder::block(const LayerWeights &l, int64_t layer,
                          llvm::ArrayRef<Row> rows) {
  const ModelConfig &c = config_;
  int64_t n = int64_t(rows.size()), H = c.hidden, D = c.headDim, Hq = c.heads,
          Hkv = c.kvHeads, S = c.seq, G = Hq / Hkv;
  float *x = x_.data(), *h = grow(h_, n * H);
  float *q = grow(q_, n * Hq * D), *k = grow(k_, n * Hkv * D),
        *v = grow(v_, n * Hkv * D), *att = grow(att_, n * Hq * D);

  // q, k, v = norm1(x) @ Wq, Wk, Wv (+ biases for GPT).
  if (c.isGPT())
    layerNormFwd(x, l.ln1W, l.ln1B, h, n, H, c.normEps);
  else
    rmsNormFwd(x, l.ln1W, h, n, H, c.normEps);
  linear(h, l.qW, l.qB, q, n, H, Hq * D);
  linear(h, l.kW, l.kB, k, n, H, Hkv * D);
  linear(h, l.vW, l.vB, v, n, H, Hkv * D);
  kernels::RopeScaling
      sc; // Llama-3.1 frequencies, as the graph's rope computes them
  if (c.ropeScaling.factor > 0)
    sc = {c.ropeScaling.factor, c.ropeScaling.lowFreqFactor,
          c.ropeScaling.highFreqFactor, c.ropeScaling.originalMaxPositions};
  for (int64_t r = 0; r < n; ++r) {
    const Row &row = rows[size_t(r)];
    if (!c.isGPT()) {
      ropeFwd(q + r * Hq * D, q + r * Hq * D, 1, 1, Hq, D, c.ropeTheta, row.pos,
              sc);
      ropeFwd(k + r * Hkv * D, k + r * Hkv * D, 1, 1, Hkv, D, c.ropeTheta,
              row.pos, sc);
    }
    float *K = kvAt(row.slot, layer), *V = K + kvStride_;
    for (int64_t g = 0; g < Hkv; ++g) {
      std::copy_n(k + (r * Hkv + g) * D, D, K + (g * S + row.pos) * D);
      std::copy_n(v + (r * Hkv + g) * D, D, V + (g * S + row.pos) * D);
    }
  }

  // att = softmax(scale q K^T) V per (row, kv head), over positions 0..pos:
  // one query row against T cached rows is a GEMV, so the products are
  // plain loops over the dense K and V rows (BLAS calls cost more than
  // they compute at these sizes); the softmax is the kernel library's.
  float scale = float(1.0 / std::sqrt(double(D)));
  parallelFor(0, n * Hkv, 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> p;
    for (int64_t t = lo; t < hi; ++t) {
      int64_t r = t / Hkv, g = t % Hkv, T = rows[size_t(r)].pos + 1;
      const float *K = kvAt(rows[size_t(r)].slot, layer) + g * S * D;
      const float *V = K + kvStride_;
      const float *qg = q + (r * Hq + g * G) * D;
      float *out = att + (r * Hq + g * G) * D;
      p.resize(size_t(G * T));
      for (int64_t j = 0; j < G; ++j)
        for (int64_t u = 0; u < T; ++u) {
          float dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int64_t d = 0; d < D; ++d)
            dot += qg[j * D + d] * K[u * D + d];
          p[size_t(j * T + u)] = dot * scale;
        }
      softmaxFwd(p.data(), p.data(), G, T);
      std::fill_n(out, G * D, 0.0f);
      for (int64_t j = 0; j < G; ++j)
        for (int64_t u = 0; u < T; ++u) {
          float w = p[size_t(j * T + u)];
#pragma omp simd
          for (int64_t d = 0; d < D; ++d)
            out[j * D + d] += w * V[u * D + d];
        }
    }
  });
  // x += att @ Wo (+ bo).
  linear(att, l.oW, nullptr, h, n, Hq * D, H);
  addResidual(x, h, l.oB, n, H);

  // GPT: x += gelu(norm2(x) @ fc1 + b1) @ fc2 + b2;
  // Llama: x += (silu(norm2(x) @ gate) * (norm2(x) @ up)) @ down.
  int64_t F = c.ffn;
  float *f1 = grow(ff1_, n * F), *f2 = grow(ff2_, n * F);
  if (c.isGPT()) {
    layerNormFwd(x, l.ln2W, l.ln2B, h, n, H, c.normEps);
    linear(h, l.fc1W, l.fc1B, f1, n, H, F);
    unaryFwd(UnaryOp::GeluTanh, f1, f1, n * F);
    linear(f1, l.fc2W, nullptr, h, n, F, H);
    addResidual(x, h, l.fc2B, n, H);
  } else {
    rmsNormFwd(x, l.ln2W, h, n, H, c.normEps);
    linear(h, l.gateW, nullptr, f1, n, H, F);
    linear(h, l.upW, nullptr, f2, n, H, F);
    unaryFwd(UnaryOp::Silu, f1, f1, n * F);
    for (int64_t i = 0; i < n * F; ++i)
      f1[i] *= f2[i];
    linear(f1, l.downW, nullptr, h, n, F, H);
    addResidual(x, h, nullptr, n, H);
  }
}

} // namespace strata::generate
