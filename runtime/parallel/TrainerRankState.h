//===- TrainerRankState.h - One device's part of a training run -----------===//
//
// Private to the trainer (Trainer.cpp runs the programs, TrainerState.cpp
// moves state and gradients in and out): a local rank's programs,
// workspace, state, stash and batch blocks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Executable.h"
#include "runtime/parallel/Trainer.h"

#include "llvm/ADT/StringSet.h"

namespace strata {

/// One local rank: its programs, state, stash and batch blocks.
struct Trainer::RankState {
  int64_t pipeRank = 0, stageRank = 0; // pp coordinate; rank in stageMesh_
  std::vector<int64_t> stages;         // virtual stage of each chunk
  Device *device = nullptr;
  std::vector<std::unique_ptr<Executable>> fwd, bwd, evalFwd; // by chunk
  std::unique_ptr<Executable> opt;
  /// The arena every program of the rank runs in, one at a time.
  void *workspace = nullptr;
  int64_t workspaceBytes = 0;
  HostTensor lossOut = HostTensor::scalar(0), normOut = HostTensor::scalar(0);
  llvm::StringMap<HostTensor> p, m, v, grads; // held parameters, local types
  /// Parameters whose gradient buffer a B program wrote this step.
  llvm::StringSet<> gradsWritten;
  /// Optimizer outputs that cannot be written in place, by output name.
  llvm::StringMap<HostTensor> staging;
  std::vector<std::vector<std::vector<HostTensor>>> stash; // [chunk][micro]
  /// Per chunk: stash slot sets free for the next F.
  std::vector<std::vector<std::vector<HostTensor>>> stashPool;
  std::vector<HostTensor> tokens, labels;                  // per microbatch
  double loss = 0; // the head's loss summed over microbatches
  double gradNorm = 0;
  int64_t stashHeld = 0;    // bytes of `stash`
  int64_t messagesHeld = 0; // bytes of eager sends not yet waited for
  MeasuredMemory memory;    // of the last step
  bool measuring = false;   // during a step

  void held() {
    if (!measuring)
      return;
    memory.maxStash = std::max(memory.maxStash, stashHeld);
    memory.messages = std::max(memory.messages, messagesHeld);
    memory.maxHeld = std::max(memory.maxHeld, stashHeld + messagesHeld);
  }

  ~RankState() {
    if (workspace)
      device->deallocate(workspace);
  }
  /// Grows the workspace to hold `bytes` (between runs).
  void reserve(int64_t bytes) {
    if (bytes <= workspaceBytes)
      return;
    if (workspace)
      device->deallocate(workspace);
    workspace = device->allocate(bytes);
    workspaceBytes = bytes;
  }
};

/// acc += g, elementwise in f32 (gradient sums).
inline void addInto(HostTensor &acc, const void *g) {
  float *a = acc.data<float>();
  const float *x = static_cast<const float *>(g);
  for (int64_t j = 0, n = acc.numElements(); j < n; ++j)
    a[j] += x[j];
}

} // namespace strata
