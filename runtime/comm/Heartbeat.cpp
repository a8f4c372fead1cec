//===- Heartbeat.cpp - A stalled-rank watchdog over the rendezvous store --===//
#include "runtime/comm/Heartbeat.h"

#include "runtime/comm/TcpStore.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace strata {

namespace {
using Clock = std::chrono::steady_clock;

std::mutex handlerMu;
StallHandler &stallHandler() {
  static StallHandler h = [](const std::string &message) {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    std::fflush(stderr);
    _exit(1);
  };
  return h;
}

std::string beatKey(int64_t rank) {
  return "strata/heartbeat/" + std::to_string(rank);
}
const char *const kStalledKey = "strata/heartbeat/stalled";

/// "60", "2.5": seconds as `strata launch --heartbeat-timeout` prints them.
std::string seconds(std::chrono::milliseconds ms) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%g", double(ms.count()) / 1000);
  return s;
}
} // namespace

void setStallHandler(StallHandler handler) {
  std::lock_guard<std::mutex> lock(handlerMu);
  stallHandler() = std::move(handler);
}

void reportStall(const std::string &message) {
  StallHandler h;
  {
    std::lock_guard<std::mutex> lock(handlerMu);
    h = stallHandler();
  }
  h(message);
}

llvm::Expected<StoreHeartbeatOptions> StoreHeartbeatOptions::fromEnvironment() {
  StoreHeartbeatOptions o;
  const char *v = std::getenv(kHeartbeatTimeoutVar);
  if (!v)
    return o;
  double s;
  if (llvm::StringRef(v).getAsDouble(s) || !std::isfinite(s) || s <= 0 ||
      s > 86400)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::Twine(kHeartbeatTimeoutVar) + "='" + v +
            "' is not a number of seconds in (0, 86400] (how long a rank "
            "may send no heartbeat before the job ends)");
  o.timeout = std::chrono::milliseconds(int64_t(s * 1000));
  // A short timeout (tests) beats faster, so a few beats fit in it.
  o.interval = std::min(o.interval,
                        std::max(o.timeout / 5, std::chrono::milliseconds(10)));
  return o;
}

struct StoreHeartbeat::State {
  std::unique_ptr<TcpStore> store;
  int64_t rank = 0, world = 1;
  StoreHeartbeatOptions options;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;                     // the owner is done
  bool stopped = false;                  // the beat thread ended
  std::atomic<int64_t> lastContactMs{0}; // a store round trip ended
  std::atomic<bool> fired{false};
  std::thread beat, monitor;

  void setLastContact() {
    lastContactMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                        Clock::now().time_since_epoch())
                        .count();
  }
  /// Ends this process through the handler (once).
  void fire(const std::string &message) {
    if (fired.exchange(true))
      return;
    reportStall(message);
  }
  /// Waits an interval; false once the owner is done.
  bool sleep() {
    std::unique_lock<std::mutex> lock(mu);
    return !cv.wait_for(lock, options.interval, [&] { return stop; });
  }
  void beatLoop();
  void monitorLoop();
};

void StoreHeartbeat::State::beatLoop() {
  int64_t next = (rank + 1) % world;
  std::vector<char> seen, value;
  bool watching = next != rank;
  // Since this rank started, or since the watched rank's count last changed.
  // A rank that never beats (it did not start, or died starting, as one
  // killed while the others wait for it in the rendezvous) counts from this
  // rank's start: the rendezvous would wait for it its whole timeout (300 s).
  Clock::time_point changed = Clock::now();
  auto stall = [&](const std::string &m) {
    store->set(kStalledKey, std::vector<char>(m.begin(), m.end()));
    // The store lives in rank 0: give the others time to read the key.
    if (rank == 0)
      std::this_thread::sleep_for(2 * options.interval);
    fire(m);
  };
  try {
    for (int64_t count = 0;; ++count) {
      std::string c = std::to_string(count);
      store->set(beatKey(rank), std::vector<char>(c.begin(), c.end()));
      setLastContact();
      if (store->tryGet(kStalledKey, value)) {
        fire(std::string(value.begin(), value.end()));
        break;
      }
      if (watching && store->tryGet(beatKey(next), value)) {
        if (llvm::StringRef(value.data(), value.size()) == "done") {
          watching = false;
        } else if (value != seen) {
          seen = value;
          changed = Clock::now();
        } else if (Clock::now() - changed > options.timeout) {
          stall("rank " + std::to_string(next) + " sent no heartbeat for " +
                seconds(options.timeout) +
                " s (stopped or hung; seen by rank " + std::to_string(rank) +
                "); stopping this rank");
          break;
        }
      } else if (watching && Clock::now() - changed > options.timeout) {
        stall("rank " + std::to_string(next) + " sent no heartbeat in the " +
              seconds(options.timeout) + " s since rank " +
              std::to_string(rank) +
              " started (it did not start, or died starting; " +
              kHeartbeatTimeoutVar +
              " gives ranks that start slowly more time); stopping this rank");
        break;
      }
      if (!sleep()) {
        const std::string done = "done";
        store->set(beatKey(rank), std::vector<char>(done.begin(), done.end()));
        break;
      }
    }
  } catch (const std::exception &) {
    // The store is gone: rank 0 exited, and the collectives say why.
  }
  std::lock_guard<std::mutex> lock(mu);
  stopped = true;
  cv.notify_all();
}

void StoreHeartbeat::State::monitorLoop() {
  std::unique_lock<std::mutex> lock(mu);
  while (!stopped) {
    cv.wait_for(lock, options.interval);
    if (stopped)
      break;
    int64_t nowMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                        Clock::now().time_since_epoch())
                        .count();
    if (nowMs - lastContactMs > options.timeout.count()) {
      lock.unlock();
      fire("rank 0 (the host of the rendezvous store) did not answer for " +
           seconds(options.timeout) + " s (stopped or hung; seen by rank " +
           std::to_string(rank) + "); stopping this rank");
      return;
    }
  }
}

llvm::Expected<std::unique_ptr<StoreHeartbeat>>
StoreHeartbeat::start(const std::string &host, int port, int64_t rank,
                      int64_t world, const StoreHeartbeatOptions &options) {
  auto store = TcpStore::connect(host, port, options.timeout);
  if (!store)
    return store.takeError();
  // Once this process ends, its connection closes and the server marks the
  // rank as exited: peers waiting for its keys in the rendezvous fail at
  // once (TcpStore::wait) rather than after the rendezvous timeout.
  try {
    std::string will = "rank " + std::to_string(rank) + " exited";
    (*store)->setWill(kRankExitedKey,
                      std::vector<char>(will.begin(), will.end()));
  } catch (const std::exception &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), e.what());
  }
  auto s = std::make_shared<State>();
  s->store = std::move(*store);
  s->rank = rank;
  s->world = world;
  s->options = options;
  s->setLastContact();
  s->beat = std::thread([s] { s->beatLoop(); });
  s->monitor = std::thread([s] { s->monitorLoop(); });
  return std::unique_ptr<StoreHeartbeat>(new StoreHeartbeat(s));
}

StoreHeartbeat::~StoreHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  // Returns once `done` is posted, the store is gone, or the monitor ended
  // the process because the store stopped answering.
  state_->beat.join();
  state_->monitor.join();
}

} // namespace strata
