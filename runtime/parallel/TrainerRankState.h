//===- TrainerRankState.h - One device's part of a training run -----------===//
//
// Private to the trainer (Trainer.cpp runs the programs, TrainerState.cpp
// moves state and gradients in and out): a local rank's programs,
// workspace, state, stash and batch blocks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/DeviceBuffer.h"
#include "runtime/Executable.h"
#include "runtime/parallel/GradReducer.h"
#include "runtime/parallel/ParamGatherer.h"
#include "runtime/parallel/Trainer.h"

#include "llvm/ADT/StringSet.h"

namespace strata {

using StashSlots = std::vector<DeviceBuffer>; // one F's stash outputs

/// One local rank: its programs, state, stash and batch blocks, all in its
/// device's memory.
struct Trainer::RankState {
  int64_t pipeRank = 0, stageRank = 0; // pp coordinate; rank in stageMesh_
  std::vector<int64_t> stages;         // virtual stage of each chunk
  Device *device = nullptr;
  std::vector<std::unique_ptr<Executable>> fwd, bwd, evalFwd; // by chunk
  std::unique_ptr<Executable> opt;
  /// The arena every program of the rank runs in, one at a time.
  void *workspace = nullptr;
  int64_t workspaceBytes = 0;
  /// The head's loss of each microbatch, and the optimizer's scalars: read
  /// back (losses, norm) or written (lr, step) once per step.
  DeviceBuffer losses, lr, stepCount, norm;
  /// The host side of lr and step: it outlives their enqueued copies.
  HostTensor lrHost, stepHost;
  /// The head's B input %loss_scale and its host side (loss scaling).
  DeviceBuffer lossScale;
  HostTensor lossScaleHost;
  llvm::StringMap<DeviceBuffer> p, m, v, grads; // held parameters, local types
  /// Lays `grads` out in buckets and reduces them over dp in place.
  std::unique_ptr<GradReducer> reducer;
  /// ZeRO-1: gathers the updated parameter shards into `p`.
  std::unique_ptr<ParamGatherer> gatherer;
  /// Per optimizer output: whether it is written over the state it
  /// replaces; else into its staging buffer, then copied.
  std::vector<bool> optInPlace;
  std::vector<DeviceBuffer> staging;
  std::vector<std::vector<StashSlots>> stash; // [chunk][micro]
  /// Per chunk: stash slot sets free for the next F.
  std::vector<std::vector<StashSlots>> stashPool;
  std::vector<DeviceBuffer> tokens, labels; // per microbatch
  bool headLosses = false;  // whether `losses` holds this step's
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
  /// The state buffer a role binds to (parameter, gradient, moments).
  llvm::StringMap<DeviceBuffer> *state(Role role) {
    switch (role) {
    case Role::Parameter:
    case Role::NewParameter:
      return &p;
    case Role::Gradient:
      return &grads;
    case Role::AdamM:
    case Role::NewAdamM:
      return &m;
    case Role::AdamV:
    case Role::NewAdamV:
      return &v;
    default:
      return nullptr;
    }
  }
};

/// The contents of `b` on the host (synchronizes its device).
llvm::Expected<HostTensor> readBack(const DeviceBuffer &b);

} // namespace strata
