//===- GlooCommunicator.cpp - Communicators over Gloo's TCP transport -----===//
//
// Algorithms. Moves use Gloo's own: allgather (a ring of copies), alltoall
// (pairwise exchange), broadcast, and unbound-buffer send/recv. Reductions do
// not use Gloo's ring allreduce, whose sum order differs per chunk with the
// ring position: reduce-scatter is an alltoall (block j to rank j) followed by
// a local reduction of the received blocks in group-rank order, and
// all-reduce is that reduce-scatter over ceil(count/size)-element chunks
// followed by an allgather, at the ring's bandwidth (each rank sends and
// receives 2 (size-1)/size of the buffer); a small all-reduce is one
// allgather of whole buffers and the same ordered reduction on every rank.
// Either way every element is ((x_0 + x_1) + x_2) + ... in rank order, on
// every rank and in every run. bf16 / f16 elements are added in f32 and
// rounded once (reduceBlocks16).
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/GlooCommunicator.h"

#include "runtime/comm/TcpStore.h"
#include "runtime/kernels/Float16.h"

#include <gloo/allgather.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// All-reduces of up to this many bytes (over all ranks) gather every rank's
/// buffer in one round instead of two: latency dominates small messages.
constexpr int64_t kSmallAllReduceBytes = 64 << 10;

/// Slot prefix of send/recv (Gloo's collectives use small prefixes).
constexpr uint8_t kP2PSlotPrefix = 0x5e;

template <typename T>
void reduceBlocks(const T *blocks, int64_t n, int64_t count, T *out,
                  ReduceOp op) {
  std::memcpy(out, blocks, count * sizeof(T));
  for (int64_t j = 1; j < n; ++j) {
    const T *b = blocks + j * count;
    if (op == ReduceOp::Sum)
      for (int64_t i = 0; i < count; ++i)
        out[i] += b[i];
    else
      for (int64_t i = 0; i < count; ++i)
        out[i] = std::max(out[i], b[i]);
  }
}

/// bf16 / f16 blocks: each element widened to f32, reduced in f32 in block
/// order, rounded to 16 bits (nearest even) once, at the end, as NCCL
/// reduces bf16 (and as CollectiveKernels reduces 16-bit values through
/// f32 buffers): the result is the CPU device's bit for bit, while the
/// transport moves 16-bit values.
void reduceBlocks16(const uint16_t *blocks, int64_t n, int64_t count,
                    uint16_t *out, ReduceOp op, DType dt) {
  auto widen = [&](uint16_t h) {
    return dt == DType::BF16 ? kernels::bf16ToFloat(h)
                             : kernels::halfToFloat(h);
  };
  for (int64_t i = 0; i < count; ++i) {
    float acc = widen(blocks[i]);
    for (int64_t j = 1; j < n; ++j) {
      float x = widen(blocks[j * count + i]);
      acc = op == ReduceOp::Sum ? acc + x : std::max(acc, x);
    }
    out[i] = dt == DType::BF16 ? kernels::floatToBf16(acc)
                               : kernels::floatToHalf(acc);
  }
}

/// out[count] = reduction of the n blocks of `blocks`, in block order.
llvm::Error reduceInOrder(const void *blocks, int64_t n, int64_t count,
                          void *out, DType dt, ReduceOp op) {
  if (dt == DType::BF16 || dt == DType::F16)
    reduceBlocks16(static_cast<const uint16_t *>(blocks), n, count,
                   static_cast<uint16_t *>(out), op, dt);
  else if (dt == DType::F32)
    reduceBlocks(static_cast<const float *>(blocks), n, count,
                 static_cast<float *>(out), op);
  else if (dt == DType::F64)
    reduceBlocks(static_cast<const double *>(blocks), n, count,
                 static_cast<double *>(out), op);
  else
    return err("reductions take f32, f64, bf16 or f16, got " + dtypeName(dt));
  return llvm::Error::success();
}

