//===- Verify.cpp - `strata verify SPEC --tp T --dp D [--sp] ...` ---------===//
//
// Runs the serial plan and the parallel plan (tp x dp, or pipelined with
// --pp/--schedule/--recompute/--microbatches) of a model on CPU devices
// (or, with --device, the parallel plan on CUDA devices) from
// the same weights and batches and prints, per tensor, the normwise relative
// difference (runtime/parallel/Verify.h): the loss and every parameter
// gradient of one microbatch, the losses of N AdamW steps and AdamW's
// moments after the first (with --activations, first every value both
// plans compute). Exits 1 naming the first tensor beyond tolerance.
// Under `strata launch --nproc N` each process is one rank of the parallel
// plan and checks the gathered tensors against its own serial run.
//
//===----------------------------------------------------------------------===//
#include "runtime/parallel/Verify.h"
#include "runtime/train/TrainingRun.h"
#include "tools/strata/BatchFlags.h"
#include "tools/strata/Driver.h"
#include "tools/strata/Flags.h"
#include "tools/strata/GradReduceFlags.h"
#include "tools/strata/PrecisionFlag.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand
    verifyCmd("verify",
              "Check a parallel plan against the serial plan, numerically");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> input(cl::Positional, cl::Required,
                           cl::desc("<model spec .textproto | plan>"),
                           cl::sub(verifyCmd), cl::cat(cat));
cl::opt<int64_t>
    tp("tp", cl::desc("Tensor-parallel degree (default: a plan's, else 1)"),
       cl::init(1), cl::sub(verifyCmd), cl::cat(cat));
cl::opt<int64_t>
    dp("dp", cl::desc("Data-parallel degree (default: a plan's, else 1)"),
       cl::init(1), cl::sub(verifyCmd), cl::cat(cat));
cl::opt<bool> sp("sp",
                 cl::desc("Sequence parallelism (norm and dropout regions "
                          "split along the sequence over tp)"),
                 cl::sub(verifyCmd), cl::cat(cat));
cl::opt<bool> distOpt("distributed-optimizer",
                      cl::desc("Shard the AdamW state over dp (ZeRO-1)"),
                      cl::sub(verifyCmd), cl::cat(cat));
cl::opt<int64_t> pp("pp",
                    cl::desc("Pipeline stages (default: a plan's, else 1)"),
                    cl::init(1), cl::sub(verifyCmd), cl::cat(cat));
cl::opt<int64_t> microbatches(
    "microbatches",
    cl::desc("Microbatches per step (default: a plan's, else the spec's "
             "training.grad_accum); the serial run accumulates as many"),
    cl::sub(verifyCmd), cl::cat(cat));
cl::opt<std::string>
    schedule("schedule",
             cl::desc("Pipeline schedule: gpipe, 1f1b, interleaved:V"),
             cl::init("1f1b"), cl::sub(verifyCmd), cl::cat(cat));
cl::opt<std::string>
    recomputeMode("recompute",
                  cl::desc("Activation recomputation: none, selective, full"),
                  cl::init("none"), cl::sub(verifyCmd), cl::cat(cat));
cl::opt<int64_t> steps("steps", cl::desc("AdamW steps to compare"), cl::init(5),
                       cl::sub(verifyCmd), cl::cat(cat));
cl::opt<double> tolerance("tolerance",
                          cl::desc("Max normwise relative difference"),
                          cl::init(1e-5), cl::sub(verifyCmd), cl::cat(cat));
cl::opt<bool> activations(
    "activations",
    cl::desc("Also compare every value both microbatch programs compute"),
    cl::sub(verifyCmd), cl::cat(cat));
cl::opt<double> dropout("dropout",
                        cl::desc("Dropout probability (default: the spec's)"),
                        cl::sub(verifyCmd), cl::cat(cat));
BatchFlags batch(verifyCmd);
PrecisionFlag precision(verifyCmd);
GradReduceFlags gradReduce(verifyCmd);

cl::opt<std::string> device(
    "device",
    cl::desc("What the parallel plan runs on: cpu, cuda-interpret or cuda "
             "(the serial plan always runs on one CPU device)"),
    cl::init("cpu"), cl::sub(verifyCmd), cl::cat(cat));

Error usage(const Twine &msg) { return usageError(msg); }

