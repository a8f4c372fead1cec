//===- GlooCommunicator.h - Communicators over Gloo's TCP transport -------===//
//
// Ranks meet through a GlooRendezvous: a key-value store where each group's
// members publish their addresses, and Gloo's TCP transport. Ranks that are
// threads of one process share an in-memory store; ranks that are processes
// use a TCP store served by rank 0 at MASTER_ADDR:MASTER_PORT (torchrun's
// convention). Each group (each tp group, each dp group, the world, ...) is
// its own Gloo context, connected full-mesh on first use.
//
// A collective waits at most the rendezvous timeout for its peers; a rank
// that fails closes its connections (Communicators::abort), so peers blocked
// on it fail at once, and in-process ranks also share an abort flag checked
// before each collective.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/comm/Communicator.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

namespace gloo {
namespace rendezvous {
class Store;
} // namespace rendezvous
namespace transport {
class Device;
} // namespace transport
} // namespace gloo

namespace strata {

class TcpStoreServer;

/// Shared by the ranks of one process: set when one of them fails.
class AbortFlag {
public:
  /// Records the first reason; later ones are ignored.
  void set(llvm::StringRef reason);
  /// The reason, or empty if not set.
  std::string reason() const;

private:
  mutable std::mutex mu_;
  std::string reason_;
};

/// Where the ranks of a job connect.
class GlooRendezvous {
public:
  ~GlooRendezvous();

  /// For ranks that are threads of this process: an in-memory store and
  /// loopback TCP.
  static std::shared_ptr<GlooRendezvous>
  inProcess(std::chrono::milliseconds timeout);

  /// For ranks that are processes: the TCP store at masterAddr:port, served
  /// by this process when `serve` (rank 0). `localHost` is the address
  /// peers reach this process at.
  static llvm::Expected<std::shared_ptr<GlooRendezvous>>
  tcp(const std::string &masterAddr, int port, bool serve,
      const std::string &localHost, std::chrono::milliseconds timeout);

  std::chrono::milliseconds timeout() const { return timeout_; }
  gloo::rendezvous::Store &store() { return *store_; }
  std::shared_ptr<gloo::transport::Device> &device() { return device_; }
  AbortFlag &abortFlag() { return abort_; }

private:
  GlooRendezvous() = default;
  std::chrono::milliseconds timeout_{0};
  std::unique_ptr<TcpStoreServer> server_; // rank 0 of a multi-process job
  std::shared_ptr<gloo::rendezvous::Store> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  AbortFlag abort_;
};

/// Rank `rank`'s communicators over `mesh`, connecting through `rendezvous`.
std::unique_ptr<Communicators>
createGlooCommunicators(const Mesh &mesh, int64_t rank,
                        std::shared_ptr<GlooRendezvous> rendezvous);

/// A Gloo group that can be closed: its peers then fail instead of waiting.
class ClosableCommunicator : public Communicator {
public:
  /// Closes the connections (dropping posted sends); later calls fail.
  virtual void close() = 0;
};

/// A group of `size` ranks, this one `rank`, connected full-mesh through
/// `rendezvous` under the store prefix `prefix` (every member passes the
/// same one); `name` names it in errors. Used by the emulated NCCL of
/// interpret mode (runtime/cuda/nccl/InterpretNccl.h).
llvm::Expected<std::unique_ptr<ClosableCommunicator>>
connectGlooGroup(std::shared_ptr<GlooRendezvous> rendezvous,
                 const std::string &prefix, int64_t rank, int64_t size,
                 const std::string &name);

/// The rendezvous of communicators made by createGlooCommunicators; null
/// for others.
std::shared_ptr<GlooRendezvous> rendezvousOf(Communicators &comms);

} // namespace strata