/// A group of one rank: reductions and moves are copies.
class SelfCommunicator : public Communicator {
public:
  int64_t rank() const override { return 0; }
  int64_t size() const override { return 1; }
  llvm::Error allReduce(void *, int64_t, DType, ReduceOp) override {
    return llvm::Error::success();
  }
  llvm::Error allGather(const void *in, void *out, int64_t count,
                        DType dt) override {
    return copy(in, out, count, dt);
  }
  llvm::Error reduceScatter(const void *in, void *out, int64_t count, DType dt,
                            ReduceOp) override {
    return copy(in, out, count, dt);
  }
  llvm::Error allToAll(const void *in, void *out, int64_t count,
                       DType dt) override {
    return copy(in, out, count, dt);
  }
  llvm::Error broadcast(void *, int64_t, DType, int64_t) override {
    return llvm::Error::success();
  }
  llvm::Error send(const void *, int64_t, DType, int64_t peer,
                   uint32_t) override {
    return err("send: a group of one rank has no peer " + llvm::Twine(peer));
  }
  llvm::Error recv(void *, int64_t, DType, int64_t peer, uint32_t) override {
    return err("recv: a group of one rank has no peer " + llvm::Twine(peer));
  }
  llvm::Error postSend(const void *, int64_t, DType, int64_t peer,
                       uint32_t) override {
    return err("send: a group of one rank has no peer " + llvm::Twine(peer));
  }
  llvm::Error waitSends() override { return llvm::Error::success(); }
  llvm::Error waitSend(int64_t, uint32_t) override {
    return llvm::Error::success();
  }

private:
  static llvm::Error copy(const void *in, void *out, int64_t count, DType dt) {
    if (in != out)
      std::memcpy(out, in, count * dtypeBytes(dt));
    return llvm::Error::success();
  }
};

class GlooCommunicator : public ClosableCommunicator {
public:
  GlooCommunicator(std::shared_ptr<gloo::Context> ctx,
                   std::shared_ptr<GlooRendezvous> rdv, std::string name)
      : ctx_(std::move(ctx)), rdv_(std::move(rdv)), name_(std::move(name)) {
    rank_ = ctx_->rank;
    size_ = ctx_->size;
  }
  int64_t rank() const override { return rank_; }
  int64_t size() const override { return size_; }

