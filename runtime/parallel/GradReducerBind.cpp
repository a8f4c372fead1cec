//===- GradReducerBind.cpp - A trainer rank's GradReducer and ParamGatherer //
//
// Trainer::bindGradReducer: what the reducer (GradReducer.h) and ZeRO-1's
// gatherer (ParamGatherer.h) need from the plan for one local rank: its
// optimizer program, its chunks' programs, its instruction stream and its
// place over dp. Trainer::flushParamGathers: the gathers done before
// anything but a training step's forward reads the parameters.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/Communicator.h"
#include "runtime/parallel/TrainerRankState.h"

namespace strata {

llvm::Error Trainer::bindGradReducer(RankState &r) {
  const PipelinePlan &pp = plan_->pipeline;
  std::vector<ChunkPrograms> chunks;
  for (int64_t s : r.stages) {
    const PipelineStage &st = pp.stages[s];
    chunks.push_back({&st.forward, &st.backward, &st.backwardBindings,
                      &st.forwardBindings});
  }
  auto red = GradReducer::create(
      *r.device, r.grads, pp.optimizers[r.pipeRank],
      pp.optimizerBindings[r.pipeRank], chunks,
      pp.schedule.ranks[r.pipeRank], shardIndex(stageMesh_, r.stageRank, {"dp"}),
      stageMesh_.axisSize("dp"), opts_.gradReduce);
  if (!red)
    return red.takeError();
  r.reducer = std::move(*red);
  // ZeRO-1's gathers share the reductions' stream: the dp communicator's
  // work stays in one order on every rank.
  auto gather = ParamGatherer::create(
      *r.device, r.reducer->stream(), r.p, pp.optimizers[r.pipeRank],
      pp.optimizerBindings[r.pipeRank], chunks, pp.schedule.ranks[r.pipeRank],
      opts_.gradReduce);
  if (!gather)
    return gather.takeError();
  r.gatherer = std::move(*gather);
  return llvm::Error::success();
}

} // namespace strata

namespace strata {

llvm::Error Trainer::flushParamGathers() {
  return group_.forEachRank([&](size_t l) -> llvm::Error {
    ranks_[l]->gatherer->flush(group_.context(l, {}));
    return ranks_[l]->device->synchronize();
  });
}

void Trainer::discardParamGathers() {
  for (auto &r : ranks_)
    r->gatherer->discard();
}

} // namespace strata
