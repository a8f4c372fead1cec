//===- NcclGroups.cpp - One rank's NCCL communicators over a mesh ---------===//
#include "runtime/cuda/nccl/NcclGroups.h"

#include "runtime/comm/GlooCommunicator.h"

#include <gloo/rendezvous/store.h>

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace strata::cuda {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Every ordered list of distinct elements of `axes`, shortest first.
std::vector<std::vector<std::string>>
orderedLists(const std::vector<std::string> &axes) {
  std::vector<std::vector<std::string>> out;
  size_t n = axes.size();
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<std::string> subset;
    for (size_t i = 0; i < n; ++i)
      if (mask & (1u << i))
        subset.push_back(axes[i]);
    std::vector<size_t> order(subset.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    do {
      std::vector<std::string> list;
      for (size_t i : order)
        list.push_back(subset[i]);
      out.push_back(std::move(list));
    } while (std::next_permutation(order.begin(), order.end()));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto &a, const auto &b) {
    return a.size() < b.size();
  });
  return out;
}

std::string groupName(llvm::ArrayRef<std::string> axes,
                      llvm::ArrayRef<int64_t> ranks) {
  std::string name = "[" + llvm::join(axes, ",") + "] (ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    name += (i ? "," : "") + std::to_string(ranks[i]);
  return name + ")";
}
} // namespace

llvm::Expected<std::unique_ptr<NcclGroups>>
NcclGroups::create(std::unique_ptr<Nccl> nccl, Driver &driver,
                   Communicators &gloo, std::chrono::milliseconds timeout,
                   NcclWatchdog::OnFailure onFailure) {
  std::shared_ptr<GlooRendezvous> rdv = rendezvousOf(gloo);
  if (!rdv)
    return err("NCCL needs the job's rendezvous store (Gloo communicators "
               "of a device group)");
  std::unique_ptr<NcclGroups> g(new NcclGroups());
  g->nccl_ = std::move(nccl);
  g->driver_ = &driver;
  g->mesh_ = gloo.mesh();
  g->rank_ = gloo.rank();
  g->timeout_ = timeout;
  g->watchdog_ = std::make_unique<NcclWatchdog>(*g->nccl_, g->rank_, timeout,
                                                std::move(onFailure));
  g->watchdog_->abortWhen([rdv] { return rdv->abortFlag().reason(); });
  // The world's unique id: made by rank 0, read by the others.
  NcclUniqueId id;
  const std::string key = "nccl/unique-id";
  try {
    if (g->rank_ == 0) {
      if (NcclResult r = g->nccl_->getUniqueId(&id); r != ncclSuccess)
        return err(llvm::Twine("ncclGetUniqueId: ") + g->nccl_->errorString(r));
      rdv->store().set(key,
                       std::vector<char>(id.internal, id.internal + sizeof id));
    } else {
      rdv->store().wait({key}, timeout);
      std::vector<char> v = rdv->store().get(key);
      if (v.size() != sizeof id)
        return err("NCCL unique id in the rendezvous store has " +
                   llvm::Twine(v.size()) + " bytes, not 128");
      std::memcpy(id.internal, v.data(), sizeof id);
    }
  } catch (const std::exception &e) {
    return err(llvm::Twine("NCCL unique id through the rendezvous store: ") +
               e.what());
  }
  NcclConfig config;
  config.blocking = 0;
  NcclResult r = g->nccl_->commInitRankConfig(
      &g->world_, int(g->mesh_.numDevices()), id, int(g->rank_), &config);
  if (r != ncclSuccess && r != ncclInProgress)
    return err(llvm::Twine("ncclCommInitRankConfig: ") +
               g->nccl_->errorString(r));
  std::vector<int64_t> everyone;
  for (int64_t q = 0; q < g->mesh_.numDevices(); ++q)
    everyone.push_back(q);
  if (auto e = g->await(g->world_, "initializing the world communicator " +
                                       groupName({"world"}, everyone)))
    return e;
  g->watchdog_->watch(g->world_, groupName({"world"}, everyone));
  g->nccl_->nameComm(g->world_, groupName({"world"}, everyone), everyone);

  std::vector<std::string> used;
  for (const MeshAxis &a : g->mesh_.axes)
    if (a.size > 1)
      used.push_back(a.name);
  for (const std::vector<std::string> &list : orderedLists(used)) {
    std::vector<std::string> others;
    for (const std::string &a : used)
      if (!llvm::is_contained(list, a))
        others.push_back(a);
    int color = int(shardIndex(g->mesh_, g->rank_, others));
    int64_t me = shardIndex(g->mesh_, g->rank_, list);
    auto ranks = groupRanks(g->mesh_, g->rank_, list);
    std::vector<int64_t> globals(ranks.begin(), ranks.end());
    std::string name = groupName(list, ranks);
    std::vector<std::string> keys{llvm::join(list, ",")};
    if (list.size() == 1) { // send/recv, one communicator per direction
      keys.push_back(list[0] + "/up");
      keys.push_back(list[0] + "/down");
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      auto c = g->split(color, int(me), me, int64_t(ranks.size()),
                        i == 0 ? name
                               : name + (i == 1 ? " sends up" : " sends down"),
                        globals);
      if (!c)
        return c.takeError();
      g->groups_[keys[i]] = std::move(*c);
    }
  }
  return g;
}

