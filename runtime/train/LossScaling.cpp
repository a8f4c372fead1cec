//===- LossScaling.cpp - The trainer's side of loss scaling ---------------===//
//
// Trainer members (runtime/parallel/Trainer.h) for loss scaling
// (runtime/train/LossScaler.h): the scale written into each rank's
// %loss_scale input (the head stage's backward program,
// passes/precision/LossScale.h), the fp32 gradients unscaled and checked
// for inf / nan on every rank, and the verdict shared by all ranks (tp, dp
// and pp: every process of the job), as Megatron all-reduces found_inf over
// its model-parallel group after the data-parallel reduction.
//
// The check reads each rank's gradients before the optimizer program's
// data-parallel reduction: a rank's partial sum holding inf / nan makes the
// reduced gradient inf / nan, so checking every rank's partial finds what
// Megatron's check of the reduced gradient finds (except finite partials
// whose fp32 sum overflows, above 3.4e38 after unscaling).
//
//===----------------------------------------------------------------------===//
#include "runtime/parallel/TrainerRankState.h"

#include <cmath>
#include <limits>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

llvm::Error Trainer::bindLossScale(RankState &r) {
  bool planScales = false;
  for (const PipelineStage &st : plan_->pipeline.stages)
    for (const Binding &x : st.backwardBindings.inputs)
      planScales |= x.role == Role::LossScale;
  if (planScales != opts_.lossScaling.has_value())
    return err(planScales ? "the programs take a loss scale, and the run has "
                            "no loss scaling (compile them without it)"
                          : "the run scales the loss, and the programs take "
                            "no loss scale (compile them with loss scaling)");
  if (opts_.lossScaling && !scaler_) {
    if (auto e = opts_.lossScaling->check())
      return e;
    scaler_ = std::make_unique<LossScaler>(*opts_.lossScaling);
  }
  for (int64_t s : r.stages)
    for (const Binding &x : plan_->pipeline.stages[s].backwardBindings.inputs)
      if (x.role == Role::LossScale && !r.lossScale.data()) {
        TensorType t{DType::F32, {}};
        r.lossScale = DeviceBuffer(*r.device, t);
        r.lossScaleHost = HostTensor(t);
      }
  return llvm::Error::success();
}

void Trainer::writeLossScale(float scale) {
  for (auto &r : ranks_)
    if (r->lossScale.data()) {
      r->lossScaleHost.set(0, scale);
      r->lossScale.fromHost(r->lossScaleHost);
    }
}

llvm::Expected<bool> Trainer::unscaleGradients(float scale,
                                               int64_t microbatches,
                                               bool inject) {
  // The microbatch mean and the unscale in one fp32 multiply (Megatron
  // multiplies main_grad by 1 / scale; for a power-of-two scale both
  // orders give the same bits).
  float factor = float(1.0 / (double(microbatches) * double(scale)));
  bool injectHere = inject && llvm::is_contained(opts_.injectInfAt, step_);
  std::vector<HostTensor> found;
  for (auto &r : ranks_) {
    int64_t rank = r->pipeRank * stageMesh_.numDevices() + r->stageRank;
    if (injectHere && rank == group_.mesh().numDevices() - 1 &&
        !r->grads.empty()) {
      DeviceBuffer &g = r->grads.begin()->second;
      auto host = readBack(g);
      if (!host)
        return host.takeError();
      host->set(0, std::numeric_limits<float>::infinity());
      g.fromHost(*host);
      if (auto e = r->device->synchronize())
        return e;
    }
    bool inf = false;
    for (auto &g : r->grads) {
      r->device->scale(g.second.data(), g.second.type().numElements(),
                       factor);
      auto host = readBack(g.second);
      if (!host)
        return host.takeError();
      inf |= host->firstNonFinite() >= 0;
    }
    found.push_back(HostTensor::scalar(inf ? 1.0 : 0.0));
  }
  auto all = group_.allGather(found);
  if (!all)
    return all.takeError();
  return llvm::any_of(*all, [](const HostTensor &t) { return t.get(0) != 0; });
}

llvm::Error Trainer::microbatchGradients() {
  // Without loss scaling the gradients come out as they are. With it, the
  // scaler's scale, halved until they are finite: the scale training would
  // back off to, without changing the scaler.
  float scale = scaler_ ? scaler_->scale() : 1.0f;
  float floor = opts_.lossScaling ? float(opts_.lossScaling->minScale) : 1.0f;
  for (;;) {
    if (scaler_)
      writeLossScale(scale);
    zeroGradients();
    if (auto e = runStreams(singleMicrobatch(false), uint64_t(step_), nullptr,
                            false))
      return e;
    if (!scaler_)
      return llvm::Error::success();
    auto inf = unscaleGradients(scale, 1, /*inject=*/false);
    if (!inf)
      return inf.takeError();
    if (!*inf || scale <= floor || !scaler_->dynamic())
      return llvm::Error::success();
    scale = std::max(scale * LossScalerConfig::kBackoff, floor);
  }
}

} // namespace strata
