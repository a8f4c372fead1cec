//===- Scheduler.cpp - Batching concurrent requests onto one engine -------===//
#include "runtime/generate/Scheduler.h"

namespace strata::generate {

Scheduler::Scheduler(Decoder &decoder, const Tokenizer &tokenizer,
                     int64_t maxQueue, ErrorReport reportError)
    : engine_(decoder, tokenizer), reportError_(std::move(reportError)),
      maxQueue_(maxQueue), worker_([this] { run(); }) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

llvm::Error Scheduler::submit(std::vector<Job> jobs) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the server is shutting down");
    if (int64_t(queue_.size() + jobs.size()) > maxQueue_)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "the request queue is full (" + llvm::Twine(queue_.size()) +
              " sequences waiting, at most " + llvm::Twine(maxQueue_) +
              "); retry later");
    for (Job &j : jobs)
      queue_.push_back(std::move(j));
  }
  wake_.notify_one();
  return llvm::Error::success();
}

int64_t Scheduler::queued() {
  std::lock_guard<std::mutex> lock(mu_);
  return int64_t(queue_.size());
}

int64_t Scheduler::active() {
  std::lock_guard<std::mutex> lock(mu_);
  return active_;
}

void Scheduler::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(
        lock, [&] { return stop_ || !queue_.empty() || engine_.active() > 0; });
    if (stop_)
      break;
    // Admit what fits; prefills run outside the lock so submit() never
    // waits for the model.
    while (!queue_.empty() && engine_.freeSlots() > 0) {
      Job job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      Sink sink = job.sink; // add() consumes its copy even when it fails
      if (auto e = engine_.add(std::move(job.request), std::move(job.sink))) {
        GenerationResult r;
        r.finish = Finish::Cancelled;
        r.error = llvm::toString(std::move(e));
        if (sink.onFinish)
          sink.onFinish(std::move(r));
      }
      lock.lock();
    }
    active_ = engine_.active();
    if (engine_.active() == 0)
      continue;
    lock.unlock();
    if (auto e = engine_.step()) {
      std::string msg = llvm::toString(std::move(e));
      if (reportError_)
        reportError_("decoding failed: " + msg);
      engine_.cancelAll(msg);
    }
    lock.lock();
    active_ = engine_.active();
  }
  // Shutting down: nobody waits in vain.
  std::deque<Job> left = std::move(queue_);
  lock.unlock();
  engine_.cancelAll("the server is shutting down");
  for (Job &j : left) {
    GenerationResult r;
    r.finish = Finish::Cancelled;
    r.error = "the server is shutting down";
    if (j.sink.onFinish)
      j.sink.onFinish(std::move(r));
  }
}

} // namespace strata::generate
