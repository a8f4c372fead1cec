//===- Serve.cpp - `strata serve CHECKPOINT --port N` ---------------------===//
//
// Serves a training checkpoint over HTTP: Megatron-LM's `PUT /api` and
// OpenAI's `POST /v1/completions` (runtime/generate/HttpServer.h), with
// concurrent requests batched on one key/value-cache decoder. Binds to
// 127.0.0.1 unless --host says otherwise (the server has no
// authentication). Prints `listening on http://HOST:PORT` once it accepts
// connections; SIGINT / SIGTERM stop it (exit 130 / 143).
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuDevice.h"
#include "runtime/generate/HttpServer.h"
#include "runtime/generate/LoadedModel.h"
#include "tools/strata/Flags.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <csignal>
#include <pthread.h>
#include <thread>

using namespace llvm;
using namespace strata::generate;

namespace strata {
namespace {

cl::SubCommand serveCmd(
    "serve",
    "Serve a checkpoint over HTTP (Megatron /api, OpenAI /v1/completions)");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> ckptPath(cl::Positional, cl::Required,
                              cl::desc("<checkpoint.bin>"), cl::sub(serveCmd),
                              cl::cat(cat));
cl::opt<int64_t> port("port",
                      cl::desc("TCP port (0: any free port, printed at start)"),
                      cl::Required, cl::sub(serveCmd), cl::cat(cat));
cl::opt<std::string>
    host("host",
         cl::desc("Address to listen on (default loopback only; the "
                  "server has no authentication)"),
         cl::init("127.0.0.1"), cl::sub(serveCmd), cl::cat(cat));
cl::opt<std::string> tokenizerFlag(
    "tokenizer",
    cl::desc("byte, or a tokenizer.json / SentencePiece .model to "
             "use instead of the checkpoint's tokenizer"),
    cl::sub(serveCmd), cl::cat(cat));
cl::opt<int64_t> maxBatch("max-batch",
                          cl::desc("Sequences decoded together at most"),
                          cl::init(16), cl::sub(serveCmd), cl::cat(cat));
cl::opt<int64_t>
    maxQueue("max-queue",
             cl::desc("Sequences waiting at most; more get HTTP 503"),
             cl::init(256), cl::sub(serveCmd), cl::cat(cat));
cl::opt<int64_t> threads("http-threads", cl::desc("HTTP worker threads"),
                         cl::init(32), cl::sub(serveCmd), cl::cat(cat));
cl::opt<int64_t>
    maxBody("max-body-kib",
            cl::desc("Largest request body in KiB (more: HTTP 413)"),
            cl::init(1024), cl::sub(serveCmd), cl::cat(cat));

bool isLoopback(StringRef h) {
  return h == "localhost" || h == "::1" || h.startswith("127.");
}

int runServe() {
  if (auto e = checkFlags({
          inRange(port, 0, 65535, "0 picks a free port"),
          inRange(maxBatch, 1, 1024, "sequences decoded together"),
          inRange(maxQueue, 1, 1 << 20, "sequences waiting for a slot"),
          inRange(threads, 1, 1024, "threads answering HTTP requests"),
          inRange(maxBody, 1, 1 << 20, "the largest request body in KiB"),
      }))
    return reportError(std::move(e));
  if (!isLoopback(host))
    reportWarning("--host " + host +
                  " accepts connections from other machines; "
                  "strata serve has no authentication");

  // SIGINT / SIGTERM go to one thread that stops the server (set before any
  // thread starts so every thread inherits the mask).
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGINT);
  sigaddset(&stopSignals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  auto model = LoadedModel::load(ckptPath);
  if (!model)
    return reportError(model.takeError());
  if (auto e = (*model)->chooseTokenizer(tokenizerFlag, ckptPath))
    return reportError(std::move(e));
  CpuDevice device;
  auto decoder = (*model)->makeDecoder(/*cached=*/true, maxBatch, device);
  if (!decoder)
    return reportError(decoder.takeError());
  int64_t cacheBytes = static_cast<CachedDecoder &>(**decoder).cacheBytes();
  const Tokenizer &tok = *(*model)->tokenizer;
  Scheduler scheduler(**decoder, tok, maxQueue,
                      [](const std::string &m) { reportError(m); });
  ServeContext ctx;
  ctx.config = &(*model)->config;
  ctx.tokenizer = &tok;
  ctx.modelName = (*model)->config.name.empty()
                      ? sys::path::filename(ckptPath).str()
                      : (*model)->config.name;
  ctx.sampleVocab = std::min((*model)->config.vocab, tok.vocabSize());
  ServerOptions opts;
  opts.host = host;
  opts.port = int(port);
  opts.maxQueue = maxQueue;
  opts.threads = int(threads);
  opts.maxBodyBytes = size_t(maxBody) * 1024;
  auto server = HttpServer::create(scheduler, ctx, opts);
  if (!server)
    return reportError(server.takeError());

  std::atomic<int> stopSignal{0};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stopSignals, &sig);
    stopSignal = sig;
    (*server)->stop();
  });
  outs() << "strata serve: " << ctx.modelName << " ("
         << (*model)->config.familyName() << ", seq " << (*model)->config.seq
         << ", key/value cache "
         << format("%.1f", double(cacheBytes) / (1 << 20)) << " MiB for "
         << maxBatch << " sequences) listening on http://" << host << ":"
         << (*server)->port() << '\n';
  outs().flush();
  (*server)->run();
  int sig = stopSignal;
  if (!sig)
    pthread_kill(waiter.native_handle(), SIGTERM); // wake the waiter
  waiter.join();
  if (!sig)
    return reportError(usageError("the HTTP server stopped unexpectedly"));
  return 128 + sig;
}

VerbRegistration reg(serveCmd, runServe);

} // namespace
} // namespace strata
