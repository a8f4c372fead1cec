//===- Train.cpp - `strata train (SPEC|PLAN) [--data FILE] [overrides]` ----===//
//
// Trains a model on one CPU device, or on tp*dp of them (--tp, --dp, --sp,
// --distributed-optimizer; one per process under `strata launch`), or
// pipelined on tp*dp*pp in-process devices (--pp, --microbatches,
// --schedule, --recompute; runtime/parallel/PipelineTrainer.h): the
// spec's training and data sections, overridden by flags, drive
// runtime/train/TrainingRun. Relative data paths in a spec are resolved
// against the spec's directory.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/TrainingRun.h"
#include "tools/strata/Driver.h"
#include "tools/strata/PipelineProto.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand trainCmd("train", "Train a model (spec or plan) on the CPU");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> input(cl::Positional, cl::Required,
                           cl::desc("<model spec .textproto | plan>"),
                           cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string> dataPath("data", cl::desc("Training text (default: the spec's data.path)"),
                              cl::value_desc("file"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string> megatronData("data-path", cl::desc("Megatron .bin/.idx data instead of --data: \"PREFIX\" or a blend \"0.7 P1 0.3 P2\" (docs/data.md)"),
                                  cl::value_desc("blend"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string> split("split", cl::desc("Train,valid,test shares of each --data-path dataset's documents"),
                           cl::init("969,30,1"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string> tokenizer("tokenizer", cl::desc("char | byte (default: the spec's)"),
                               cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string> outDir("out", cl::desc("Run directory: metrics.jsonl, checkpoint.bin, token cache (default out/<model name>)"),
                            cl::value_desc("dir"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<bool> resume("resume", cl::desc("Continue from <out>/checkpoint.bin"),
                     cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> steps("steps", cl::desc("Optimizer steps"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<double> lr("lr", cl::desc("Peak learning rate"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<double> minLr("min-lr", cl::desc("Final learning rate"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> warmup("warmup", cl::desc("Warmup steps"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> decayIters("decay-iters", cl::desc("Cosine decay steps"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> batch("batch", cl::desc("Sequences per microbatch"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> seq("seq", cl::desc("Sequence length"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> gradAccum("grad-accum", cl::desc("Microbatches per step"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> evalEvery("eval-every", cl::desc("Steps between validation evaluations (0: never)"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> evalIters("eval-iters", cl::desc("Validation batches per evaluation"), cl::init(20), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> seed("seed", cl::desc("Seed of init, dropout and data order"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<double> dropout("dropout", cl::desc("Dropout probability"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> sample("sample", cl::desc("Characters of sample text to print at the end"), cl::init(300), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> tp("tp", cl::desc("Tensor-parallel degree (CPU devices: tp*dp)"), cl::init(1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> dp("dp", cl::desc("Data-parallel degree"), cl::init(1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<bool> sp("sp", cl::desc("Sequence parallelism over tp"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<bool> distOpt("distributed-optimizer", cl::desc("Shard the AdamW state over dp (ZeRO-1)"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> pp("pp", cl::desc("Pipeline stages (CPU devices: tp*dp*pp, in this process)"), cl::init(1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> microbatches("microbatches", cl::desc("Microbatches per step of the pipeline (sets --grad-accum)"), cl::init(-1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string> schedule("schedule", cl::desc("Pipeline schedule: gpipe, 1f1b, interleaved:V"), cl::init("1f1b"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string> recomputeMode("recompute", cl::desc("Activation recomputation: none, selective, full"), cl::init("none"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<bool> noFusion("no-fusion", cl::desc("Run every op with the built-in kernels (no fused, generated kernels)"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> logEvery("log-every", cl::desc("Steps between progress lines when stderr is not a terminal"), cl::init(10), cl::sub(trainCmd), cl::cat(cat));

Error usage(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), "strata train: error: " + msg);
}

Error setPositive(const char *flag, int64_t v, function_ref<void(int64_t)> set, bool allowZero = false) {
  if (v == -1) return Error::success();
  if (v < 0 || (!allowZero && v == 0))
    return usage("--" + Twine(flag) + " must be " + (allowZero ? ">= 0" : "> 0") +
                 ", got " + Twine(v));
  set(v);
  return Error::success();
}

/// A plan runs its own compiled programs (and their kernels) unless a flag
/// or the job changes them; then its spec is compiled again, with a note.
Error usePlanPrograms(const pb::Plan &plan, RunOptions &o, int64_t stepMicrobatches) {
  const char *why = nullptr;
  for (const cl::Option *flag :
       std::initializer_list<const cl::Option *>{&batch, &seq, &dropout, &tp, &dp, &sp, &pp,
                                                 &schedule, &recomputeMode})
    if (flag->getNumOccurrences()) why = "a flag changes the model or its layout";
  if (noFusion && plan.parallel().fusion()) why = "--no-fusion";
  if (stepMicrobatches != std::max<int64_t>(plan.parallel().microbatches(), 1))
    why = "the step's microbatches differ from the plan's";
  if (plan.parallel().distributed_optimizer() || distOpt)
    why = "the distributed optimizer runs on the tp x dp trainer";
  if (std::getenv("WORLD_SIZE")) why = "a multi-process job compiles on every rank";
  if (!plan.pipeline().has_micro()) why = "the plan predates stored programs";
  if (why) {
    errs() << "strata train: note: compiling the plan's spec again (" << why << ")\n";
    return Error::success();
  }
  auto programs = loadPipeline(plan);
  if (!programs) return usage(input + ": " + toString(programs.takeError()));
  if (Error e = checkKernels(plan, *programs)) return usage(input + ": " + toString(std::move(e)));
  o.programs = std::make_shared<const CompiledPipeline>(std::move(*programs));
  return Error::success();
}

Expected<RunOptions> buildOptions() {
  auto loaded = loadPlanOrSpec(input);
  if (!loaded) return loaded.takeError();
  RunOptions o;
  o.spec = loaded->plan.model();
  pb::ModelSpec &s = o.spec;
  pb::Training &t = *s.mutable_training();
  if (Error e = setPositive("steps", steps, [&](int64_t v) { t.set_steps(v); })) return e;
  if (Error e = setPositive("warmup", warmup, [&](int64_t v) { t.set_warmup(v); }, true)) return e;
  if (Error e = setPositive("decay-iters", decayIters, [&](int64_t v) { t.set_decay_iters(v); }, true)) return e;
  if (Error e = setPositive("batch", batch, [&](int64_t v) { s.set_micro_batch(v); })) return e;
  if (Error e = setPositive("seq", seq, [&](int64_t v) { s.set_seq_len(v); })) return e;
  if (Error e = setPositive("grad-accum", gradAccum, [&](int64_t v) { t.set_grad_accum(v); })) return e;
  if (Error e = setPositive("eval-every", evalEvery, [&](int64_t v) { t.set_eval_every(v); }, true)) return e;
  if (Error e = setPositive("seed", seed, [&](int64_t v) { t.set_seed(v); }, true)) return e;
  if (lr != -1) {
    if (lr <= 0) return usage("--lr must be > 0");
    t.set_lr(lr);
    if (minLr == -1 && !t.has_min_lr()) t.set_min_lr(lr / 10);
  }
  if (minLr != -1) {
    if (minLr < 0) return usage("--min-lr must be >= 0");
    t.set_min_lr(minLr);
  }
  if (t.min_lr() > t.lr())
    return usage("min lr " + std::to_string(t.min_lr()) + " exceeds lr " + std::to_string(t.lr()));
  if (dropout != -1) {
    if (dropout < 0 || dropout >= 1) return usage("--dropout must be in [0, 1)");
    s.set_dropout(dropout);
  }
  if (evalIters <= 0) return usage("--eval-iters must be > 0");
  if (tp < 1 || dp < 1 || pp < 1) return usage("--tp, --dp and --pp must be >= 1");
  o.parallel = {tp, dp, sp, distOpt};
  o.parallel.pp = pp;
  auto sched = parseScheduleSpec(schedule);
  if (!sched) return usage("--schedule: " + toString(sched.takeError()));
  o.parallel.schedule = *sched;
  auto mode = parseRecomputeMode(recomputeMode);
  if (!mode || *mode == RecomputeMode::Auto)
    return usage("--recompute must be none, selective or full (got '" + recomputeMode +
                 "'; auto needs a compiled plan: strata compile --recompute auto "
                 "--memory-budget B)");
  o.parallel.recompute = *mode;
  if (!isSpecPath(input) && !tp.getNumOccurrences() && !dp.getNumOccurrences() &&
      !sp.getNumOccurrences() && !pp.getNumOccurrences()) {
    // the plan's layout unless flags choose one
    auto layout = planLayout(loaded->plan);
    if (!layout) return usage(toString(layout.takeError()));
    o.parallel = *layout;
    o.parallel.distributedOptimizer |= distOpt;
    if (o.parallel.pipelined() && loaded->plan.parallel().microbatches() > 0 &&
        gradAccum == -1 && microbatches == -1)
      t.set_grad_accum(loaded->plan.parallel().microbatches());
  }
  if (microbatches != -1) {
    if (microbatches < 1) return usage("--microbatches must be >= 1");
    if (gradAccum != -1 && gradAccum != microbatches)
      return usage("--microbatches " + Twine(int64_t(microbatches)) + " and --grad-accum " +
                   Twine(int64_t(gradAccum)) +
                   " disagree (a pipeline's microbatches are the step's gradient "
                   "accumulation; give one of them)");
    t.set_grad_accum(microbatches);
  }
  if (o.parallel.pipelined()) {  // configuration errors before any file is touched
    auto sched = buildSchedule(o.parallel.schedule, o.parallel.pp, t.grad_accum());
    if (!sched) return usage(toString(sched.takeError()));
    int64_t stages = sched->numStages();
    if (s.layers() < stages)
      return usage(Twine(stages) + " pipeline stages (pp=" + Twine(o.parallel.pp) + ", " +
                   o.parallel.schedule.str() + ") need at least one block each, but the model has " +
                   Twine(s.layers()) + " (lower --pp or the virtual stages)");
  }
  o.fusion = !noFusion;
  if (!isSpecPath(input))
    if (Error e = usePlanPrograms(loaded->plan, o, t.grad_accum())) return e;
  if (!tokenizer.empty()) {
    if (tokenizer == "char") s.mutable_data()->set_tokenizer(pb::Data::CHAR);
    else if (tokenizer == "byte") s.mutable_data()->set_tokenizer(pb::Data::BYTE);
    else return usage("--tokenizer must be char or byte, got '" + tokenizer + "'");
  }
  if (!megatronData.empty()) {  // RunOptions::dataBlend
    if (!dataPath.empty())
      return usage("--data and --data-path both name training data (give one: --data for "
                   "a text file, --data-path for Megatron .bin/.idx prefixes)");
    o.dataPath = o.dataBlend = megatronData;
    o.split = split;
  } else if (!dataPath.empty()) {
    o.dataPath = dataPath;
  } else if (s.data().has_path()) {
    SmallString<256> p(s.data().path());
    if (sys::path::is_relative(p) && isSpecPath(input)) {
      SmallString<256> dir(sys::path::parent_path(input));
      sys::path::append(dir, p);
      p = dir;
    }
    o.dataPath = std::string(p);
  } else {
    return usage("no training data: pass --data FILE or set data.path in the spec");
  }
  o.outDir = outDir.empty() ? "out/" + (s.name().empty() ? std::string("run") : s.name())
                            : std::string(outDir);
  o.resume = resume;
  o.evalIters = evalIters;
  o.sampleTokens = sample;
  o.progressBar = isatty(STDOUT_FILENO);
  o.logEvery = std::max<int64_t>(1, logEvery);
  return o;
}

int runTrain() {
  auto opts = buildOptions();
  if (!opts) return reportError(opts.takeError());
  if (Error e = runTraining(*opts, outs())) return reportError(std::move(e));
  return kExitOk;
}

VerbRegistration reg(trainCmd, runTrain);

} // namespace
} // namespace strata
