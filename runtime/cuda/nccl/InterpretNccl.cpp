//===- InterpretNccl.cpp - NCCL emulated over Gloo for interpret mode -----===//
#include "runtime/cuda/nccl/InterpretNccl.h"

#include "runtime/cuda/nccl/InterpretComm.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace strata::cuda {

namespace {

using R = NcclResult;
using interpret_nccl::Comm;
using interpret_nccl::dtypeOf;

/// A send or recv waiting for ncclGroupEnd.
struct P2P {
  bool send;
  void *buf;
  int64_t bytes;
  int peer;
  uint32_t seq;
};

/// A thread's open group (ncclGroupStart nests).
struct GroupState {
  int depth = 0;
  struct Pending {
    std::shared_ptr<Comm> comm;
    StreamHandle stream;
    std::vector<P2P> ops;
  };
  std::vector<Pending> pending;
};
thread_local GroupState group;

class InterpretNccl : public Nccl {
public:
  InterpretNccl(Driver &driver, std::shared_ptr<GlooRendezvous> rdv)
      : driver_(driver), rdv_(std::move(rdv)) {}
  ~InterpretNccl() override {
    std::vector<std::shared_ptr<Comm>> left;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto &[h, c] : comms_)
        left.push_back(c);
      comms_.clear();
    }
    for (auto &c : left)
      shutdown(*c, false);
  }

  std::string version() const override { return "nccl-interpret"; }
  const char *errorString(R r) override {
    switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "internal error";
    }
  }
  const char *lastError(NcclComm h) override {
    auto c = find(h);
    if (!c)
      return "";
    std::lock_guard<std::mutex> lock(c->mu);
    thread_local std::string last; // valid until this thread's next call
    last = c->error;
    return last.c_str();
  }

  R getUniqueId(NcclUniqueId *id) override {
    std::random_device rd;
    std::string s = "strata-nccl-interpret/";
    for (int i = 0; i < 4; ++i)
      s += llvm::utohexstr(rd(), /*LowerCase=*/true);
    std::memset(id->internal, 0, sizeof id->internal);
    std::memcpy(id->internal, s.data(), std::min(s.size(), size_t(127)));
    return ncclSuccess;
  }

  R commInitRankConfig(NcclComm *out, int nranks, NcclUniqueId id, int rank,
                       NcclConfig *config) override {
    if (nranks < 1 || rank < 0 || rank >= nranks ||
        std::strncmp(id.internal, "strata-nccl-interpret/", 22) != 0)
      return ncclInvalidArgument;
    auto c = std::make_shared<Comm>();
    c->prefix = "nccl/" + std::string(id.internal);
    c->rank = rank;
    c->size = nranks;
    *out = add(c);
    auto connect = [this, c] { connectGloo(*c); };
    return start(*c, config, connect);
  }

  R commSplit(NcclComm h, int color, int key, NcclComm *out,
              NcclConfig *config) override {
    auto p = find(h);
    if (!p)
      return ncclInvalidArgument;
    uint64_t ticket;
    int split;
    {
      std::lock_guard<std::mutex> lock(p->mu);
      ticket = p->issued++;
      split = p->splits++;
    }
    auto c = std::make_shared<Comm>();
    NcclComm made = add(c); // kept (its thread joined) until destroyed
    *out = color == kNcclSplitNoColor ? nullptr : made;
    auto work = [this, p, c, ticket, split, color, key] {
      // Every rank's (color, key), gathered over the parent in its turn.
      std::vector<int64_t> all(2 * p->size), mine{color, key};
      if (auto e = p->inTurn(ticket, [&] {
            return p->gloo->allGather(mine.data(), all.data(), 2, DType::I64);
          }))
        return c->finish(ncclRemoteError, llvm::toString(std::move(e)));
      if (color == kNcclSplitNoColor)
        return c->finish(ncclSuccess);
      std::vector<int> members;
      for (int r = 0; r < p->size; ++r)
        if (all[2 * r] == color)
          members.push_back(r);
      std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
        return all[2 * a + 1] < all[2 * b + 1];
      });
      c->prefix = p->prefix + "/split" + std::to_string(split) + "/" +
                  std::to_string(color);
      c->size = int(members.size());
      c->rank = int(llvm::find(members, p->rank) - members.begin());
      connectGloo(*c);
    };
    return start(*c, config, work);
  }

  R commGetAsyncError(NcclComm h, R *asyncError) override {
    auto c = find(h);
    if (!c)
      return ncclInvalidArgument;
    std::lock_guard<std::mutex> lock(c->mu);
    *asyncError = c->state;
    return ncclSuccess;
  }
  R commAbort(NcclComm h) override { return remove(h, true); }
  R commDestroy(NcclComm h) override { return remove(h, false); }

  R allReduce(const void *send, void *recv, size_t count, NcclDataType dt,
              NcclRedOp op, NcclComm h, StreamHandle s) override {
    auto t = dtypeOf(dt);
    if (!t)
      return ncclInvalidArgument;
    DType d = *t;
    int64_t n = int64_t(count);
    ReduceOp rop = op == ncclMax ? ReduceOp::Max : ReduceOp::Sum;
    return collective(h, s, "all_reduce", {}, [=](Comm &c) {
      if (send != recv)
        std::memcpy(recv, send, n * dtypeBytes(d));
      return c.gloo->allReduce(recv, n, d, rop);
    });
  }
  R reduceScatter(const void *send, void *recv, size_t count, NcclDataType dt,
                  NcclRedOp op, NcclComm h, StreamHandle s) override {
    auto t = dtypeOf(dt);
    if (!t)
      return ncclInvalidArgument;
    DType d = *t;
    ReduceOp rop = op == ncclMax ? ReduceOp::Max : ReduceOp::Sum;
    return collective(h, s, "reduce_scatter", {}, [=](Comm &c) {
      return c.gloo->reduceScatter(send, recv, int64_t(count), d, rop);
    });
  }
  R allGather(const void *send, void *recv, size_t count, NcclDataType dt,
              NcclComm h, StreamHandle s) override {
    auto t = dtypeOf(dt);
    if (!t)
      return ncclInvalidArgument;
    DType d = *t;
    return collective(h, s, "all_gather", {}, [=](Comm &c) {
      return c.gloo->allGather(send, recv, int64_t(count), d);
    });
  }
  R broadcast(const void *send, void *recv, size_t count, NcclDataType dt,
              int root, NcclComm h, StreamHandle s) override {
    auto t = dtypeOf(dt);
    if (!t)
      return ncclInvalidArgument;
    DType d = *t;
    return collective(h, s, "broadcast", {}, [=](Comm &c) {
      if (c.rank == root && send != recv)
        std::memcpy(recv, send, count * dtypeBytes(d));
      return c.gloo->broadcast(recv, int64_t(count), d, root);
    });
  }
  R send(const void *buf, size_t count, NcclDataType dt, int peer, NcclComm h,
         StreamHandle s) override {
    return pointToPoint(true, const_cast<void *>(buf), count, dt, peer, h, s);
  }
  R recv(void *buf, size_t count, NcclDataType dt, int peer, NcclComm h,
         StreamHandle s) override {
    return pointToPoint(false, buf, count, dt, peer, h, s);
  }
  void nameComm(NcclComm h, const std::string &group,
                std::vector<int64_t> globalRanks) override {
    if (auto c = find(h)) {
      std::lock_guard<std::mutex> lock(c->mu);
      c->group = group;
      c->globalRanks = std::move(globalRanks);
    }
  }
  R groupStart() override {
    ++group.depth;
    return ncclSuccess;
  }
  R groupEnd() override {
    if (group.depth == 0)
      return ncclInvalidUsage;
    if (--group.depth > 0)
      return ncclSuccess;
    std::vector<GroupState::Pending> pending = std::move(group.pending);
    group.pending.clear();
    R result = ncclSuccess;
    for (GroupState::Pending &p : pending)
      if (R r = enqueueP2P(p.comm, p.stream, std::move(p.ops));
          r != ncclSuccess)
        result = r;
    return result;
  }

