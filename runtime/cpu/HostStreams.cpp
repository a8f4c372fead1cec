//===- HostStreams.cpp - Streams and events as queues on host threads -----===//
#include "runtime/cpu/HostStreams.h"

#include "llvm/Support/ErrorHandling.h"

namespace strata {

HostStreams::HostStreams() { createStream(); }

HostStreams::~HostStreams() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  for (auto &s : streams_) {
    s->workCv.notify_one();
    s->worker.join();
  }
}

int32_t HostStreams::createStream() {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back(std::make_unique<Stream>());
  Stream &s = *streams_.back();
  s.worker = std::thread([this, &s] { workerLoop(s); });
  return int32_t(streams_.size() - 1);
}

void HostStreams::record(HostEvent &e, int32_t stream) {
  uint64_t mark;
  {
    std::lock_guard<std::mutex> lock(e.mu);
    mark = ++e.recorded;
  }
  push(
      stream,
      [&e, mark] {
        {
          std::lock_guard<std::mutex> lock(e.mu);
          e.reached = std::max(e.reached, mark);
        }
        e.cv.notify_all();
        return llvm::Error::success();
      },
      /*always=*/true);
}

void HostStreams::wait(int32_t stream, HostEvent &e) {
  uint64_t mark;
  {
    std::lock_guard<std::mutex> lock(e.mu);
    mark = e.recorded;
  }
  push(
      stream,
      [&e, mark] {
        std::unique_lock<std::mutex> lock(e.mu);
        e.cv.wait(lock, [&] { return e.reached >= mark; });
        return llvm::Error::success();
      },
      /*always=*/true);
}

void HostStreams::push(int32_t stream, std::function<llvm::Error()> work,
                       bool always) {
  Stream *s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream < 0 || size_t(stream) >= streams_.size())
      llvm::report_fatal_error("host streams: no stream " +
                               llvm::Twine(stream));
    s = streams_[stream].get();
    s->queue.push_back({std::move(work), always});
    ++s->pending;
    ++pending_;
  }
  s->workCv.notify_one();
}

llvm::Error HostStreams::takeFirstError() {
  if (firstError_.empty())
    return llvm::Error::success();
  std::string msg = std::move(firstError_);
  firstError_.clear();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error HostStreams::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  doneCv_.wait(lock, [this] { return pending_ == 0; });
  return takeFirstError();
}

llvm::Error HostStreams::synchronize(int32_t stream) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stream < 0 || size_t(stream) >= streams_.size())
    llvm::report_fatal_error("host streams: no stream " + llvm::Twine(stream));
  Stream &s = *streams_[stream];
  doneCv_.wait(lock, [&] { return s.pending == 0; });
  return takeFirstError();
}

void HostStreams::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  doneCv_.wait(lock, [this] { return pending_ == 0; });
}

void HostStreams::workerLoop(Stream &s) {
  while (true) {
    Work work;
    bool skip;
    {
      std::unique_lock<std::mutex> lock(mu_);
      s.workCv.wait(lock, [&] { return stop_ || !s.queue.empty(); });
      if (s.queue.empty())
        return; // stop_ and drained
      work = std::move(s.queue.front());
      s.queue.pop_front();
      skip = !firstError_.empty() && !work.always;
    }
    llvm::Error e = skip ? llvm::Error::success() : work.fn();
    // Its captures go before it counts as done: a synchronize that returns
    // lets the caller free what they point to.
    work.fn = nullptr;
    bool drained;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (e)
        firstError_ = llvm::toString(std::move(e));
      // A stream drained wakes the waiters of synchronize(stream) too.
      drained = --s.pending == 0;
      drained = --pending_ == 0 || drained;
    }
    if (drained)
      doneCv_.notify_all();
  }
}

} // namespace strata
