//===- PipelineState.cpp - State and gradients of a pipelined run ---------===//
//
// The logical (serial) view of what the pipeline ranks hold: parameters and
// AdamW moments gathered from, and scattered to, the ranks that hold them
// (checkpoints), and one microbatch's loss and gradients (verification).
//
//===----------------------------------------------------------------------===//
#include "runtime/parallel/PipelineRankState.h"
#include "runtime/parallel/ParallelInterpreter.h"
#include "runtime/parallel/Sharded.h"

#include <cstring>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

llvm::Expected<HostTensor> PipelineTrainer::gatherFromRank(
    int64_t pipeRank, const Sharding &s,
    llvm::function_ref<const HostTensor &(RankState &)> block) {
  std::vector<HostTensor> blocks(stageMesh_.numDevices());
  for (auto &r : ranks_)
    if (r->pipeRank == pipeRank)
      blocks[r->stageRank] = block(*r);
  return gatherFull(blocks, s, stageMesh_);
}

llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
PipelineTrainer::lossAndGrads(const int32_t *tokens, const int32_t *labels) {
  ValueId tv = forward_.lookup("tokens");
  HostTensor tk(forward_.type(tv)), lb(forward_.type(tv));
  std::memcpy(tk.raw(), tokens, tk.bytes());
  std::memcpy(lb.raw(), labels, lb.bytes());
  if (auto e = scatterBatches({tk}, {lb}))
    return e;
  for (auto &r : ranks_)
    for (auto &g : r->grads)
      std::memset(g.second.raw(), 0, g.second.bytes());
  if (auto e = runStreams(singleMicrobatch(false), uint64_t(step_), nullptr,
                          false))
    return e;
  std::vector<std::pair<std::string, HostTensor>> result;
  auto loss = headLoss(1.0);
  if (!loss)
    return loss.takeError();
  result.emplace_back("loss", HostTensor::scalar(*loss));
  // A gradient is partial over dp within a pipeline rank and, for a tied
  // parameter, a sum over the ranks that hold it (in rank order, as the
  // owner's optimizer adds them).
  const Graph &micro = plan_->micro;
  for (const std::string &name : names_) {
    Sharding s = shardingOf(micro, micro.lookup("grad." + name));
    HostTensor sum;
    bool have = false;
    for (int64_t pr = 0; pr < plan_->pipeline.pp; ++pr) {
      bool holds = false;
      for (auto &r : ranks_)
        holds |= r->pipeRank == pr && r->grads.count(name);
      if (!holds)
        continue;
      auto g = gatherFromRank(pr, s, [&](RankState &r) -> const HostTensor & {
        return r.grads[name];
      });
      if (!g)
        return g.takeError();
      if (have)
        addInto(sum, g->raw());
      else
        sum = std::move(*g);
      have = true;
    }
    result.emplace_back("grad." + name, std::move(sum));
  }
  return result;
}

llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
PipelineTrainer::gatherState() {
  std::vector<std::pair<std::string, HostTensor>> state;
  auto gather = [&](const std::string &key, llvm::StringRef name,
                    const Sharding &s,
                    llvm::StringMap<HostTensor> RankState::*field)
      -> llvm::Error {
    auto full = gatherFromRank(owner_[name], s,
                               [&](RankState &r) -> const HostTensor & {
                                 return (r.*field)[name];
                               });
    if (!full)
      return full.takeError();
    state.emplace_back(key, std::move(*full));
    return llvm::Error::success();
  };
  for (const std::string &n : names_)
    if (auto e = gather(n, n, paramSharding_[n], &RankState::p))
      return e;
  for (const std::string &n : names_) {
    if (auto e = gather("adam_m." + n, n, momentSharding_[n], &RankState::m))
      return e;
    if (auto e = gather("adam_v." + n, n, momentSharding_[n], &RankState::v))
      return e;
  }
  return state;
}

llvm::Error PipelineTrainer::scatterState(
    llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup) {
  auto scatter = [&](const std::string &key, llvm::StringRef name,
                     const Sharding &s,
                     llvm::StringMap<HostTensor> RankState::*field)
      -> llvm::Error {
    const HostTensor *full = lookup(key);
    TensorType want = forward_.type(forward_.lookup(name));
    if (!full || full->type() != want)
      return err("tensor '" + key + "' is missing or is not " + want.str());
    for (auto &r : ranks_) {
      auto it = (r.get()->*field).find(name);
      if (it == (r.get()->*field).end())
        continue;
      auto block = shardOf(*full, s, stageMesh_, r->stageRank);
      if (!block)
        return block.takeError();
      it->second = std::move(*block);
    }
    return llvm::Error::success();
  };
  for (const std::string &n : names_) {
    if (auto e = scatter(n, n, paramSharding_[n], &RankState::p))
      return e;
    if (auto e = scatter("adam_m." + n, n, momentSharding_[n], &RankState::m))
      return e;
    if (auto e = scatter("adam_v." + n, n, momentSharding_[n], &RankState::v))
      return e;
  }
  return llvm::Error::success();
}

} // namespace strata