private:
  /// Connects `c`'s Gloo group (its prefix, rank and size set) and
  /// finishes its initialization.
  void connectGloo(Comm &c) {
    auto g = connectGlooGroup(rdv_, c.prefix, c.rank, c.size,
                              "nccl communicator " + c.prefix);
    if (!g)
      return c.finish(ncclSystemError, llvm::toString(g.takeError()));
    c.gloo = std::move(*g);
    c.finish(ncclSuccess);
  }

  NcclComm add(std::shared_ptr<Comm> c) {
    std::lock_guard<std::mutex> lock(mu_);
    NcclComm h = c.get();
    comms_[h] = std::move(c);
    return h;
  }
  std::shared_ptr<Comm> find(NcclComm h) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = comms_.find(h);
    return it == comms_.end() ? nullptr : it->second;
  }
  /// Runs `work` now (blocking config) or on the communicator's thread.
  template <typename F> R start(Comm &c, NcclConfig *config, F work) {
    if (config && config->blocking == 0) {
      c.worker = std::thread(std::move(work));
      return ncclInProgress;
    }
    work();
    std::lock_guard<std::mutex> lock(c.mu);
    return c.state;
  }
  static void shutdown(Comm &c, bool abort) {
    {
      std::lock_guard<std::mutex> lock(c.mu);
      c.aborted = true;
      c.cv.notify_all();
    }
    if (abort && c.gloo)
      c.gloo->close();
    if (c.worker.joinable())
      c.worker.join();
  }
  R remove(NcclComm h, bool abort) {
    std::shared_ptr<Comm> c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = comms_.find(h);
      if (it == comms_.end())
        return ncclInvalidArgument;
      c = std::move(it->second);
      comms_.erase(it);
    }
    shutdown(*c, abort);
    return ncclSuccess;
  }

  /// Enqueues `op` on stream `s` in the communicator's issue order; its
  /// error names `what` with group ranks `peers` (empty: every other rank)
  /// and the communicator's group (nameComm).
  R collective(NcclComm h, StreamHandle s, std::string what,
               std::vector<int> peers, std::function<llvm::Error(Comm &)> op) {
    auto c = find(h);
    if (!c)
      return ncclInvalidArgument;
    uint64_t ticket;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (c->state != ncclSuccess)
        return c->state == ncclInProgress ? ncclInvalidUsage : c->state;
      ticket = c->issued++;
    }
    auto e = driver_.launchHost(
        [c, ticket, what = std::move(what), peers = std::move(peers),
         op = std::move(op)]() -> llvm::Error {
          llvm::Error e = c->inTurn(ticket, [&] { return op(*c); });
          if (!e)
            return e;
          return interpret_nccl::commError(c->failedCall(what, peers) +
                                           llvm::toString(std::move(e)));
        },
        s);
    if (e) {
      llvm::consumeError(std::move(e));
      return ncclUnhandledCudaError;
    }
    return ncclSuccess;
  }

  R pointToPoint(bool isSend, void *buf, size_t count, NcclDataType dt,
                 int peer, NcclComm h, StreamHandle s) {
    auto c = find(h);
    auto t = dtypeOf(dt);
    if (!c || !t || peer < 0 || peer >= c->size || peer == c->rank)
      return ncclInvalidArgument;
    P2P op{isSend, buf, int64_t(count) * dtypeBytes(*t), peer, 0};
    {
      std::lock_guard<std::mutex> lock(c->mu);
      op.seq = (isSend ? c->sendSeq : c->recvSeq)[peer]++;
    }
    if (group.depth == 0)
      return enqueueP2P(c, s, {op});
    for (GroupState::Pending &p : group.pending)
      if (p.comm == c) {
        if (p.stream != s)
          return ncclInvalidUsage; // one stream per communicator in a group
        p.ops.push_back(op);
        return ncclSuccess;
      }
    group.pending.push_back({c, s, {op}});
    return ncclSuccess;
  }

  /// One host task: post the sends, receive, then wait for the sends.
  R enqueueP2P(std::shared_ptr<Comm> c, StreamHandle s, std::vector<P2P> ops) {
    std::vector<int> peers;
    for (const P2P &p : ops)
      if (!llvm::is_contained(peers, p.peer))
        peers.push_back(p.peer);
    std::string what = ops.size() > 1 ? "grouped send/recv"
                       : ops[0].send  ? "send"
                                      : "recv";
    return collective(c.get(), s, std::move(what), std::move(peers),
                      [ops = std::move(ops)](Comm &c) -> llvm::Error {
                        for (const P2P &p : ops)
                          if (p.send)
                            if (auto e = c.gloo->postSend(
                                    p.buf, p.bytes, DType::I1, p.peer, p.seq))
                              return e;
                        for (const P2P &p : ops)
                          if (!p.send)
                            if (auto e = c.gloo->recv(p.buf, p.bytes, DType::I1,
                                                      p.peer, p.seq))
                              return e;
                        for (const P2P &p : ops)
                          if (p.send)
                            if (auto e = c.gloo->waitSend(p.peer, p.seq))
                              return e;
                        return llvm::Error::success();
                      });
  }

  Driver &driver_;
  std::shared_ptr<GlooRendezvous> rdv_;
  std::mutex mu_;
  std::map<NcclComm, std::shared_ptr<Comm>> comms_;
};

} // namespace

std::unique_ptr<Nccl>
makeInterpretNccl(Driver &driver, std::shared_ptr<GlooRendezvous> rendezvous) {
  return std::make_unique<InterpretNccl>(driver, std::move(rendezvous));
}

} // namespace strata::cuda