int runVerify() {
  if (Error e = checkFlags({
          atLeast(tp, 1, "1 is no tensor parallelism"),
          atLeast(dp, 1, "1 is no data parallelism"),
          atLeast(pp, 1, "1 is no pipeline"),
          atLeast(microbatches, 1,
                  "microbatches per step; leave the flag out for the plan's "
                  "or the spec's training.grad_accum"),
          oneOf(recomputeMode, {"none", "selective", "full"}),
          atLeast(steps, 0, "0 compares the gradients of one microbatch only"),
          inInterval(tolerance, 0, 1, Ends::OpenLow,
                     "the largest normwise relative difference accepted"),
          inInterval(dropout, 0, 1, Ends::OpenHigh,
                     "the probability of zeroing an activation"),
      }))
    return reportError(std::move(e));
  auto backend = parseBackend(device);
  if (!backend)
    return reportError(usage("--device: " + toString(backend.takeError())));
  auto loaded = loadPlanOrSpec(input);
  if (!loaded)
    return reportError(loaded.takeError());
  VerifyOptions o;
  o.devices.backend = *backend;
  o.parallel = {tp, dp, sp, distOpt};
  o.parallel.pp = pp;
  auto sched = parseScheduleSpec(schedule);
  if (!sched)
    return reportError(usage("--schedule: " + toString(sched.takeError())));
  o.parallel.schedule = *sched;
  o.parallel.recompute = *parseRecomputeMode(recomputeMode);
  pb::Training trainingSpec = loaded->plan.model().training();
  if (Error e = precision.apply(trainingSpec))
    return reportError(std::move(e));
  TrainOptions training = trainOptions(trainingSpec);
  auto reduce = gradReduce.options();
  if (!reduce)
    return reportError(usage(toString(reduce.takeError())));
  training.gradReduce = *reduce;
  // A plan's layout unless flags choose one.
  if (!isSpecPath(input) && !given(tp) && !given(dp) && !given(sp) &&
      !given(pp)) {
    auto layout = planLayout(loaded->plan);
    if (!layout)
      return reportError(usage(input + ": " + toString(layout.takeError())));
    o.parallel = *layout;
    o.parallel.distributedOptimizer |= distOpt;
    if (o.parallel.pipelined() && loaded->plan.parallel().microbatches() > 0)
      training.gradAccum = loaded->plan.parallel().microbatches();
  }
  if (given(microbatches))
    training.gradAccum = microbatches;
  const ParallelConfig &pc = o.parallel;
  pb::ModelSpec spec = loaded->plan.model();
  spec.mutable_training()->set_grad_accum(training.gradAccum);
  if (Error e =
          batch.apply(spec, pc.dp,
                      given(microbatches) ? std::optional<int64_t>(microbatches)
                                          : std::nullopt))
    return reportError(std::move(e));
  training.gradAccum = spec.training().grad_accum();
  // Both plans see micro_batch sequences per dp rank in each microbatch.
  ModelConfig model = dataParallelConfig(resolveModelSpec(spec), pc.dp);
  if (given(dropout))
    model.dropout = dropout;
  if (Error e = checkSequenceParallel(pc.sp, pc.tp))
    return reportError(std::move(e));
  if (pc.pipelined())
    if (Error e = checkPipelineFlags(pc.schedule, pc.pp, training.gradAccum,
                                     model.layers))
      return reportError(std::move(e));
  o.steps = steps;
  // bf16 / fp16 layouts round at different points (a row-parallel matmul
  // rounds each rank's partial product before the sum): a few units of the
  // 16-bit roundoff (2^-8 for bf16's 8-bit mantissa, 2^-11 for fp16's).
  if (!given(tolerance) && training.precision != DType::F32)
    tolerance =
        4 * std::ldexp(1.0, training.precision == DType::BF16 ? -8 : -11);
  o.tolerance = tolerance;
  o.activations = activations;
  // Under `strata launch` (or torchrun) this process is one rank of the
  // parallel plan; rank 0 prints the table, every rank its verdict.
  auto env = DistEnv::fromEnvironment();
  if (!env)
    return reportError(usage(toString(env.takeError())));
  o.env = *env;
  bool table = !o.env || o.env->rank == 0;

  std::string layout =
      "tp=" + std::to_string(pc.tp) + " dp=" + std::to_string(pc.dp) +
      (pc.sp ? " sp" : "") +
      (pc.distributedOptimizer ? " distributed-optimizer" : "");
  if (pc.pipelined())
    layout += " pp=" + std::to_string(pc.pp) + " " + pc.schedule.str() +
              " microbatches=" + std::to_string(training.gradAccum) +
              " recompute=" + recomputeModeName(pc.recompute).str();
  std::string kind =
      *backend == Backend::Cpu ? "CPU" : backendName(*backend).str();
  if (table)
    outs() << "verify " << model.name << ": serial (1 CPU device) vs " << layout
           << " (" << pc.numDevices() << " " << kind
           << (pc.numDevices() == 1 ? " device" : " devices")
           << (o.env ? ", one process each" : "") << "), " << steps
           << " AdamW steps, tolerance " << format("%.0e", double(tolerance))
           << " (tensors below " << format("%.0e", kVerifyZeroFloor)
           << " of their group's largest element are numerically zero and "
              "compared against that floor)\n";
  outs().flush();
  auto report = verifyParallel(model, training, o);
  if (!report)
    return reportError(usage(input + ": " + toString(report.takeError())));
  size_t width = 12, bad = 0;
  const TensorDiff *worst = nullptr;
  for (const TensorDiff &d : report->diffs) {
    width = std::max(width, d.name.size());
    if (!worst || d.relDiff > worst->relDiff)
      worst = &d;
    bad += !d.ok;
  }
  for (const TensorDiff &d : report->diffs)
    if (table)
      outs() << "  " << left_justify(d.name, width) << "  "
             << format("%9.2e", d.relDiff) << (d.ok ? "  ok" : "  DIVERGES")
             << "\n";
  if (const TensorDiff *first = report->firstFailure()) {
    std::string msg;
    raw_string_ostream(msg)
        << first->name << " diverges: relative difference "
        << format("%.2e", first->relDiff) << " > "
        << format("%.0e", double(tolerance)) << " (" << bad << " of "
        << report->diffs.size()
        << " tensors beyond tolerance; the first in program order is the one "
           "to look at)";
    return reportError(msg);
  }
  outs() << "OK: " << report->diffs.size() << " tensors match within "
         << format("%.0e", double(tolerance));
  if (worst)
    outs() << " (largest difference " << format("%.2e", worst->relDiff) << ", "
           << worst->name << ")";
  outs() << "\n";
  return kExitOk;
}

VerbRegistration reg(verifyCmd, runVerify);

} // namespace
} // namespace strata
