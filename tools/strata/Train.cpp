//===- Train.cpp - `strata train (SPEC|PLAN) [--data FILE] [overrides]`
//----===//
//
// Trains a model on one CPU device or on tp*dp*pp of them (--tp, --dp,
// --sp, --distributed-optimizer, --pp, --microbatches, --schedule,
// --recompute; all in this process, or one per process under `strata
// launch`) with the one trainer (runtime/parallel/Trainer.h): the
// spec's training and data sections, overridden by flags, drive
// runtime/train/TrainingRun. A relative data.path is resolved against the
// directory of the spec (for a plan: of the spec it was compiled from, which
// the plan records), whatever the current directory. Flags are checked
// (Flags.h) before any file is read.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/StopSignals.h"
#include "runtime/train/TrainingRun.h"
#include "tools/strata/BatchFlags.h"
#include "tools/strata/Driver.h"
#include "tools/strata/Flags.h"
#include "tools/strata/PipelineProto.h"
#include "tools/strata/GradReduceFlags.h"
#include "tools/strata/PrecisionFlag.h"
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
cl::opt<std::string>
    dataPath("data", cl::desc("Training text (default: the spec's data.path)"),
             cl::value_desc("file"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string> megatronData(
    "data-path",
    cl::desc("Megatron .bin/.idx data instead of --data: \"PREFIX\" or a blend "
             "\"0.7 P1 0.3 P2\" (docs/data.md)"),
    cl::value_desc("blend"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string> split(
    "split",
    cl::desc("Train,valid,test shares of each --data-path dataset's documents"),
    cl::init("969,30,1"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string>
    tokenizer("tokenizer",
              cl::desc("char | byte | a tokenizer.json or SentencePiece .model "
                       "(default: the spec's)"),
              cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string>
    outDir("out",
           cl::desc("Run directory: metrics.jsonl, checkpoint.bin, token cache "
                    "(default out/<model name>)"),
           cl::value_desc("dir"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string> initFrom("init-from",
                              cl::desc("Start from the parameters of this "
                                       "checkpoint (e.g. import-hf's): fresh "
                                       "optimizer state, step 0"),
                              cl::value_desc("checkpoint.bin"),
                              cl::sub(trainCmd), cl::cat(cat));
cl::opt<bool> resume("resume", cl::desc("Continue from <out>/checkpoint.bin"),
                     cl::sub(trainCmd), cl::cat(cat));
cl::opt<bool> overwrite(
    "overwrite",
    cl::desc("Replace the previous run in --out (its checkpoint and metrics)"),
    cl::sub(trainCmd), cl::cat(cat));
PrecisionFlag precision(trainCmd);
GradReduceFlags gradReduce(trainCmd);

cl::opt<std::string> device(
    "device",
    cl::desc("What the devices are: cpu (CPU devices, Gloo communicators), "
             "cuda-interpret (the CUDA backend run on the host, to test it "
             "without a GPU) or cuda (GPUs; one device until NCCL is built)"),
    cl::init("cpu"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string>
    tracePath("trace",
              cl::desc("Write a Chrome trace (chrome://tracing, Perfetto) of "
                       "the first --trace-steps steps: each rank's program "
                       "runs, collectives and copies"),
              cl::value_desc("file.json"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> traceSteps("trace-steps",
                            cl::desc("Steps the --trace timeline covers"),
                            cl::init(3), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> saveEvery(
    "save-every",
    cl::desc("Steps between checkpoints (0: at evaluations and the end only)"),
    cl::init(0), cl::sub(trainCmd), cl::cat(cat));
// Flags without a cl::init default to the spec's value (given() tells them
// apart); the others have a default of their own, shown by --help.
cl::opt<int64_t>
    steps("steps",
          cl::desc("Optimizer steps (default: the spec's training.steps)"),
          cl::sub(trainCmd), cl::cat(cat));
cl::opt<double>
    lr("lr", cl::desc("Peak learning rate (default: the spec's training.lr)"),
       cl::sub(trainCmd), cl::cat(cat));
cl::opt<double> minLr("min-lr",
                      cl::desc("Final learning rate (default: the spec's "
                               "training.min_lr, else lr/10)"),
                      cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t>
    warmup("warmup",
           cl::desc("Warmup steps (default: the spec's training.warmup)"),
           cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> decayIters("decay-iters",
                            cl::desc("Cosine decay steps, 0: --steps (default: "
                                     "the spec's training.decay_iters)"),
                            cl::sub(trainCmd), cl::cat(cat));
BatchFlags batch(trainCmd);
cl::alias batchAlias("batch", cl::desc("Alias for --micro-batch"),
                     cl::aliasopt(batch.microBatch), cl::cat(cat));
cl::opt<int64_t> seq("seq",
                     cl::desc("Sequence length (default: the spec's seq_len)"),
                     cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> gradAccum(
    "grad-accum",
    cl::desc("Microbatches per step (default: the spec's training.grad_accum)"),
    cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t>
    evalEvery("eval-every",
              cl::desc("Steps between validation evaluations, 0: never "
                       "(default: the spec's training.eval_every)"),
              cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> evalIters("eval-iters",
                           cl::desc("Validation batches per evaluation"),
                           cl::init(20), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> seed("seed",
                      cl::desc("Seed of init, dropout and data order (default: "
                               "the spec's training.seed)"),
                      cl::sub(trainCmd), cl::cat(cat));
cl::opt<double>
    dropout("dropout",
            cl::desc("Dropout probability (default: the spec's dropout)"),
            cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t>
    sample("sample",
           cl::desc("Characters of sample text to print at the end, 0: none"),
           cl::init(300), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> tp("tp",
                    cl::desc("Tensor-parallel degree (CPU devices: tp*dp; "
                             "default: a plan's, else 1)"),
                    cl::init(1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t>
    dp("dp", cl::desc("Data-parallel degree (default: a plan's, else 1)"),
       cl::init(1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<bool>
    sp("sp", cl::desc("Sequence parallelism over tp (needs --tp 2 or more)"),
       cl::sub(trainCmd), cl::cat(cat));
cl::opt<bool> distOpt("distributed-optimizer",
                      cl::desc("Shard the AdamW state over dp (ZeRO-1)"),
                      cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> pp("pp",
                    cl::desc("Pipeline stages (CPU devices: tp*dp*pp, in this "
                             "process; default: a plan's, else 1)"),
                    cl::init(1), cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> microbatches(
    "microbatches",
    cl::desc("Microbatches per step of the pipeline, sets --grad-accum "
             "(default: a plan's, else the spec's training.grad_accum)"),
    cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string>
    schedule("schedule",
             cl::desc("Pipeline schedule: gpipe, 1f1b, interleaved:V"),
             cl::init("1f1b"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<std::string>
    recomputeMode("recompute",
                  cl::desc("Activation recomputation: none, selective, full"),
                  cl::init("none"), cl::sub(trainCmd), cl::cat(cat));
cl::opt<bool> noFusion(
    "no-fusion",
    cl::desc(
        "Run every op with the built-in kernels (no fused, generated kernels)"),
    cl::sub(trainCmd), cl::cat(cat));
cl::opt<int64_t> logEvery(
    "log-every",
    cl::desc("Steps between progress lines when stdout is not a terminal (a "
             "terminal gets one line, redrawn every step)"),
    cl::init(10), cl::sub(trainCmd), cl::cat(cat));

/// The ranges of the numeric and keyword flags.
Error checkTrainFlags() {
  const char *spec = "leave the flag out for the spec's value";
  return checkFlags({
      atLeast(steps, 1,
              "optimizer steps to train; leave the flag out for the spec's "
              "training.steps"),
      inInterval(lr, 0, 1, Ends::OpenLow, "the peak learning rate of AdamW"),
      inInterval(
          minLr, 0, 1, Ends::Closed,
          "the learning rate at the end of the cosine decay, at most --lr"),
      atLeast(warmup, 0, spec),
      atLeast(decayIters, 0, "0 decays over --steps"),
      atLeast(seq, 1,
              "tokens per sequence; leave the flag out for the spec's seq_len"),
      atLeast(gradAccum, 1, "microbatches accumulated per optimizer step"),
      atLeast(evalEvery, 0, "0 never evaluates"),
      atLeast(evalIters, 1, "validation batches averaged per evaluation"),
      atLeast(seed, 0, spec),
      inInterval(dropout, 0, 1, Ends::OpenHigh,
                 "the probability of zeroing an activation"),
      atLeast(sample, 0, "0 prints no sample"),
      atLeast(tp, 1, "1 is no tensor parallelism"),
      atLeast(dp, 1, "1 is no data parallelism"),
      atLeast(pp, 1, "1 is no pipeline"),
      atLeast(microbatches, 1, "microbatches per optimizer step"),
      oneOf(recomputeMode, {"none", "selective", "full"},
            "auto needs a compiled plan: strata compile --recompute auto "
            "--memory-budget B"),
      atLeast(logEvery, 1, "steps between progress lines"),
  });
}

Error usage(const Twine &msg) { return usageError(msg); }

/// A plan runs its own compiled programs (and their kernels) unless a flag
/// or the job changes them; then its spec is compiled again, with a note.
Error usePlanPrograms(const pb::Plan &plan, RunOptions &o,
                      int64_t stepMicrobatches) {
  const char *why = nullptr;
  for (const cl::Option *flag : std::initializer_list<const cl::Option *>{
           &batch.microBatch, &seq, &dropout, &tp, &dp, &sp, &pp, &schedule,
           &recomputeMode, &distOpt})
    if (flag->getNumOccurrences())
      why = "a flag changes the model or its layout";
  if (noFusion && plan.parallel().fusion())
    why = "--no-fusion";
  if (stepMicrobatches != std::max<int64_t>(plan.parallel().microbatches(), 1))
    why = "the step's microbatches differ from the plan's";
  if (!plan.pipeline().has_micro())
    why = "the plan predates stored programs";
  if (why) {
    reportNote("compiling the plan's spec again (" + Twine(why) + ")");
    return Error::success();
  }
  auto programs = loadPipeline(plan);
  if (!programs)
    return usage(input + ": " + toString(programs.takeError()));
  if (Error e = checkKernels(plan, *programs))
    return usage(input + ": " + toString(std::move(e)));
  o.programs = std::make_shared<const CompiledPipeline>(std::move(*programs));
  return Error::success();
}

/// Notes and warnings on flags whose effect is not what their name suggests.
void explainFlags(const pb::ModelSpec &spec, const ParallelConfig &pc) {
  if (given(seq) && seq != spec.seq_len())
    reportNote(
        "--seq " + Twine(int64_t(seq)) + " changes the model's seq_len " +
        Twine(spec.seq_len()) + " -> " + Twine(int64_t(seq)) +
        (spec.family() == pb::ModelSpec::GPT
             ? " (its learned position table wpe gets " + Twine(int64_t(seq)) +
                   " rows, so checkpoints of the spec's model do not fit it)"
             : Twine(" (RoPE positions: no parameter changes)")));
  if (given(distOpt) && pc.dp == 1)
    reportWarning(
        "--distributed-optimizer has no effect with --dp 1 (it shards the "
        "AdamW state over data-parallel ranks; add --dp 2 or more)");
  if (given(schedule) && !pc.pipelined())
    reportWarning(
        "--schedule has no effect without --pp 2 or more (it orders the "
        "microbatches of a pipeline)");
}

/// Notes on a learning-rate schedule the flags change or cut short.
void explainSchedule(const pb::Training &spec, const pb::Training &t) {
  if (given(lr) && !given(minLr) && !spec.has_min_lr())
    reportNote("--lr " + formatNumber(lr) +
               " also sets the final learning rate to lr/10 = " +
               formatNumber(t.min_lr()) +
               " (the spec has no min_lr; --min-lr sets it)");
  if (!given(steps) && !given(warmup) && !given(decayIters))
    return;
  if (t.warmup() >= t.steps())
    reportWarning("the " + Twine(t.warmup()) +
                  " warmup steps cover the whole run of " + Twine(t.steps()) +
                  " steps: the learning rate never reaches its peak " +
                  formatNumber(t.lr()) + " (lower --warmup)");
  else if (t.decay_iters() > t.steps())
    reportNote("the cosine decay spans " + Twine(t.decay_iters()) +
               " steps but the run stops at " + Twine(t.steps()) +
               ", before the learning rate reaches " +
               formatNumber(t.min_lr()) + " (--decay-iters " +
               Twine(t.steps()) + " decays over the run)");
}

/// The training text: --data, else the spec's data.path, relative to the
/// directory of the spec (for a plan, of the spec it was compiled from).
/// --tokenizer (char, byte or a file) or the spec's, with a spec's relative
/// tokenizer_file resolved against its directory.
Error setTokenizer(const LoadedPlan &loaded, pb::Data &d) {
  if (!given(tokenizer)) {
    if (d.tokenizer() == pb::Data::TOKENIZER_FILE &&
        sys::path::is_relative(d.tokenizer_file())) {
      SmallString<256> p(loaded.specDir);
      sys::path::append(p, d.tokenizer_file());
      d.set_tokenizer_file(std::string(p));
    }
    return Error::success();
  }
  d.clear_tokenizer_file();
  if (tokenizer == "char" || tokenizer == "byte") {
    d.set_tokenizer(tokenizer == "char" ? pb::Data::CHAR : pb::Data::BYTE);
    return Error::success();
  }
  if (!sys::fs::exists(tokenizer))
    return usage("--tokenizer " + tokenizer +
                 ": no such file (give char, byte, or a "
                 "tokenizer.json or SentencePiece .model)");
  d.set_tokenizer(pb::Data::TOKENIZER_FILE);
  d.set_tokenizer_file(tokenizer);
  return Error::success();
}

Expected<std::string> dataFile(const LoadedPlan &loaded) {
  if (given(megatronData)) { // RunOptions::dataBlend
    if (given(dataPath))
      return usage("--data and --data-path both name training data (give one: "
                   "--data for "
                   "a text file, --data-path for Megatron .bin/.idx prefixes)");
    return std::string(megatronData);
  }
  if (given(split))
    reportWarning(
        "--split has no effect without --data-path (a --data text file "
        "splits 90/10)");
  if (given(dataPath))
    return std::string(dataPath);
  const pb::Data &d = loaded.plan.model().data();
  if (!d.has_path())
    return usage(
        "no training data: pass --data FILE or set data.path in the spec");
  std::string p = resolveDataPath(loaded);
  if (!sys::fs::exists(p))
    return usage(p + ": the training data does not exist (data.path '" +
                 d.path() + "' of the spec" +
                 (sys::path::is_relative(d.path())
                      ? ", relative to " + loaded.specDir
                      : std::string()) +
                 "; pass --data FILE)");
  return p;
}

Expected<RunOptions> buildOptions() {
  if (Error e = checkTrainFlags())
    return std::move(e);
  if (!initFrom.empty()) {
    if (resume)
      return usage(
          "--init-from and --resume exclude each other (--resume continues a "
          "run with its optimizer state and step; --init-from starts a new "
          "one from a checkpoint's weights)");
    if (!sys::fs::exists(initFrom))
      return usage("--init-from " + initFrom +
                   ": no such file (give a checkpoint.bin, "
                   "e.g. the one `strata import-hf` wrote)");
  }
  auto backend = parseBackend(device);
  if (!backend)
    return usage("--device: " + toString(backend.takeError()));
  if (traceSteps < 1)
    return usage("--trace-steps must be >= 1, got " +
                 Twine(int64_t(traceSteps)) +
                 " (steps the --trace timeline covers)");
  if (given(traceSteps) && tracePath.empty())
    reportWarning("--trace-steps has no effect without --trace FILE.json");
  if (!tracePath.empty()) {
    StringRef dir = sys::path::parent_path(tracePath);
    if (!dir.empty() && !sys::fs::is_directory(dir))
      return usage(
          "--trace " + tracePath + ": the directory '" + dir +
          "' does not exist (create it, or write the trace elsewhere)");
  }
  auto loaded = loadPlanOrSpec(input);
  if (!loaded)
    return loaded.takeError();
  RunOptions o;
  o.spec = loaded->plan.model();
  pb::ModelSpec &s = o.spec;
  pb::Training &t = *s.mutable_training();
  if (given(steps))
    t.set_steps(steps);
  if (given(warmup))
    t.set_warmup(warmup);
  if (given(decayIters))
    t.set_decay_iters(decayIters);
  if (given(seq))
    s.set_seq_len(seq);
  if (given(gradAccum))
    t.set_grad_accum(gradAccum);
  if (given(evalEvery))
    t.set_eval_every(evalEvery);
  if (given(seed))
    t.set_seed(seed);
  if (given(lr)) {
    t.set_lr(lr);
    if (!given(minLr) && !t.has_min_lr())
      t.set_min_lr(lr / 10);
  }
  if (given(minLr))
    t.set_min_lr(minLr);
  if (t.min_lr() > t.lr())
    return usage("the final learning rate " + formatNumber(t.min_lr()) +
                 " exceeds the peak learning rate " + formatNumber(t.lr()) +
                 " (lower --min-lr or raise --lr)");
  if (given(dropout))
    s.set_dropout(dropout);
  if (Error e = precision.apply(s))
    return e;
  explainSchedule(loaded->plan.model().training(), t);
  o.parallel = {tp, dp, sp, distOpt};
  o.parallel.pp = pp;
  auto sched = parseScheduleSpec(schedule);
  if (!sched)
    return usage("--schedule: " + toString(sched.takeError()));
  o.parallel.schedule = *sched;
  o.parallel.recompute = *parseRecomputeMode(recomputeMode);
  if (!isSpecPath(input) && !given(tp) && !given(dp) && !given(sp) &&
      !given(pp)) {
    // the plan's layout unless flags choose one
    auto layout = planLayout(loaded->plan);
    if (!layout)
      return usage(toString(layout.takeError()));
    o.parallel = *layout;
    o.parallel.distributedOptimizer |= distOpt;
    if (o.parallel.pipelined() && loaded->plan.parallel().microbatches() > 0 &&
        !given(gradAccum) && !given(microbatches))
      t.set_grad_accum(loaded->plan.parallel().microbatches());
  }
  if (given(microbatches)) {
    if (given(gradAccum) && gradAccum != microbatches)
      return usage(
          "--microbatches " + Twine(int64_t(microbatches)) +
          " and --grad-accum " + Twine(int64_t(gradAccum)) +
          " disagree (a pipeline's microbatches are the step's gradient "
          "accumulation; give one of them)");
    t.set_grad_accum(microbatches);
  }
  std::optional<int64_t> stepMicrobatches;
  if (given(microbatches) || given(gradAccum))
    stepMicrobatches = t.grad_accum();
  if (Error e = batch.apply(s, o.parallel.dp, stepMicrobatches))
    return e;
  if (Error e = checkSequenceParallel(o.parallel.sp, o.parallel.tp))
    return std::move(e);
  explainFlags(loaded->plan.model(), o.parallel);
  if (o.parallel.pipelined()) // configuration errors before any file is touched
    if (Error e = checkPipelineFlags(o.parallel.schedule, o.parallel.pp,
                                     t.grad_accum(), s.layers()))
      return std::move(e);
  o.fusion = !noFusion;
  auto reduce = gradReduce.options();
  if (!reduce)
    return usage(toString(reduce.takeError()));
  o.gradReduce = *reduce;
  if (!isSpecPath(input))
    if (Error e = usePlanPrograms(loaded->plan, o, t.grad_accum()))
      return e;
  if (Error e = setTokenizer(*loaded, *s.mutable_data()))
    return e;
  auto data = dataFile(*loaded);
  if (!data)
    return data.takeError();
  o.dataPath = *data;
  if (given(megatronData)) {
    o.dataBlend = megatronData;
    o.split = split;
  }
  o.outDir = outDir.empty()
                 ? "out/" + (s.name().empty() ? std::string("run") : s.name())
                 : std::string(outDir);
  if (resume && overwrite)
    return usage("--resume and --overwrite exclude each other (continue the "
                 "run in --out, or replace it)");
  if (saveEvery < 0)
    return usage("--save-every must be >= 0, got " + Twine(int64_t(saveEvery)));
  o.tracePath = tracePath;
  o.device = *backend;
  o.initFrom = initFrom;
  o.note = [](const Twine &msg) { reportNote(msg); };
  o.traceSteps = traceSteps;
  o.resume = resume;
  o.overwrite = overwrite;
  o.saveEvery = saveEvery;
  o.evalIters = evalIters;
  o.sampleTokens = sample;
  o.progressBar = isatty(STDOUT_FILENO);
  o.logEvery = logEvery;
  return o;
}

int runTrain() {
  auto opts = buildOptions();
  if (!opts)
    return reportError(opts.takeError());
  int code = kExitOk;
  Error e = handleErrors(runTraining(*opts, outs()),
                         [&](const TrainingInterrupted &stop) {
                           errs() << "strata train: " << stop.message() << "\n";
                           code = stop.exitCode();
                         });
  return e ? reportError(std::move(e)) : code;
}

VerbRegistration reg(trainCmd, runTrain);

} // namespace
} // namespace strata