  llvm::Error allReduce(void *buf, int64_t count, DType dt,
                        ReduceOp op) override {
    return guard("all_reduce", [&]() -> llvm::Error {
      int64_t eb = dtypeBytes(dt);
      if (count * eb * size_ <= kSmallAllReduceBytes) {
        // One round: every rank gathers every buffer and reduces in order.
        std::vector<char> blocks(size_ * count * eb);
        gather(buf, blocks.data(), count * eb);
        return reduceInOrder(blocks.data(), size_, count, buf, dt, op);
      }
      int64_t chunk = (count + size_ - 1) / size_;
      std::vector<char> padded(size_ * chunk * eb, 0), blocks(padded.size());
      std::memcpy(padded.data(), buf, count * eb);
      exchange(padded.data(), blocks.data(), padded.size());
      std::vector<char> mine(chunk * eb);
      if (auto e =
              reduceInOrder(blocks.data(), size_, chunk, mine.data(), dt, op))
        return e;
      gather(mine.data(), padded.data(), mine.size());
      std::memcpy(buf, padded.data(), count * eb);
      return llvm::Error::success();
    });
  }
  llvm::Error allGather(const void *in, void *out, int64_t count,
                        DType dt) override {
    return guard("all_gather", [&]() -> llvm::Error {
      gather(in, out, count * dtypeBytes(dt));
      return llvm::Error::success();
    });
  }
  llvm::Error reduceScatter(const void *in, void *out, int64_t count, DType dt,
                            ReduceOp op) override {
    return guard("reduce_scatter", [&]() -> llvm::Error {
      std::vector<char> blocks(size_ * count * dtypeBytes(dt));
      exchange(in, blocks.data(), blocks.size());
      return reduceInOrder(blocks.data(), size_, count, out, dt, op);
    });
  }
  llvm::Error allToAll(const void *in, void *out, int64_t count,
                       DType dt) override {
    return guard("all_to_all", [&]() -> llvm::Error {
      exchange(in, out, size_ * count * dtypeBytes(dt));
      return llvm::Error::success();
    });
  }
  llvm::Error broadcast(void *buf, int64_t count, DType dt,
                        int64_t root) override {
    if (root < 0 || root >= size_)
      return err("broadcast: root " + llvm::Twine(root) + " is not in " +
                 name_);
    return guard("broadcast", [&]() -> llvm::Error {
      gloo::BroadcastOptions o(ctx_);
      o.setOutput(static_cast<uint8_t *>(buf), size_t(count * dtypeBytes(dt)));
      o.setRoot(int(root));
      gloo::broadcast(o);
      return llvm::Error::success();
    });
  }
  llvm::Error send(const void *buf, int64_t count, DType dt, int64_t peer,
                   uint32_t tag) override {
    if (peer < 0 || peer >= size_ || peer == rank_)
      return err("send: peer " + llvm::Twine(peer) +
                 " is not another rank of " + name_);
    return guard("send", [&]() -> llvm::Error {
      auto ub = ctx_->createUnboundBuffer(const_cast<void *>(buf),
                                          count * dtypeBytes(dt));
      ub->send(int(peer), gloo::Slot::build(kP2PSlotPrefix, tag));
      ub->waitSend(rdv_->timeout());
      return llvm::Error::success();
    });
  }
  llvm::Error recv(void *buf, int64_t count, DType dt, int64_t peer,
                   uint32_t tag) override {
    if (peer < 0 || peer >= size_ || peer == rank_)
      return err("recv: peer " + llvm::Twine(peer) +
                 " is not another rank of " + name_);
    return guard("recv", [&]() -> llvm::Error {
      auto ub = ctx_->createUnboundBuffer(buf, count * dtypeBytes(dt));
      ub->recv(int(peer), gloo::Slot::build(kP2PSlotPrefix, tag));
      ub->waitRecv(rdv_->timeout());
      return llvm::Error::success();
    });
  }

  llvm::Error postSend(const void *buf, int64_t count, DType dt, int64_t peer,
                       uint32_t tag) override {
    if (peer < 0 || peer >= size_ || peer == rank_)
      return err("send: peer " + llvm::Twine(peer) +
                 " is not another rank of " + name_);
    return guard("send", [&]() -> llvm::Error {
      Posted p;
      p.data.assign(static_cast<const char *>(buf),
                    static_cast<const char *>(buf) + count * dtypeBytes(dt));
      p.buffer = ctx_->createUnboundBuffer(p.data.data(), p.data.size());
      p.buffer->send(int(peer), gloo::Slot::build(kP2PSlotPrefix, tag));
      p.peer = peer;
      p.tag = tag;
      posted_.push_back(std::move(p));
      return llvm::Error::success();
    });
  }
  llvm::Error waitSends() override {
    return guard("send", [&]() -> llvm::Error {
      for (Posted &p : posted_)
        p.buffer->waitSend(rdv_->timeout());
      posted_.clear();
      return llvm::Error::success();
    });
  }
  llvm::Error waitSend(int64_t peer, uint32_t tag) override {
    return guard("send", [&]() -> llvm::Error {
      for (Posted &p : posted_)
        if (p.peer == peer && p.tag == tag)
          p.buffer->waitSend(rdv_->timeout());
      llvm::erase_if(posted_, [&](const Posted &p) {
        return p.peer == peer && p.tag == tag;
      });
      return llvm::Error::success();
    });
  }

