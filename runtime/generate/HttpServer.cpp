//===- HttpServer.cpp - `strata serve`: the APIs over HTTP ----------------===//
#include "runtime/generate/HttpServer.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <random>

namespace strata::generate {

namespace {

/// Waits for the results of one request's sequences.
struct Collector {
  explicit Collector(size_t n) : results(n), left(n) {}
  std::mutex mu;
  std::condition_variable cv;
  std::vector<GenerationResult> results;
  size_t left;
};

/// Server-sent events of one streamed request, from the model's thread to
/// the request's thread.
struct Channel {
  explicit Channel(size_t n) : sent(n), left(n) {}
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> events;
  std::vector<size_t> sent; ///< Text bytes sent per choice.
  size_t left;
  std::atomic<bool> cancelled{false};
};

std::string event(const llvm::json::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "data: " << v << "\n\n";
  return os.str();
}

std::string jsonText(const llvm::json::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  return os.str();
}

uint64_t freshSeed() { return std::random_device()(); }

int64_t unixTime() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

HttpServer::HttpServer(Scheduler &scheduler, const ServeContext &ctx)
    : scheduler_(scheduler), ctx_(ctx),
      svr_(std::make_unique<httplib::Server>()) {}

HttpServer::~HttpServer() = default;

llvm::Expected<std::unique_ptr<HttpServer>>
HttpServer::create(Scheduler &scheduler, const ServeContext &ctx,
                   const ServerOptions &opts) {
  std::unique_ptr<HttpServer> s(new HttpServer(scheduler, ctx));
  int threads = opts.threads;
  s->svr_->new_task_queue = [threads] {
    return new httplib::ThreadPool(threads);
  };
  s->svr_->set_payload_max_length(opts.maxBodyBytes);
  s->routes();
  // cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG,
  // compiled into Debian's shared library): a burst of new connections
  // beyond it waits for the client's SYN retransmission, a full second.
  // The socket is kept here and listen() raised after the bind.
  int listenFd = -1;
  s->svr_->set_socket_options([&listenFd](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listenFd = sock;
  });
  if (opts.port == 0) {
    s->port_ = s->svr_->bind_to_any_port(opts.host);
  } else if (s->svr_->bind_to_port(opts.host, opts.port)) {
    s->port_ = opts.port;
  } else {
    s->port_ = -1;
  }
  if (s->port_ > 0 && listenFd >= 0)
    ::listen(listenFd, SOMAXCONN);
  if (s->port_ <= 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "cannot listen on " + opts.host + ":" + std::to_string(opts.port) +
            " (the port is taken or the address is not this machine's; "
            "choose another --port, or --port 0 for any free one)");
  return s;
}

void HttpServer::run() { svr_->listen_after_bind(); }
void HttpServer::stop() { svr_->stop(); }

void HttpServer::routes() {
  httplib::Server &svr = *svr_;
  svr.Get("/health", [](const httplib::Request &, httplib::Response &res) {
    res.set_content("ok\n", "text/plain");
  });
  svr.Get(
      "/v1/models", [this](const httplib::Request &, httplib::Response &res) {
        llvm::json::Value v = llvm::json::Object{
            {"object", "list"},
            {"data",
             llvm::json::Array{llvm::json::Object{{"id", ctx_.modelName},
                                                  {"object", "model"},
                                                  {"owned_by", "strata"}}}}};
        res.set_content(jsonText(v), "application/json");
      });

  // Runs `req`'s sequences to the end and returns their results, or sets
  // the error response and returns nothing.
  auto runAll =
      [this](ApiRequest &req, httplib::Response &res,
             bool openai) -> std::optional<std::vector<GenerationResult>> {
    auto col = std::make_shared<Collector>(req.sequences.size());
    std::vector<Scheduler::Job> jobs;
    for (size_t i = 0; i < req.sequences.size(); ++i) {
      Sink sink;
      sink.onFinish = [col, i](GenerationResult r) {
        std::lock_guard<std::mutex> lock(col->mu);
        col->results[i] = std::move(r);
        if (--col->left == 0)
          col->cv.notify_all();
      };
      jobs.push_back({req.sequences[i], std::move(sink)});
    }
    auto fail = [&](int status, const std::string &msg) {
      res.status = status;
      res.set_content(
          jsonText(openai ? openaiError(msg) : llvm::json::Value(msg)),
          "application/json");
    };
    if (auto e = scheduler_.submit(std::move(jobs))) {
      fail(503, llvm::toString(std::move(e)));
      return std::nullopt;
    }
    std::unique_lock<std::mutex> lock(col->mu);
    col->cv.wait(lock, [&] { return col->left == 0; });
    for (const GenerationResult &r : col->results)
      if (!r.error.empty()) {
        fail(500, "generation failed: " + r.error);
        return std::nullopt;
      }
    return std::move(col->results);
  };

  svr.Put("/api",
          [this, runAll](const httplib::Request &hreq, httplib::Response &res) {
            auto parsed = parseMegatronRequest(hreq.body, ctx_, freshSeed());
            if (auto *e = std::get_if<ApiError>(&parsed)) {
              res.status = e->status;
              res.set_content(jsonText(llvm::json::Value(e->message)),
                              "application/json");
              return;
            }
            ApiRequest &req = std::get<ApiRequest>(parsed);
            if (auto results = runAll(req, res, false))
              res.set_content(jsonText(megatronResponse(req, *results, ctx_)),
                              "application/json");
          });

  svr.Post("/v1/completions", [this, runAll](const httplib::Request &hreq,
                                             httplib::Response &res) {
    auto parsed = parseCompletionRequest(hreq.body, ctx_, freshSeed());
    if (auto *e = std::get_if<ApiError>(&parsed)) {
      res.status = e->status;
      res.set_content(jsonText(openaiError(e->message)), "application/json");
      return;
    }
    static std::atomic<uint64_t> counter{0};
    std::string id = "cmpl-" + std::to_string(++counter);
    int64_t created = unixTime();
    auto req =
        std::make_shared<ApiRequest>(std::move(std::get<ApiRequest>(parsed)));
    if (!req->stream) {
      if (auto results = runAll(*req, res, true))
        res.set_content(
            jsonText(completionResponse(*req, *results, ctx_, id, created)),
            "application/json");
      return;
    }
    // Streaming: chunks go through a channel the response provider drains.
    size_t n = req->sequences.size();
    auto ch = std::make_shared<Channel>(n);
    const ServeContext &ctx = ctx_;
    std::vector<Scheduler::Job> jobs;
    for (size_t i = 0; i < n; ++i) {
      if (req->echo)
        ch->events.push_back(
            event(completionChunk(*req, i, req->prompts[i], nullptr,
                                  std::nullopt, ctx, id, created)));
      Sink sink;
      sink.onToken = [=, &ctx](const TokenEvent &ev) {
        if (ch->cancelled)
          return false;
        if (ev.text.empty() && !req->logprobs)
          return true;
        std::string e = event(completionChunk(*req, i, ev.text, &ev,
                                              std::nullopt, ctx, id, created));
        std::lock_guard<std::mutex> lock(ch->mu);
        ch->sent[i] += ev.text.size();
        ch->events.push_back(std::move(e));
        ch->cv.notify_all();
        return true;
      };
      sink.onFinish = [=, &ctx](GenerationResult r) {
        std::lock_guard<std::mutex> lock(ch->mu);
        std::string rest =
            r.text.size() > ch->sent[i] ? r.text.substr(ch->sent[i]) : "";
        ch->events.push_back(event(completionChunk(
            *req, i, rest, nullptr, r.finish, ctx, id, created)));
        if (!r.error.empty())
          ch->events.push_back(
              event(openaiError("generation failed: " + r.error)));
        if (--ch->left == 0)
          ch->events.push_back("data: [DONE]\n\n");
        ch->cv.notify_all();
      };
      jobs.push_back({req->sequences[i], std::move(sink)});
    }
    if (auto e = scheduler_.submit(std::move(jobs))) {
      res.status = 503;
      res.set_content(jsonText(openaiError(llvm::toString(std::move(e)))),
                      "application/json");
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [ch](size_t, httplib::DataSink &sink) {
          std::unique_lock<std::mutex> lock(ch->mu);
          ch->cv.wait_for(lock, std::chrono::milliseconds(200),
                          [&] { return !ch->events.empty() || ch->left == 0; });
          std::deque<std::string> out = std::move(ch->events);
          ch->events.clear();
          bool finished = ch->left == 0;
          lock.unlock();
          for (const std::string &e : out)
            if (!sink.write(e.data(), e.size())) {
              ch->cancelled = true;
              return false;
            }
          if (finished)
            sink.done();
          return true;
        },
        [ch](bool success) {
          if (!success)
            ch->cancelled = true;
        });
  });
}

} // namespace strata::generate
