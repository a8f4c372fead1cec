//===- TcpStore.cpp - A key-value store over TCP for Gloo's rendezvous ----===//
#include "runtime/comm/TcpStore.h"

#include <gloo/common/error.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace strata {

int freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0)
    ::close(fd);
  return port;
}

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

bool writeAll(int fd, const void *p, size_t n) {
  const char *c = static_cast<const char *>(p);
  while (n) {
    ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    c += w;
    n -= size_t(w);
  }
  return true;
}

bool readAll(int fd, void *p, size_t n) {
  char *c = static_cast<char *>(p);
  while (n) {
    ssize_t r = ::recv(fd, c, n, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}

bool writeBytes(int fd, const char *p, uint32_t n) {
  return writeAll(fd, &n, sizeof n) && writeAll(fd, p, n);
}

bool readBytes(int fd, std::vector<char> &out) {
  uint32_t n;
  if (!readAll(fd, &n, sizeof n))
    return false;
  out.resize(n);
  return readAll(fd, out.data(), n);
}

enum Op : uint8_t { kSet = 0, kGet = 1, kWill = 2 };
} // namespace

llvm::Expected<std::unique_ptr<TcpStoreServer>>
TcpStoreServer::start(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return err("tcp store: socket: " + llvm::Twine(strerror(errno)));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(uint16_t(port));
  if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) < 0 ||
      ::listen(fd, 128) < 0) {
    std::string why = strerror(errno);
    ::close(fd);
    return err("tcp store: cannot listen on port " + llvm::Twine(port) + " (" +
               why + "; is another job using MASTER_PORT? pick a free port)");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  std::unique_ptr<TcpStoreServer> s(new TcpStoreServer());
  s->listenFd_ = fd;
  s->port_ = ntohs(addr.sin_port);
  s->acceptor_ = std::thread([p = s.get()] { p->acceptLoop(); });
  return s;
}

TcpStoreServer::~TcpStoreServer() {
  stop_ = true;
  ::shutdown(listenFd_, SHUT_RDWR);
  ::close(listenFd_);
  acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : clientFds_)
      ::shutdown(fd, SHUT_RDWR);
  }
  for (std::thread &t : clients_)
    t.join();
  for (int fd : clientFds_)
    ::close(fd);
}

void TcpStoreServer::acceptLoop() {
  while (!stop_) {
    int fd = ::accept(listenFd_, nullptr, nullptr);
    if (fd < 0) {
      if (errno == EINTR)
        continue;
      return; // closed
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    clientFds_.push_back(fd);
    clients_.emplace_back([this, fd] { serve(fd); });
  }
}

void TcpStoreServer::serve(int fd) {
  std::string willKey;
  std::vector<char> willValue;
  serveRequests(fd, willKey, willValue);
  // The client is gone (unless the server is stopping): its will.
  if (!willKey.empty() && !stop_) {
    std::lock_guard<std::mutex> lock(mu_);
    map_[willKey] = std::move(willValue);
  }
}

void TcpStoreServer::serveRequests(int fd, std::string &willKey,
                                   std::vector<char> &willValue) {
  while (true) {
    uint8_t op;
    std::vector<char> key, value;
    if (!readAll(fd, &op, 1) || !readBytes(fd, key))
      return;
    std::string k(key.begin(), key.end());
    if (op == kWill) {
      if (!readBytes(fd, willValue))
        return;
      willKey = k;
      uint8_t ok = 1;
      if (!writeAll(fd, &ok, 1))
        return;
    } else if (op == kSet) {
      if (!readBytes(fd, value))
        return;
      {
        std::lock_guard<std::mutex> lock(mu_);
        map_[k] = std::move(value);
      }
      uint8_t ok = 1;
      if (!writeAll(fd, &ok, 1))
        return;
    } else if (op == kGet) {
      bool found;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = map_.find(k);
        found = it != map_.end();
        if (found)
          value = it->second;
      }
      uint8_t f = found;
      if (!writeAll(fd, &f, 1) ||
          (found && !writeBytes(fd, value.data(), uint32_t(value.size()))))
        return;
    } else {
      return; // a client speaking another protocol
    }
  }
}

llvm::Expected<std::unique_ptr<TcpStore>>
TcpStore::connect(const std::string &host, int port,
                  std::chrono::milliseconds timeout) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                             &res))
    return err("tcp store: cannot resolve MASTER_ADDR '" + host + "' (" +
               gai_strerror(rc) + ")");
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int fd = ::socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      ::freeaddrinfo(res);
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return std::unique_ptr<TcpStore>(new TcpStore(fd, timeout));
    }
    if (fd >= 0)
      ::close(fd);
    if (std::chrono::steady_clock::now() > deadline) {
      ::freeaddrinfo(res);
      return err("tcp store: no server at " + host + ":" + llvm::Twine(port) +
                 " after " + llvm::Twine(timeout.count()) +
                 " ms (is rank 0 running with the same MASTER_ADDR and "
                 "MASTER_PORT?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TcpStore::~TcpStore() { ::close(fd_); }

void TcpStore::set(const std::string &key, const std::vector<char> &data) {
  request(kSet, key, data);
}

void TcpStore::setWill(const std::string &key, const std::vector<char> &value) {
  request(kWill, key, value);
}

void TcpStore::request(uint8_t op, const std::string &key,
                       const std::vector<char> &data) {
  std::lock_guard<std::mutex> lock(mu_);
  uint8_t ok = 0;
  if (!writeAll(fd_, &op, 1) ||
      !writeBytes(fd_, key.data(), uint32_t(key.size())) ||
      !writeBytes(fd_, data.data(), uint32_t(data.size())) ||
      !readAll(fd_, &ok, 1))
    throw gloo::IoException("tcp store: lost the connection to the server "
                            "(rank 0) while setting '" +
                            key + "'");
}

bool TcpStore::tryGet(const std::string &key, std::vector<char> &value) {
  std::lock_guard<std::mutex> lock(mu_);
  uint8_t op = kGet, found = 0;
  if (!writeAll(fd_, &op, 1) ||
      !writeBytes(fd_, key.data(), uint32_t(key.size())) ||
      !readAll(fd_, &found, 1) || (found && !readBytes(fd_, value)))
    throw gloo::IoException("tcp store: lost the connection to the server "
                            "(rank 0) while reading '" +
                            key + "'");
  return found;
}

std::vector<char> TcpStore::get(const std::string &key) {
  wait({key}, timeout_);
  std::vector<char> value;
  tryGet(key, value);
  return value;
}

void TcpStore::wait(const std::vector<std::string> &keys) {
  wait(keys, timeout_);
}

void TcpStore::wait(const std::vector<std::string> &keys,
                    const std::chrono::milliseconds &timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<char> scratch;
  for (const std::string &key : keys) {
    for (int polls = 0; !tryGet(key, scratch); ++polls) {
      // A rank that exited will not set the key (every 100 ms).
      if (polls % 20 == 19 && tryGet(kRankExitedKey, scratch))
        throw gloo::IoException(
            "tcp store: " + std::string(scratch.begin(), scratch.end()) +
            " while this rank waited for '" + key + "'");
      if (std::chrono::steady_clock::now() > deadline)
        throw gloo::IoException(
            "tcp store: timed out after " + std::to_string(timeout.count()) +
            " ms waiting for '" + key + "' (a rank did not start or failed)");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

} // namespace strata