  /// Fails the calls in flight and every later one. Any thread may call it
  /// (the NCCL watchdog's abort does, while a call runs): the context stays
  /// until the communicator is destroyed, and the posted sends are the
  /// calling thread's to drop.
  void close() override {
    if (!closed_.exchange(true))
      ctx_->closeConnections();
  }

private:
  /// Runs `body` unless aborted; turns Gloo's exceptions into errors, after
  /// which the group is closed (its peers then fail instead of waiting).
  template <typename F> llvm::Error guard(const char *op, F &&body) {
    std::string why = rdv_->abortFlag().reason();
    if (!why.empty())
      return err(llvm::Twine(op) + " over " + name_ + ": stopped (" + why +
                 ")");
    if (closed_)
      return err(llvm::Twine(op) + " over " + name_ +
                 ": the group is closed after an earlier failure");
    try {
      return body();
    } catch (const std::exception &e) {
      close();
      posted_.clear();
      return err(llvm::Twine(op) + " over " + name_ + " (group rank " +
                 llvm::Twine(rank_) + " of " + llvm::Twine(size_) +
                 "): " + e.what());
    }
  }
  void exchange(const void *in, void *out, size_t bytes) {
    gloo::AlltoallOptions o(ctx_);
    o.setInput(static_cast<uint8_t *>(const_cast<void *>(in)), bytes);
    o.setOutput(static_cast<uint8_t *>(out), bytes);
    gloo::alltoall(o);
  }
  void gather(const void *in, void *out, size_t bytes) {
    gloo::AllgatherOptions o(ctx_);
    o.setInput(static_cast<uint8_t *>(const_cast<void *>(in)), bytes);
    o.setOutput(static_cast<uint8_t *>(out), bytes * size_);
    gloo::allgather(o);
  }

  /// An eager send in flight: its own copy of the data.
  struct Posted {
    std::vector<char> data;
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    int64_t peer = 0;
    uint32_t tag = 0;
  };

  std::shared_ptr<gloo::Context> ctx_;
  std::atomic<bool> closed_{false};
  std::shared_ptr<GlooRendezvous> rdv_;
  std::string name_;
  int64_t rank_ = 0, size_ = 1;
  std::vector<Posted> posted_;
};

class GlooCommunicators : public Communicators {
public:
  GlooCommunicators(const Mesh &mesh, int64_t rank,
                    std::shared_ptr<GlooRendezvous> rdv)
      : mesh_(mesh), rank_(rank), rdv_(std::move(rdv)) {}

  const Mesh &mesh() const override { return mesh_; }
  int64_t rank() const override { return rank_; }
  const std::shared_ptr<GlooRendezvous> &rendezvous() const { return rdv_; }

  llvm::Expected<Communicator *>
  group(llvm::ArrayRef<std::string> axes) override {
    llvm::SmallVector<std::string, 3> used;
    for (const std::string &a : axes)
      if (mesh_.axisSize(a) > 1)
        used.push_back(a);
    if (used.empty())
      return &self_;
    std::string key = llvm::join(used, ",");
    std::lock_guard<std::mutex> lock(mu_);
    auto it = groups_.find(key);
    if (it != groups_.end())
      return it->second.get();
    if (!aborted_.empty())
      return err("group [" + key + "]: stopped (" + aborted_ + ")");
    llvm::SmallVector<int64_t, 8> ranks = groupRanks(mesh_, rank_, used);
    int64_t me = shardIndex(mesh_, rank_, used);
    std::string name = "[" + key + "] (ranks ";
    for (size_t i = 0; i < ranks.size(); ++i)
      name += (i ? "," : "") + std::to_string(ranks[i]);
    name += ")";
    auto c =
        connectGlooGroup(rdv_, "group/" + key + "/" + std::to_string(ranks[0]),
                         me, int64_t(ranks.size()), name);
    if (!c)
      return c.takeError();
    Communicator *p = c->get();
    groups_[key] = std::move(*c);
    return p;
  }

