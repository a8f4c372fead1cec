//===- TrainingRun.cpp - A whole training job
//------------------------------===//
#include "runtime/train/TrainingRun.h"

#include "frontends/ModelSpec.h"
#include "frontends/ModelStats.h"
#include "frontends/Models.h"
#include "frontends/TrainingPrecision.h"
#include "runtime/Trace.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/data/BatchSampler.h"
#include "runtime/data/TokenDataset.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/Checkpoint.h"
#include "runtime/parallel/DeviceGroup.h"
#include "runtime/parallel/TrainingSession.h"
#include "runtime/train/MemoryCheck.h"
#include "runtime/train/RunDirectory.h"
#include "runtime/train/StopSignals.h"
#include "runtime/train/TextGenerator.h"
#include "runtime/train/TrainOptions.h"
#include "runtime/train/TrainingData.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/text_format.h>

#include <chrono>
#include <cmath>

namespace strata {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

namespace {

std::string formatDuration(double s) {
  int64_t t = int64_t(s + 0.5);
  char buf[32];
  if (t >= 3600)
    snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(t / 3600),
             (long long)(t / 60 % 60));
  else
    snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(t / 60),
             (long long)(t % 60));
  return buf;
}

} // namespace

TrainOptions trainOptions(const pb::Training &t) {
  TrainOptions o;
  o.gradAccum = t.grad_accum();
  o.schedule = LRSchedule{t.lr(), t.min_lr(), t.warmup(),
                          t.decay_iters() ? t.decay_iters() : t.steps()};
  o.optimizer.beta1 = t.beta1();
  o.optimizer.beta2 = t.beta2();
  o.optimizer.eps = t.eps();
  o.optimizer.weight_decay = t.weight_decay();
  o.optimizer.grad_clip = t.grad_clip();
  o.seed = t.seed();
  o.precision = trainingPrecision(t);
  o.lossScaling = lossScalingOf(t);
  return o;
}

/// Restores the loss scaler's state from checkpoint `c` when both the run
/// and the checkpoint scale; a note when only one does.
static llvm::Error
restoreLossScaler(const Checkpoint &c, Trainer &trainer,
                  llvm::function_ref<void(const llvm::Twine &)> note) {
  const llvm::json::Value *saved = c.meta.get("loss_scaler");
  LossScaler *scaler = trainer.lossScaler();
  if (scaler && saved)
    return scaler->fromJSON(*saved);
  if (scaler)
    note("the checkpoint has no loss scale (trained without loss scaling): "
         "the scale starts at " +
         std::to_string(double(scaler->scale())));
  else if (saved)
    note("the checkpoint's loss scale is dropped (this run does not scale "
         "the loss)");
  return llvm::Error::success();
}

