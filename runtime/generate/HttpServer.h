//===- HttpServer.h - `strata serve`: the APIs over HTTP ------------------===//
//
// cpp-httplib (Debian's libcpp-httplib) serves:
//   PUT  /api             Megatron-LM's text generation API
//   POST /v1/completions  OpenAI's completions, whole or streamed as
//                         server-sent events ("stream": true)
//   GET  /v1/models       the one model served
//   GET  /health          "ok" once the model is loaded
// Request threads parse and check (Api.h) and hand the sequences to one
// Scheduler, which batches everything in flight on the model's thread.
// A refused request gets 400 (bad request), 413 (body over the limit) or
// 503 (queue full) with a message; an engine failure 500.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/generate/Api.h"
#include "runtime/generate/Scheduler.h"

#include <memory>
#include <string>

namespace httplib {
class Server;
}

namespace strata::generate {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0; ///< 0: any free port (see HttpServer::port()).
  int64_t maxQueue = 64;
  int threads = 32;               ///< HTTP worker threads.
  size_t maxBodyBytes = 1u << 20; ///< Larger bodies get 413.
};

class HttpServer {
public:
  /// Binds to opts.host:opts.port. `scheduler` and `ctx` must outlive the
  /// server.
  static llvm::Expected<std::unique_ptr<HttpServer>>
  create(Scheduler &scheduler, const ServeContext &ctx,
         const ServerOptions &opts);
  ~HttpServer();

  /// The bound port.
  int port() const { return port_; }
  /// Serves until stop() (from another thread).
  void run();
  void stop();

private:
  HttpServer(Scheduler &scheduler, const ServeContext &ctx);
  void routes();

  Scheduler &scheduler_;
  const ServeContext &ctx_;
  std::unique_ptr<httplib::Server> svr_;
  int port_ = 0;
};

} // namespace strata::generate
