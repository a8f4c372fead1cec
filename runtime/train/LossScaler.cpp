//===- LossScaler.cpp - Megatron-LM's fp16 loss scale ---------------------===//
#include "runtime/train/LossScaler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string num(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// Whether `v` is a positive number an fp32 scale holds exactly.
bool isFloatScale(double v) {
  return v > 0 && std::isfinite(v) && double(float(v)) == v;
}
} // namespace

llvm::Error LossScalerConfig::check() const {
  if (staticScale < 0 || (staticScale > 0 && !isFloatScale(staticScale)))
    return err("--loss-scale " + num(staticScale) +
               " is not a positive fp32 number (a constant scale; leave it "
               "out for the dynamic scale)");
  if (!isFloatScale(initialScale))
    return err("--initial-loss-scale " + num(initialScale) +
               " is not a positive fp32 number (Megatron's default: 2^32)");
  if (!isFloatScale(minScale) || minScale > initialScale)
    return err("--min-loss-scale " + num(minScale) +
               " must be a positive fp32 number at most the initial scale " +
               num(initialScale));
  if (window < 1)
    return err("--loss-scale-window " + llvm::Twine(window) +
               " must be at least 1 (steps without inf / nan before the "
               "scale doubles)");
  if (hysteresis < 1)
    return err("--hysteresis " + llvm::Twine(hysteresis) +
               " must be at least 1 (steps with inf / nan before the scale "
               "halves)");
  return llvm::Error::success();
}

std::optional<LossScalerConfig> lossScalingOf(const pb::Training &t) {
  if (t.precision() == pb::Training::F32 ||
      (t.precision() == pb::Training::BF16 && t.loss_scale() <= 0))
    return std::nullopt;
  LossScalerConfig c;
  c.staticScale = t.loss_scale();
  c.initialScale = t.initial_loss_scale();
  c.minScale = t.min_loss_scale();
  c.window = t.loss_scale_window();
  c.hysteresis = t.hysteresis();
  return c;
}

namespace {
/// 2^k for a power of two, else %g.
std::string scaleText(double s) {
  int e;
  if (std::frexp(s, &e) == 0.5)
    return "2^" + std::to_string(e - 1);
  return num(s);
}
} // namespace

std::string precisionSummary(const pb::Training &t) {
  std::string out = t.precision() == pb::Training::BF16   ? "bf16"
                    : t.precision() == pb::Training::FP16 ? "fp16"
                                                          : "f32";
  if (t.precision() == pb::Training::F32)
    return out;
  out += " (fp32 master weights, gradients and moments)";
  std::optional<LossScalerConfig> c = lossScalingOf(t);
  if (!c)
    return out + ", no loss scaling";
  if (c->staticScale > 0)
    return out + ", constant loss scale " + scaleText(c->staticScale);
  return out + ", dynamic loss scale " + scaleText(c->initialScale) +
         " (window " + std::to_string(c->window) + ", hysteresis " +
         std::to_string(c->hysteresis) + ", min " + scaleText(c->minScale) +
         ")";
}

llvm::json::Object precisionJson(const pb::Training &t) {
  llvm::json::Object o{{"precision", t.precision() == pb::Training::BF16 ? "bf16"
                                     : t.precision() == pb::Training::FP16
                                         ? "fp16"
                                         : "f32"}};
  std::optional<LossScalerConfig> c = lossScalingOf(t);
  if (!c) {
    o["loss_scale"] = nullptr;
    return o;
  }
  bool dynamic = c->staticScale <= 0;
  o["loss_scale"] = llvm::json::Object{
      {"dynamic", dynamic},
      {"scale", dynamic ? c->initialScale : c->staticScale},
      {"window", c->window},
      {"hysteresis", c->hysteresis},
      {"min", c->minScale}};
  return o;
}

LossScaler::LossScaler(const LossScalerConfig &config)
    : config_(config),
      scale_(float(config.staticScale > 0 ? config.staticScale
                                          : config.initialScale)),
      hysteresisTracker_(config.hysteresis) {}

void LossScaler::update(bool foundInf) {
  if (!dynamic())
    return;
  if (foundInf) {
    growthTracker_ = 0;
    if (--hysteresisTracker_ <= 0)
      scale_ = std::max(scale_ * LossScalerConfig::kBackoff,
                        float(config_.minScale));
    return;
  }
  if (++growthTracker_ == config_.window) {
    growthTracker_ = 0;
    hysteresisTracker_ = config_.hysteresis;
    scale_ = scale_ * LossScalerConfig::kGrowth;
  }
}

llvm::json::Value LossScaler::toJSON() const {
  return llvm::json::Object{{"scale", double(scale_)},
                            {"growth_tracker", growthTracker_},
                            {"hysteresis_tracker", hysteresisTracker_}};
}

llvm::Error LossScaler::fromJSON(const llvm::json::Value &state) {
  const llvm::json::Object *o = state.getAsObject();
  if (!o)
    return err("the loss scaler's state is not an object");
  llvm::Optional<double> scale = o->getNumber("scale");
  llvm::Optional<int64_t> growth = o->getInteger("growth_tracker");
  llvm::Optional<int64_t> hysteresis = o->getInteger("hysteresis_tracker");
  if (!scale || !growth || !hysteresis || !isFloatScale(*scale))
    return err("the loss scaler's state needs a positive fp32 scale, "
               "growth_tracker and hysteresis_tracker");
  if (dynamic())
    scale_ = float(*scale);
  growthTracker_ = *growth;
  hysteresisTracker_ = *hysteresis;
  return llvm::Error::success();
}

} // namespace strata
