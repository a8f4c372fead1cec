//===- TcpStore.h - A key-value store over TCP for Gloo's rendezvous ------===//
//
// torchrun's TCPStore in miniature: rank 0 serves a map of keys to bytes at
// MASTER_ADDR:MASTER_PORT, and every rank (0 included) is a client that sets
// keys and waits for others' keys. Gloo's full-mesh rendezvous uses it to
// exchange the ranks' transport addresses. One request per round trip:
//   request  op:u8 keylen:u32 key [vallen:u32 value]   (op 0 set, 1 get,
//            2 will)
//   reply    set, will: 1;  get: found:u8 [vallen:u32 value]
// A will is set by the server when its client's connection ends: a rank
// that dies while its peers wait for its keys (the rendezvous) fails their
// waits at once, instead of after the whole timeout.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <gloo/rendezvous/store.h>

#include "llvm/Support/Error.h"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata {

/// The key of the wills ranks leave (Heartbeat.cpp): set once a rank's
/// process ended; every wait fails once it is set.
constexpr const char *kRankExitedKey = "strata/exited";

/// A free TCP port on the loopback interface, or -1 (another process may
/// take it before the caller binds it; rare on one machine).
int freeLoopbackPort();

/// The server side: a thread accepting clients, one thread per client.
class TcpStoreServer {
public:
  /// Listens on `port` of every interface (0: any free port).
  static llvm::Expected<std::unique_ptr<TcpStoreServer>> start(int port);
  ~TcpStoreServer();
  int port() const { return port_; }

private:
  TcpStoreServer() = default;
  void acceptLoop();
  void serve(int fd);
  /// Answers `fd`'s requests until it closes; its will, if it left one.
  void serveRequests(int fd, std::string &willKey,
                     std::vector<char> &willValue);

  int listenFd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::map<std::string, std::vector<char>> map_;
  std::vector<int> clientFds_;
  std::vector<std::thread> clients_;
};

/// The client side, as a Gloo store.
class TcpStore : public gloo::rendezvous::Store {
public:
  /// Connects to host:port, retrying until `timeout` (the server may start
  /// after the clients).
  static llvm::Expected<std::unique_ptr<TcpStore>>
  connect(const std::string &host, int port, std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string &key, const std::vector<char> &data) override;
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override;
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;
  /// One get round trip: the value, or nothing if the key is absent.
  bool tryGet(const std::string &key, std::vector<char> &value);
  /// The server sets `key` to `value` when this connection ends (the process
  /// exited or died).
  void setWill(const std::string &key, const std::vector<char> &value);

private:
  TcpStore(int fd, std::chrono::milliseconds timeout)
      : fd_(fd), timeout_(timeout) {}
  void request(uint8_t op, const std::string &key,
               const std::vector<char> &data);

  int fd_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
};

} // namespace strata
