//===- TrainerState.cpp - State and gradients of a training run -----------===//
//
// The logical (serial) view of what the ranks hold: parameters and AdamW
// moments gathered from, and scattered to, the ranks that hold them
// (checkpoints), and one microbatch's loss and gradients (verification).
// Ranks in other processes send their blocks over the world group.
//
//===----------------------------------------------------------------------===//
#include "runtime/parallel/Sharded.h"
#include "runtime/parallel/TrainerRankState.h"

#include <cstring>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

llvm::Expected<HostTensor> Trainer::gatherFromRank(
    int64_t pipeRank, const TensorType &type, const Sharding &s,
    llvm::function_ref<const DeviceBuffer &(RankState &)> block) {
  int64_t perStage = stageMesh_.numDevices();
  std::vector<HostTensor> blocks(perStage);
  if (group_.allLocal()) {
    for (auto &r : ranks_)
      if (r->pipeRank == pipeRank) {
        auto b = readBack(block(*r));
        if (!b)
          return b.takeError();
        blocks[r->stageRank] = std::move(*b);
      }
    return gatherFull(blocks, s, stageMesh_);
  }
  // Every rank sends a block of one type: its own, or zeros.
  auto local = localType(type, s, stageMesh_);
  if (!local)
    return local.takeError();
  std::vector<HostTensor> mine;
  for (auto &r : ranks_) {
    if (r->pipeRank != pipeRank) {
      mine.emplace_back(*local);
      continue;
    }
    auto b = readBack(block(*r));
    if (!b)
      return b.takeError();
    mine.push_back(std::move(*b));
  }
  auto all = group_.allGather(mine);
  if (!all)
    return all.takeError();
  for (int64_t i = 0; i < perStage; ++i)
    blocks[i] = std::move((*all)[pipeRank * perStage + i]);
  return gatherFull(blocks, s, stageMesh_);
}

llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
Trainer::lossAndGrads(const int32_t *tokens, const int32_t *labels) {
  ValueId tv = forward_.lookup("tokens");
  HostTensor tk(forward_.type(tv)), lb(forward_.type(tv));
  std::memcpy(tk.raw(), tokens, tk.bytes());
  std::memcpy(lb.raw(), labels, lb.bytes());
  if (auto e = scatterBatches({tk}, {lb}))
    return e;
  if (auto e = microbatchGradients())
    return e;
  std::vector<std::pair<std::string, HostTensor>> result;
  auto loss = headLoss(1);
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
    for (int64_t pr : holders_[name]) {
      auto g = gatherFromRank(
          pr, forward_.type(forward_.lookup(name)), s,
          [&](RankState &r) -> const DeviceBuffer & { return r.grads[name]; });
      if (!g)
        return g.takeError();
      if (have)
        for (int64_t i = 0, n = sum.numElements(); i < n; ++i)
          sum.data<float>()[i] += g->data<float>()[i];
      else
        sum = std::move(*g);
      have = true;
    }
    result.emplace_back("grad." + name, std::move(sum));
  }
  return result;
}

llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
Trainer::gatherState() {
  // ZeRO-1's last updates are gathered into the parameters first.
  if (auto e = flushParamGathers())
    return e;
  std::vector<std::pair<std::string, HostTensor>> state;
  auto gather =
      [&](const std::string &key, llvm::StringRef name, const Sharding &s,
          llvm::StringMap<DeviceBuffer> RankState::*field) -> llvm::Error {
    auto full = gatherFromRank(
        owner_[name], forward_.type(forward_.lookup(name)), s,
        [&](RankState &r) -> const DeviceBuffer & { return (r.*field)[name]; });
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

llvm::Error
Trainer::scatter(llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup,
                 bool moments) {
  discardParamGathers(); // the parameters are set whole
  auto scatter =
      [&](const std::string &key, llvm::StringRef name, const Sharding &s,
          llvm::StringMap<DeviceBuffer> RankState::*field) -> llvm::Error {
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
      it->second.fromHost(*block);
      if (auto e = r->device->synchronize())
        return e;
    }
    return llvm::Error::success();
  };
  for (const std::string &n : names_) {
    if (auto e = scatter(n, n, paramSharding_[n], &RankState::p))
      return e;
    if (!moments)
      continue;
    if (auto e = scatter("adam_m." + n, n, momentSharding_[n], &RankState::m))
      return e;
    if (auto e = scatter("adam_v." + n, n, momentSharding_[n], &RankState::v))
      return e;
  }
  if (!moments)
    for (auto &r : ranks_)
      for (auto *state : {&r->m, &r->v})
        for (auto &t : *state)
          r->device->fill(t.second.data(), t.second.bytes(), 0);
  for (auto &r : ranks_)
    if (auto e = r->device->synchronize())
      return e;
  return llvm::Error::success();
}

} // namespace strata
