//===- TrainerSchedule.cpp - Running a step's schedule on the ranks -------===//
//
// The Trainer's instruction loop: each rank's stream of pipeline
// instructions (forward, backward, send / recv, optimizer) enqueued on its
// device, and the sends' completions waited for.
//
//===----------------------------------------------------------------------===//
#include "runtime/parallel/Trainer.h"

#include "runtime/comm/CollectiveKernels.h"
#include "runtime/parallel/SendCompletion.h"
#include "runtime/parallel/Sharded.h"
#include "runtime/parallel/TrainerRankState.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

llvm::Error Trainer::runInstr(RankState &r, size_t local, const Instr &in,
                              uint64_t counterBase, StepStats *stats,
                              bool eval) {
  if (in.kind == Instr::Optimizer)
    return runOptimizer(r, local, stats->lr);
  TraceScope scope(trace_, group_.globalRank(local), "device stream 0",
                   (eval ? "eval " : "") + in.str(), "program");
  const PipelineStage &st = plan_->pipeline.stages[r.stages[in.chunk]];
  bool forward = in.kind == Instr::Forward;
  const PipelineStage &est = eval ? eval_->pipeline.stages[st.index] : st;
  const Graph &g = forward ? est.forward : st.backward;
  const ProgramBindings &b =
      forward ? est.forwardBindings : st.backwardBindings;
  Executable &prog =
      eval ? *r.evalFwd[in.chunk] : *(forward ? r.fwd : r.bwd)[in.chunk];
  StashSlots &stash = r.stash[in.chunk][in.microbatch];
  std::vector<const void *> ins;
  for (const Binding &x : b.inputs) {
    switch (x.role) {
    case Role::Tokens:
    case Role::Labels:
      ins.push_back(
          (x.role == Role::Tokens ? r.tokens : r.labels)[in.microbatch].data());
      continue;
    case Role::Parameter:
      ins.push_back(r.p[x.name].data());
      continue;
    case Role::LossScale:
      ins.push_back(r.lossScale.data());
      continue;
    case Role::Stash:
      ins.push_back(
          stash[llvm::find(st.stash, x.name) - st.stash.begin()].data());
      continue;
    case Role::Gradient: {
      // B adds its microbatch's gradient into the step's buffer in place.
      auto it = r.grads.find(x.name);
      if (it == r.grads.end())
        return err("@" + g.name + " accumulates into the gradient of %" +
                   x.name + ", which this rank does not hold");
      ins.push_back(it->second.data());
      continue;
    }
    default:
      return err("@" + g.name + ": no " + roleName(x.role) + " input here");
    }
  }
  LaunchContext base;
  base.seed = opts_.seed;
  base.step = counterBase + uint64_t(in.microbatch);
  base.microbatch = uint64_t(in.microbatch);
  std::vector<void *> bound(b.outputs.size(), nullptr), outs;
  if (forward && !eval) {
    // F writes its stash slots (from the chunk's pool; back to it after B).
    auto &pool = r.stashPool[in.chunk];
    if (!pool.empty()) {
      stash = std::move(pool.back());
      pool.pop_back();
    } else {
      for (size_t o = 0; o < b.outputs.size(); ++o)
        if (b.outputs[o].role == Role::Stash)
          stash.emplace_back(*r.device, g.type(g.outputs()[o]));
    }
    for (size_t o = 0, k = 0; o < b.outputs.size(); ++o)
      if (b.outputs[o].role == Role::Stash) {
        bound[o] = stash[k].data();
        r.stashHeld += stash[k++].bytes();
      }
  }
  if (forward)
    for (size_t o = 0; o < b.outputs.size(); ++o)
      if (b.outputs[o].role == Role::Loss) {
        // The microbatch's slot of the step's losses.
        if (g.type(g.outputs()[o]) != TensorType{DType::F32, {}})
          return err("@" + g.name + ": the loss is not an f32 scalar");
        bound[o] = static_cast<float *>(r.losses.data()) + in.microbatch;
        r.headLosses = true;
      }
  if (!forward) {
    // B returns each gradient buffer it accumulated into (zeroed at the
    // step's start): every microbatch's and chunk's share is added in place.
    for (size_t o = 0; o < b.outputs.size(); ++o) {
      const Binding &x = b.outputs[o];
      auto it = r.grads.find(x.name);
      if (x.role != Role::Gradient || it == r.grads.end())
        return err("@" + g.name + " output %" + g.value(g.outputs()[o]).name +
                   " is not the gradient of a held parameter");
      bound[o] = it->second.data();
    }
  }
  // Enqueued, not waited for: the rank's programs follow each other on its
  // device's stream (with --trace each is waited for, so its row is the
  // device's time; the compute stream only: a CUDA rank's pipeline send
  // runs on its NCCL stream until the peer posts the recv, which in 1F1B
  // the peer may do only after a program of its own that waits for this
  // rank).
  auto issueReady = [&](size_t node) {
    r.reducer->afterNode(in.chunk, in.microbatch, node);
  };
  // ZeRO-1: the parameter gathers run while F computes; each bucket is
  // waited for before the first node reading it (ParamGatherer.h).
  auto awaitGathered = [&](size_t node) {
    r.gatherer->afterNode(in.chunk, in.microbatch, node);
  };
  if (forward && !eval)
    r.gatherer->beforeForward(in.chunk, in.microbatch,
                              group_.context(local, {}));
  if (auto e = prog.enqueue(
          ins, bound, r.workspace, outs, group_.context(local, base),
          forward && !eval ? llvm::function_ref<void(size_t)>(awaitGathered)
          : forward        ? llvm::function_ref<void(size_t)>()
                           : issueReady))
    return e;
  if (trace_)
    if (auto e = r.device->synchronizeStream(kDefaultStream))
      return e;
  for (const Node &n : g.nodes())
    if (n.op == OpKind::Send)
      r.messagesHeld += g.type(n.operands[0]).bytes();
  if (forward)
    return llvm::Error::success();
  for (const DeviceBuffer &t : stash)
    r.stashHeld -= t.bytes();
  // The slots are reused by a later F, which the stream runs after this B.
  r.stashPool[in.chunk].push_back(std::move(stash));
  stash.clear();
  return llvm::Error::success();
}