  void abort(llvm::StringRef reason) override {
    rdv_->abortFlag().set(reason);
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = reason.str();
    for (auto &[key, c] : groups_)
      c->close();
  }

private:
  Mesh mesh_;
  int64_t rank_;
  std::shared_ptr<GlooRendezvous> rdv_;
  SelfCommunicator self_;
  std::mutex mu_;
  std::string aborted_;
  std::map<std::string, std::unique_ptr<ClosableCommunicator>> groups_;
};

std::shared_ptr<gloo::transport::Device> tcpDevice(const std::string &host) {
  gloo::transport::tcp::attr attr;
  attr.hostname = host;
  attr.ai_family = AF_INET;
  return gloo::transport::tcp::CreateDevice(attr);
}
} // namespace

void AbortFlag::set(llvm::StringRef reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (reason_.empty())
    reason_ = reason.empty() ? "aborted" : reason.str();
}

std::string AbortFlag::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

GlooRendezvous::~GlooRendezvous() = default;

std::shared_ptr<GlooRendezvous>
GlooRendezvous::inProcess(std::chrono::milliseconds timeout) {
  std::shared_ptr<GlooRendezvous> r(new GlooRendezvous());
  r->timeout_ = timeout;
  r->store_ = std::make_shared<gloo::rendezvous::HashStore>();
  r->device_ = tcpDevice("127.0.0.1");
  return r;
}

llvm::Expected<std::shared_ptr<GlooRendezvous>>
GlooRendezvous::tcp(const std::string &masterAddr, int port, bool serve,
                    const std::string &localHost,
                    std::chrono::milliseconds timeout) {
  std::shared_ptr<GlooRendezvous> r(new GlooRendezvous());
  r->timeout_ = timeout;
  std::unique_ptr<TcpStoreServer> server;
  if (serve) {
    auto s = TcpStoreServer::start(port);
    if (!s)
      return s.takeError();
    server = std::move(*s);
  }
  auto client = TcpStore::connect(masterAddr, port, timeout);
  if (!client)
    return client.takeError();
  r->server_ = std::move(server);
  r->store_ = std::shared_ptr<gloo::rendezvous::Store>(std::move(*client));
  try {
    r->device_ = tcpDevice(localHost);
  } catch (const std::exception &e) {
    return err("gloo: cannot create a TCP device on '" + localHost +
               "': " + e.what());
  }
  return r;
}

namespace {
/// A peer that closed its connections (it failed, or finished first) must
/// surface as a Gloo error (EPIPE) on this rank, not as a SIGPIPE that
/// kills the whole process with every other rank in it: every Gloo
/// connection (the trainer's groups, interpret mode's NCCL) starts here.
void ignoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { std::signal(SIGPIPE, SIG_IGN); });
}
} // namespace

llvm::Expected<std::unique_ptr<ClosableCommunicator>>
connectGlooGroup(std::shared_ptr<GlooRendezvous> rendezvous,
                 const std::string &prefix, int64_t rank, int64_t size,
                 const std::string &name) {
  ignoreSigpipe();
  try {
    auto ctx =
        std::make_shared<gloo::rendezvous::Context>(int(rank), int(size));
    ctx->setTimeout(rendezvous->timeout());
    gloo::rendezvous::PrefixStore store(prefix, rendezvous->store());
    ctx->connectFullMesh(store, rendezvous->device());
    return std::make_unique<GlooCommunicator>(ctx, rendezvous, name);
  } catch (const std::exception &e) {
    return err("connecting group " + name + " as its rank " +
               llvm::Twine(rank) + ": " + e.what());
  }
}

std::shared_ptr<GlooRendezvous> rendezvousOf(Communicators &comms) {
  auto *g = dynamic_cast<GlooCommunicators *>(&comms);
  return g ? g->rendezvous() : nullptr;
}

std::unique_ptr<Communicators>
createGlooCommunicators(const Mesh &mesh, int64_t rank,
                        std::shared_ptr<GlooRendezvous> rendezvous) {
  ignoreSigpipe();
  return std::make_unique<GlooCommunicators>(mesh, rank, std::move(rendezvous));
}

} // namespace strata
