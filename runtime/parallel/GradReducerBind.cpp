//===- GradReducerBind.cpp - A trainer rank's GradReducer -----------------===//
//
// Trainer::bindGradReducer: what the reducer (GradReducer.h) needs from the
// plan for one local rank: its optimizer program, its chunks' programs, its
// instruction stream and its place over dp.
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
    chunks.push_back({&st.forward, &st.backward, &st.backwardBindings});
  }
  auto red = GradReducer::create(
      *r.device, r.grads, pp.optimizers[r.pipeRank],
      pp.optimizerBindings[r.pipeRank], chunks,
      pp.schedule.ranks[r.pipeRank], shardIndex(stageMesh_, r.stageRank, {"dp"}),
      stageMesh_.axisSize("dp"), opts_.gradReduce);
  if (!red)
    return red.takeError();
  r.reducer = std::move(*red);
  return llvm::Error::success();
}

} // namespace strata