llvm::Error Trainer::runStreams(llvm::ArrayRef<std::vector<Instr>> streams,
                                uint64_t counterBase, StepStats *stats,
                                bool eval, const CompletedSends *completed) {
  int64_t M = plan_->pipeline.schedule.microbatches;
  for (auto &r : ranks_) {
    r->headLosses = false;
    for (auto &s : r->stash)
      s.resize(M);
    r->stashHeld = 0;
    r->messagesHeld = 0;
  }
  return group_.forEachRank([&](size_t l) -> llvm::Error {
    RankState &r = *ranks_[l];
    auto c = group_.comms(l).group({"pp"});
    if (!c)
      return c.takeError();
    const std::vector<Instr> &stream = streams[r.pipeRank];
    // Eval programs read the parameters without waiting per bucket.
    if (eval)
      r.gatherer->flush(group_.context(l, {}));
    for (size_t i = 0; i < stream.size(); ++i) {
      llvm::Error e = runInstr(r, l, stream[i], counterBase, stats, eval);
      // Free the sends the schedule says were received by now, in stream
      // order (the device has posted them once it reaches this point).
      if (completed)
        for (int32_t d : (*completed)[r.pipeRank][i])
          if (!e)
            e = waitForSends(r, **c, stream[d]);
      if (e)
        return err("pipeline rank " + llvm::Twine(r.pipeRank) + ", " +
                   stream[i].str() + ": " + llvm::toString(std::move(e)));
      r.held();
    }
    r.gatherer->finish();
    if (auto e = r.device->synchronize())
      return err("pipeline rank " + llvm::Twine(r.pipeRank) + ": " +
                 llvm::toString(std::move(e)));
    // Eager sends have reached their peers before the next run reuses a
    // message slot.
    if (auto e = (*c)->waitSends())
      return e;
    r.messagesHeld = 0;
    return llvm::Error::success();
  });
}

llvm::Error Trainer::waitForSends(RankState &r, Communicator &c,
                                  const Instr &in) {
  const PipelineStage &st = plan_->pipeline.stages[r.stages[in.chunk]];
  const Graph &g = in.kind == Instr::Forward ? st.forward : st.backward;
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::Send)
      continue;
    auto slot = messageSlot(n, uint64_t(in.microbatch));
    if (!slot)
      return slot.takeError();
    r.device->enqueueHost([&c, peer = n.attrs.getInt("peer"), tag = *slot] {
      return c.waitSend(peer, tag);
    });
    r.messagesHeld -= g.type(n.operands[0]).bytes();
  }
  return llvm::Error::success();
}

} // namespace strata
