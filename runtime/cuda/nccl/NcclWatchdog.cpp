//===- NcclWatchdog.cpp - Finds failed or stuck NCCL work -----------------===//
#include "runtime/cuda/nccl/NcclWatchdog.h"

#include "runtime/comm/Heartbeat.h"

#include <cstdlib>

namespace strata::cuda {

NcclWatchdog::NcclWatchdog(Nccl &nccl, int64_t rank,
                           std::chrono::milliseconds timeout,
                           OnFailure onFailure)
    : nccl_(nccl), rank_(rank), timeout_(timeout),
      onFailure_(std::move(onFailure)) {
  if (!onFailure_)
    onFailure_ = [rank](const std::string &message) {
      reportStall("rank " + std::to_string(rank) + ": " + message);
    };
  thread_ = std::thread([this] { loop(); });
}

NcclWatchdog::~NcclWatchdog() { stop(); }

void NcclWatchdog::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id())
    thread_.join();
}

std::chrono::milliseconds NcclWatchdog::defaultTimeout(bool interpret) {
  int64_t secs = interpret ? 600 : 60;
  if (const char *v = std::getenv("STRATA_NCCL_TIMEOUT")) {
    int64_t x;
    if (!llvm::StringRef(v).getAsInteger(10, x) && x > 0)
      secs = x;
  }
  return std::chrono::seconds(secs);
}

void NcclWatchdog::abortWhen(std::function<std::string()> reason) {
  std::lock_guard<std::mutex> lock(mu_);
  abortReason_ = std::move(reason);
}

void NcclWatchdog::watch(NcclComm comm, const std::string &group) {
  std::lock_guard<std::mutex> lock(mu_);
  comms_.push_back({comm, group});
}

uint64_t NcclWatchdog::issued(NcclComm comm, std::string what,
                              std::string group, std::string peers) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_++;
  calls_[id] = {comm, std::move(what), std::move(group), std::move(peers),
                std::nullopt};
  return id;
}

void NcclWatchdog::started(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = calls_.find(id);
  if (it != calls_.end())
    it->second.start = std::chrono::steady_clock::now();
}

void NcclWatchdog::finished(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.erase(id);
}

void NcclWatchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_ || aborted_)
      continue;
    if (abortReason_ && !abortReason_().empty()) {
      aborted_ = true;
      for (auto &[comm, group] : comms_)
        nccl_.commAbort(comm);
      continue;
    }
    std::string failure;
    // The oldest call in flight on a communicator, if any.
    auto inFlight = [&](NcclComm comm) -> const Call * {
      for (auto &[id, c] : calls_)
        if (c.comm == comm && c.start)
          return &c;
      return nullptr;
    };
    for (auto &[comm, group] : comms_) {
      NcclResult async = ncclSuccess;
      if (nccl_.commGetAsyncError(comm, &async) != ncclSuccess ||
          async == ncclSuccess || async == ncclInProgress)
        continue;
      const Call *c = inFlight(comm);
      failure = "NCCL " + std::string(c ? c->what : "communicator") +
                " over group " + group +
                (c ? " with " + c->peers : std::string()) +
                " failed: " + nccl_.errorString(async);
      std::string last = nccl_.lastError(comm);
      if (!last.empty())
        failure += " (" + last + ")";
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (failure.empty())
      for (auto &[id, c] : calls_)
        if (c.start && now - *c.start > timeout_) {
          failure =
              "NCCL " + c.what + " over group " + c.group + " with " + c.peers +
              " timed out after " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::seconds>(timeout_)
                      .count()) +
              " s (a peer stopped, hung or exited; STRATA_NCCL_TIMEOUT sets "
              "the timeout in seconds)";
          break;
        }
    if (failure.empty())
      continue;
    lock.unlock();
    fail(failure);
    lock.lock();
  }
}

void NcclWatchdog::fail(const std::string &message) {
  std::vector<NcclComm> comms;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &[comm, group] : comms_)
      comms.push_back(comm);
  }
  aborted_ = true;
  for (NcclComm c : comms)
    nccl_.commAbort(c);
  onFailure_(message + "; aborted every NCCL communicator of rank " +
             std::to_string(rank_));
}

} // namespace strata::cuda