/// The run; only the writer (rank 0 of a multi-process job) reports and
/// writes metrics and checkpoints.
static llvm::Error train(const RunOptions &opts, llvm::raw_ostream &os,
                         const std::optional<DistEnv> &env) {
  bool writer = !env || env->rank == 0;
  if (writer)
    if (auto e = checkRunDirectory(opts.outDir, opts.resume, opts.overwrite))
      return e;
  if (auto ec = llvm::sys::fs::create_directories(opts.outDir))
    return err(opts.outDir + ": error: cannot create output directory (" +
               ec.message() + ")");
  pb::ModelSpec spec = opts.spec;
  const pb::Training &tr = spec.training();
  const pb::Data &d = spec.data();
  std::string kind = d.tokenizer() == pb::Data::BYTE ? "byte"
                     : d.tokenizer() == pb::Data::TOKENIZER_FILE
                         ? d.tokenizer_file()
                         : "char";

  auto tokenizer = dataTokenizer(opts, kind);
  if (!tokenizer)
    return tokenizer.takeError();
  std::optional<Checkpoint> ckpt;
  std::string ckptFile = checkpointPath(opts.outDir);
  if (opts.resume) {
    auto c = loadCheckpoint(ckptFile);
    if (!c)
      return c.takeError();
    ckpt = std::move(*c);
    const llvm::json::Value *tok = ckpt->meta.get("tokenizer");
    auto saved = tok ? Tokenizer::fromJSON(*tok)
                     : llvm::Expected<Tokenizer>(err("no tokenizer"));
    if (!saved)
      return err(ckptFile + ": error: bad tokenizer in checkpoint (" +
                 llvm::toString(saved.takeError()) + ")");
    if (*saved != *tokenizer)
      return err(
          ckptFile +
          ": error: the checkpoint's tokenizer differs from the one of " +
          opts.dataPath + " (resume with the data it was trained on)");
  }
  std::optional<Checkpoint> init;
  if (!opts.initFrom.empty()) {
    auto c = loadCheckpoint(opts.initFrom);
    if (!c)
      return c.takeError();
    init = std::move(*c);
  }
  // The vocabulary is the data's.
  auto note = [&](const llvm::Twine &msg) {
    if (!writer)
      return;
    if (opts.note)
      return opts.note(msg);
    os << "note: " << msg << '\n';
  };
  if (spec.vocab_size() != tokenizer->vocabSize()) {
    note("vocab_size " + llvm::Twine(spec.vocab_size()) + " -> " +
         llvm::Twine(tokenizer->vocabSize()) + " (the " + tokenizer->name() +
         " vocabulary of " + opts.dataPath + ")");
    spec.set_vocab_size(tokenizer->vocabSize());
  }
  if (auto e = checkModelSpec(spec, "model spec"))
    return e;
  // One microbatch of the run holds micro_batch sequences per dp rank.
  ModelConfig cfg =
      dataParallelConfig(resolveModelSpec(spec), opts.parallel.dp);
  std::string specText;
  google::protobuf::TextFormat::PrintToString(spec, &specText);
  if (ckpt) {
    // A resumed run may change its length, evaluation interval and learning
    // rate schedule; nothing that changes the model or its data.
    const llvm::json::Value *saved = ckpt->meta.get("spec");
    pb::ModelSpec savedSpec;
    if (!saved || !saved->getAsString() ||
        !google::protobuf::TextFormat::ParseFromString(
            saved->getAsString()->str(), &savedSpec))
      return err(ckptFile +
                 ": error: the checkpoint has no readable model spec");
    std::vector<std::string> changed = differingFields(savedSpec, spec),
                             refused;
    for (const std::string &f : changed) {
      if (!resumeMayChange(f)) {
        refused.push_back(f);
        continue;
      }
      note("resuming with a changed " + f +
           (f == "training.steps" && tr.decay_iters() == 0
                ? " (the cosine decay follows steps: decay_iters is 0)"
                : ""));
    }
    if (!refused.empty())
      return err(
          ckptFile + ": error: the checkpoint was trained with a different " +
          llvm::join(refused, ", ") +
          " (resume with the spec and overrides it was trained with; only "
          "steps, eval_every, the learning-rate schedule and the precision "
          "may change)");
  }

  auto data = openTrainingData(opts, cfg, *tokenizer);
  if (!data)
    return data.takeError();
  const BatchSource *trainData = data->train.get(),
                    *valData = data->valid.get();

  Graph forward = buildModelGraph(cfg);
  if (auto e = checkHostMemory(
          hostMemoryNeed(forward, opts.parallel,
                         env ? env->localWorldSize : opts.parallel.numDevices(),
                         env ? env->worldSize : opts.parallel.numDevices()),
          availableHostMemory()))
    return e;
  ModelConfig evalCfg = cfg;
  evalCfg.dropout = 0;
  TrainOptions trainOpts = trainOptions(tr);
  trainOpts.fusion = opts.fusion;
  trainOpts.gradReduce = opts.gradReduce;
  DeviceGroupOptions devices;
  devices.backend = opts.device;
  auto session =
      TrainingSession::create(forward, buildModelGraph(evalCfg), trainOpts,
                              opts.parallel, opts.programs.get(), devices);
  if (!session)
    return session.takeError();
  TrainingSession &t = **session;
  if (auto e = t.initParams())
    return e;
  if (init)
    if (auto e = t.trainer().loadParams(
            [&](llvm::StringRef n) { return init->lookup(n); }))
      return err(opts.initFrom + ": error: " + llvm::toString(std::move(e)) +
                 " (--init-from takes a checkpoint of this model: its spec, "
                 "e.g. the model.textproto import-hf wrote beside it, and "
                 "the tokenizer it was trained with)");
  if (ckpt) {
    if (auto e =
            t.loadState([&](llvm::StringRef n) { return ckpt->lookup(n); }))
      return err(ckptFile + ": error: " + llvm::toString(std::move(e)));
    t.setStep(ckpt->meta.getInteger("step").getValueOr(0));
    if (auto updates = ckpt->meta.getInteger("updates"))
      t.trainer().setUpdates(*updates);
    if (auto e = restoreLossScaler(*ckpt, t.trainer(), note))
      return err(ckptFile + ": error: " + llvm::toString(std::move(e)));
  }

  MetricsLog metrics;
  if (writer)
    if (auto e = metrics.open(opts.outDir,
                              ckpt ? std::optional(t.step()) : std::nullopt))
      return e;
  int64_t savedStep = ckpt ? t.step() : -1;
  auto diverged = [&](int64_t step, const llvm::Twine &what, double v) {
    return err("step " + llvm::Twine(step) + ": the " + what + " is " +
               (std::isnan(v) ? "nan" : std::to_string(v)) +
               ": training diverged; " +
               (savedStep >= 0
                    ? "the checkpoint of step " + std::to_string(savedStep) +
                          " (" + ckptFile + ") is kept"
                    : std::string("no checkpoint was written")) +
               " (lower the learning rate with --lr, or raise --warmup)");
  };
  auto saveCkpt = [&]() -> llvm::Error {
    auto state = t.state(); // every rank takes part in gathering it
    if (!state)
      return state.takeError();
    int64_t step = t.step();
    // The update can overflow the weights while the step's loss was finite.
    for (auto &[name, tensor] : *state)
      if (int64_t i = tensor.firstNonFinite(); i >= 0)
        return diverged(step, name + " (element " + std::to_string(i) + ")",
                        tensor.get(i));
    if (!writer)
      return savedStep = step, llvm::Error::success();
    Checkpoint c;
    c.meta["step"] = t.step();
    c.meta["updates"] = t.trainer().updates();
    if (LossScaler *scaler = t.trainer().lossScaler())
      c.meta["loss_scaler"] = scaler->toJSON();
    c.meta["spec"] = specText;
    c.meta["tokenizer"] = tokenizer->toJSON();
    c.meta["data"] = opts.dataPath;
    for (auto &[name, tensor] : *state)
      c.tensors.push_back({name, std::move(tensor)});
    if (auto e = saveCheckpoint(ckptFile, c))
      return e;
    savedStep = step;
    return llvm::Error::success();
  };
  auto evaluate = [&](double &val) -> llvm::Error {
    HostTensor tk(TensorType{DType::I32, {cfg.microBatch, cfg.seq}}),
        lb = tk.clone();
    double sum = 0;
    for (int64_t i = 0; i < opts.evalIters; ++i) {
      valData->fill(i, 0, tk.data<int32_t>(), lb.data<int32_t>());
      auto l = t.evalLoss(tk.data<int32_t>(), lb.data<int32_t>());
      if (!l)
        return l.takeError();
      sum += *l;
    }
    if (auto e = valData->takeError())
      return e;
    val = sum / double(opts.evalIters);
    return llvm::Error::success();
  };

  const int64_t steps = tr.steps();
  const int64_t tokensPerStep = cfg.microBatch * cfg.seq * tr.grad_accum();
  // Model FLOPs (what MFU is defined on) and hardware FLOPs (with the
  // plan's recomputation) per token; the progress line shows the first.
  const double flopsPerToken = modelFlopsPerStep(cfg, 1) / double(cfg.seq);
  double recomputed = 0;
  const CompiledPipeline &compiled = t.trainer().compiled();
  if (opts.parallel.recompute == RecomputeMode::Selective)
    recomputed = recomputeFlopsPerStep(cfg, 1, /*full=*/false);
  else if (!compiled.recomputedLayers.empty())
    recomputed = recomputeFlopsPerStep(cfg, 1, /*full=*/true) *
                 double(compiled.recomputedLayers.size()) / double(cfg.layers);
  const double hardwareFlopsPerToken =
      flopsPerToken + recomputed / double(cfg.seq);
  os << "training " << cfg.name << " (" << cfg.familyName() << ", "
     << countParams(forward).total << " params) on " << opts.dataPath << ": "
     << steps << " steps x " << tokensPerStep << " tokens, vocab " << cfg.vocab
     << " (padded " << cfg.paddedVocab << ") on " << t.describe()
     << (ckpt ? ", resumed at step " + std::to_string(t.step()) : "")
     << (init ? ", initialized from " + opts.initFrom : "") << "\n";
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  int64_t firstStep = t.step();
  double emaTokS = 0;
  int64_t skipped = 0; // steps skipped by loss scaling
  StopSignals stop;
  std::unique_ptr<Trace> trace;
  if (!opts.tracePath.empty()) {
    trace = std::make_unique<Trace>();
    t.trainer().setTrace(trace.get());
  }
  // Each process writes its ranks' rows: rank 0 to the path, rank r to
  // <path>.rank<r>.json.
  auto writeTrace = [&]() -> llvm::Error {
    t.trainer().setTrace(nullptr);
    std::string path = opts.tracePath;
    if (env && env->rank > 0)
      path += ".rank" + std::to_string(env->rank) + ".json";
    llvm::json::Value json = trace->toJson();
    trace.reset();
    if (auto e = writeFileAtomically(path, [&](llvm::raw_ostream &out) {
          out << json << '\n';
          return llvm::Error::success();
        }))
      return e;
    os << "wrote the step timeline of "
       << std::min(opts.traceSteps, steps - firstStep) << " steps to "
       << opts.tracePath << '\n';
    return llvm::Error::success();
  };
  while (t.step() < steps) {
    auto t0 = Clock::now();
    int64_t s = t.step();
    auto stats = t.step([&](int64_t micro, int32_t *tk, int32_t *lb) {
      trainData->fill(s, micro, tk, lb);
    });
    if (!stats)
      return stats.takeError();
    if (trace && t.step() - firstStep >= opts.traceSteps)
      if (auto e = writeTrace())
        return e;
    if (auto e = trainData->takeError())
      return e;
    if (!std::isfinite(stats->loss))
      return diverged(s + 1, "loss", stats->loss);
    skipped += stats->skipped;
    if (!stats->skipped && !std::isfinite(stats->gradNorm))
      return diverged(s + 1, "gradient norm", stats->gradNorm);
    double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    double tokS = tokensPerStep / dt;
    emaTokS = emaTokS ? 0.9 * emaTokS + 0.1 * tokS : tokS;
    double elapsed =
        std::chrono::duration<double>(Clock::now() - start).count();
    double eta = (steps - t.step()) * elapsed / double(t.step() - firstStep);
    llvm::json::Object row{
        {"step", s},
        {"loss", stats->loss},
        {"lr", stats->lr},
        {"grad_norm", stats->skipped ? llvm::json::Value(nullptr)
                                     : llvm::json::Value(stats->gradNorm)},
        {"tokens_per_s", tokS},
        {"gflops", tokS * flopsPerToken / 1e9},
        {"hardware_gflops", tokS * hardwareFlopsPerToken / 1e9}};
    if (t.trainer().lossScaler()) {
      row["loss_scale"] = stats->lossScale;
      row["skipped"] = stats->skipped;
    }
    metrics.write(std::move(row));
    char line[240];
    int len = snprintf(
        line, sizeof line,
        "step %5lld/%lld | loss %.4f | lr %.2e | %7.0f tok/s | %5.1f "
        "GFLOP/s | ETA %s",
        (long long)t.step(), (long long)steps, stats->loss, stats->lr,
        emaTokS, emaTokS * flopsPerToken / 1e9, formatDuration(eta).c_str());
    // Megatron's "loss scale" and "number of skipped iterations" (of the
    // steps this process ran).
    if (t.trainer().lossScaler())
      snprintf(line + len, sizeof line - len, " | loss scale %g | skipped %lld",
               stats->lossScale, (long long)skipped);
    bool evalNow = tr.eval_every() > 0 &&
                   (t.step() % tr.eval_every() == 0 || t.step() == steps);
    if (opts.progressBar) {
      int width = 20, filled = int(width * t.step() / steps);
      os << '\r' << line << " [" << std::string(filled, '=')
         << std::string(width - filled, ' ') << "]";
      if (evalNow || t.step() == steps)
        os << '\n';
      os.flush();
    } else if (t.step() % opts.logEvery == 0 || t.step() == steps || evalNow) {
      os << line << '\n';
      os.flush();
    }
    if (evalNow) {
      double val;
      if (auto e = evaluate(val))
        return e;
      if (!std::isfinite(val))
        return diverged(t.step(), "validation loss", val);
      metrics.write(llvm::json::Object{{"step", t.step()}, {"val_loss", val}});
      os << "step " << t.step() << ": val loss " << llvm::format("%.4f", val)
         << '\n';
      if (auto e = saveCkpt())
        return e;
    } else if (opts.saveEvery > 0 && t.step() % opts.saveEvery == 0) {
      if (auto e = saveCkpt())
        return e;
    }
    auto stopNow = t.anyProcess(stop.received() != 0);
    if (!stopNow)
      return stopNow.takeError();
    if (*stopNow && t.step() < steps) {
      if (savedStep != t.step())
        if (auto e = saveCkpt())
          return e;
      int sig = stop.received() ? stop.received() : SIGTERM;
      if (opts.progressBar)
        os << '\n';
      return llvm::make_error<TrainingInterrupted>(
          sig, "stopped by " +
                   std::string(sig == SIGINT ? "SIGINT" : "SIGTERM") +
                   " after step " + std::to_string(t.step()) + "; saved " +
                   ckptFile + " (continue with --resume)");
    }
  }
  if (trace)
    if (auto e = writeTrace())
      return e;
  if (savedStep != t.step())
    if (auto e = saveCkpt())
      return e;
  os << "saved " << ckptFile << '\n';

  if (opts.sampleTokens > 0) {
    auto state = t.state(); // every rank takes part in gathering it
    if (!state)
      return state.takeError();
    if (!writer)
      return llvm::Error::success();
    llvm::StringMap<const HostTensor *> params;
    for (auto &[name, tensor] : *state)
      params[name] = &tensor;
    CpuDevice device;
    SampleOptions so;
    so.maxNewTokens = opts.sampleTokens;
    so.seed = tr.seed();
    auto text = generateText(cfg, params, *tokenizer, "", so, device);
    if (!text)
      return text.takeError();
    os << "sample:\n" << *text << "\n";
  }
  return llvm::Error::success();
}

llvm::Error runTraining(const RunOptions &opts, llvm::raw_ostream &os) {
  auto env = DistEnv::fromEnvironment();
  if (!env)
    return env.takeError();
  bool writer = !*env || (*env)->rank == 0;
  return train(opts, writer ? os : llvm::nulls(), *env);
}

} // namespace strata
