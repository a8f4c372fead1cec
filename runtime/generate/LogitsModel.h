//===- LogitsModel.h - A model's logits for a window of token ids ---------===//
//
// The forward graph at batch 1 without dropout, with the LM head's logits
// as its output, bound to a device: the parameters are copied into device
// buffers once; each run copies the ids in and the logits of the window's
// rows back. What `strata eval`, the uncached decoder and the training
// run's text sample run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "runtime/DeviceBuffer.h"
#include "runtime/Executable.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace strata {

/// A model that maps up to seq_len token ids to logits.
class LogitsModel {
public:
  /// `params` maps every parameter name of `config`'s model to a tensor of
  /// its type; the error names a missing or mis-typed one.
  static llvm::Expected<std::unique_ptr<LogitsModel>>
  create(const ModelConfig &config,
         const llvm::StringMap<const HostTensor *> &params, Device &device);

  /// Logits [ids.size(), paddedVocab] (row-major host memory, valid until
  /// the next call) of 1 <= ids.size() <= seq_len ids, each below the
  /// vocabulary. Causal attention: positions after the ids do not matter.
  llvm::Expected<const float *> run(llvm::ArrayRef<int32_t> ids);

  const ModelConfig &config() const { return c_; }

private:
  LogitsModel() = default;
  ModelConfig c_;
  Graph g_;
  std::unique_ptr<Executable> exe_;
  std::vector<DeviceBuffer> inputs_; // by graph input
  size_t tokensInput_ = 0;
  std::vector<int32_t> tokens_; // the window, on the host
  std::vector<float> logits_;   // rows of the last run, on the host
};

} // namespace strata
