//===- Decoder.h - Next-token logits for sequences in flight
//---------------===//
//
// A Decoder holds up to `slots()` sequences and returns the logits that
// follow each. Two implementations compute the same function:
//  - CachedDecoder: incremental decoding with a key/value cache. A prefill
//    runs the prompt in one pass and stores every layer's K and V; each new
//    token then costs one position (its projections, attention over the
//    cached keys and values, RoPE at its own position for Llama, grouped
//    query heads reading their shared kv head).
//  - GraphDecoder: the reference without a cache: every call runs the
//    model's forward graph (frontends/, the training runtime's interpreter)
//    on the slot's whole window.
// A slot holds at most config.seq tokens; the caller (Engine) decides what
// happens beyond that (docs/generation.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"
#include "runtime/generate/ModelWeights.h"

#include "ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace strata {
class LogitsModel;
}

namespace strata::generate {

class Decoder {
public:
  explicit Decoder(const ModelConfig &config, int64_t slots)
      : config_(config), lengths_(size_t(slots), 0) {}
  virtual ~Decoder();

  const ModelConfig &config() const { return config_; }
  int64_t slots() const { return int64_t(lengths_.size()); }
  /// Tokens held by `slot`.
  int64_t length(int64_t slot) const { return lengths_[size_t(slot)]; }

  /// Starts `slot` over with `tokens` at positions 0..n-1, 1 <= n <= seq.
  /// Writes the logits (Vp floats per row) of the last row, or of every row
  /// when `allRows`, to `logits`.
  virtual llvm::Error prefill(int64_t slot, llvm::ArrayRef<int32_t> tokens,
                              bool allRows, float *logits) = 0;
  /// Appends tokens[i] to slots[i] (distinct slots, each holding fewer than
  /// seq tokens) and writes row i of `logits` (n x Vp).
  virtual llvm::Error decode(llvm::ArrayRef<int64_t> slots,
                             llvm::ArrayRef<int32_t> tokens, float *logits) = 0;

protected:
  /// Checks the arguments of prefill / decode against the slots.
  llvm::Error checkPrefill(int64_t slot, llvm::ArrayRef<int32_t> tokens) const;
  llvm::Error checkDecode(llvm::ArrayRef<int64_t> slots,
                          llvm::ArrayRef<int32_t> tokens) const;

  ModelConfig config_;
  std::vector<int64_t> lengths_;
};

/// Incremental decoding with a key/value cache on the CPU kernels.
class CachedDecoder final : public Decoder {
public:
  /// `weights` must outlive the decoder. The cache takes
  /// slots * layers * 2 * kvHeads * seq * headDim floats.
  CachedDecoder(const ModelWeights &weights, int64_t slots);

  llvm::Error prefill(int64_t slot, llvm::ArrayRef<int32_t> tokens,
                      bool allRows, float *logits) override;
  llvm::Error decode(llvm::ArrayRef<int64_t> slots,
                     llvm::ArrayRef<int32_t> tokens, float *logits) override;

  /// Bytes of the key/value cache.
  int64_t cacheBytes() const { return int64_t(cache_.size() * sizeof(float)); }

private:
  /// One token of a forward pass: its slot and position.
  struct Row {
    int64_t slot, pos;
  };
  /// Runs `ids` at `rows` through the model, appending their K/V to the
  /// cache, and writes the logits of rows [firstLogitRow, n) to `logits`.
  void forward(llvm::ArrayRef<Row> rows, llvm::ArrayRef<int32_t> ids,
               int64_t firstLogitRow, float *logits);
  void block(const LayerWeights &l, int64_t layer, llvm::ArrayRef<Row> rows);
  /// The cached keys (values: +kvStride_) of `layer` in `slot`, kv head 0.
  float *kvAt(int64_t slot, int64_t layer) {
    return cache_.data() + (slot * config_.layers + layer) * 2 * kvStride_;
  }

  const ModelWeights &w_;
  int64_t kvStride_; ///< floats of K (or V) per (slot, layer): Hkv * S * D
  std::vector<float> cache_;
  // Scratch of the last forward pass, grown on demand.
  std::vector<float> x_, h_, q_, k_, v_, att_, ff1_, ff2_;
};

/// The reference: runs the forward graph on each slot's whole window.
class GraphDecoder final : public Decoder {
public:
  static llvm::Expected<std::unique_ptr<GraphDecoder>>
  create(const ModelConfig &config,
         const llvm::StringMap<const HostTensor *> &params, Device &device,
         int64_t slots);
  ~GraphDecoder() override;

  llvm::Error prefill(int64_t slot, llvm::ArrayRef<int32_t> tokens,
                      bool allRows, float *logits) override;
  llvm::Error decode(llvm::ArrayRef<int64_t> slots,
                     llvm::ArrayRef<int32_t> tokens, float *logits) override;

private:
  GraphDecoder(const ModelConfig &config, int64_t slots);
  /// Runs the model on `slot`'s window; returns its [window, Vp] logits.
  llvm::Expected<const float *> run(int64_t slot);

  std::unique_ptr<LogitsModel> model_;
  std::vector<std::vector<int32_t>> windows_;
};

} // namespace strata::generate