NcclGroups::~NcclGroups() {
  if (!watchdog_)
    return;
  watchdog_->stop();
  groups_.clear();
  if (world_ && !watchdog_->aborted())
    nccl_->commDestroy(world_);
}

llvm::Error NcclGroups::await(NcclComm comm, const std::string &what) {
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    NcclResult async = ncclInProgress;
    if (NcclResult r = nccl_->commGetAsyncError(comm, &async); r != ncclSuccess)
      async = r;
    if (async == ncclSuccess)
      return llvm::Error::success();
    if (async != ncclInProgress) {
      std::string last = nccl_->lastError(comm);
      nccl_->commAbort(comm);
      return err("NCCL: " + what + ": " + nccl_->errorString(async) +
                 (last.empty() ? "" : " (" + last + ")"));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      nccl_->commAbort(comm);
      return err(
          "NCCL: " + what + ": timed out after " +
          llvm::Twine(std::chrono::duration_cast<std::chrono::seconds>(timeout_)
                          .count()) +
          " s (did every rank start?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

llvm::Expected<std::unique_ptr<NcclCommunicator>>
NcclGroups::split(int color, int key, int64_t rank, int64_t size,
                  std::string name, std::vector<int64_t> globalRanks) {
  NcclConfig config;
  config.blocking = 0;
  NcclComm comm = nullptr;
  NcclResult r = nccl_->commSplit(world_, color, key, &comm, &config);
  if (r != ncclSuccess && r != ncclInProgress)
    return err("ncclCommSplit for " + name + ": " + nccl_->errorString(r));
  if (auto e = await(comm, "splitting " + name))
    return e;
  auto stream = driver_->createStream();
  if (!stream) {
    nccl_->commDestroy(comm);
    return stream.takeError();
  }
  watchdog_->watch(comm, name);
  nccl_->nameComm(comm, name, globalRanks);
  return std::make_unique<NcclCommunicator>(
      *nccl_, *driver_, *watchdog_, comm, *stream, rank, size, std::move(name),
      std::move(globalRanks));
}

llvm::Expected<NcclCommunicator *>
NcclGroups::group(llvm::ArrayRef<std::string> axes) {
  llvm::SmallVector<std::string, 3> used;
  for (const std::string &a : axes)
    if (mesh_.axisSize(a) > 1)
      used.push_back(a);
  if (used.empty())
    return nullptr;
  auto it = groups_.find(llvm::join(used, ","));
  if (it == groups_.end())
    return err("no NCCL communicator over [" + llvm::join(used, ",") +
               "] (axes of the mesh, each once)");
  return it->second.get();
}

llvm::Expected<NcclCommunicator *>
NcclGroups::pointToPoint(llvm::ArrayRef<std::string> axes, int64_t peer,
                         bool sending) {
  llvm::SmallVector<std::string, 3> used;
  for (const std::string &a : axes)
    if (mesh_.axisSize(a) > 1)
      used.push_back(a);
  auto g = group(axes);
  if (!g || !*g || used.size() != 1)
    return g; // one direction per communicator only for single axes
  int64_t me = (*g)->rank();
  bool up = sending ? me < peer : peer < me;
  return groups_.at(used[0] + (up ? "/up" : "/down")).get();
}

llvm::Error NcclGroups::release() {
  llvm::Error all = llvm::Error::success();
  for (auto &[key, c] : groups_)
    all = llvm::joinErrors(std::move(all), c->release());
  return all;
}

} // namespace strata::cuda
