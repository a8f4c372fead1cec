//===- Flags.cpp - Checking the verbs' command-line flags -----------------===//
#include "tools/strata/Flags.h"

#include "tools/strata/Verb.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;

namespace strata {

std::string formatNumber(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

namespace {

template <class T>
FlagRule intRange(const cl::opt<T> &flag, T min, T max, StringRef hint) {
  auto violation = [&flag, min, max]() -> std::string {
    T v = flag;
    if (v >= min && v <= max)
      return "";
    std::string bound =
        max == std::numeric_limits<T>::max()
            ? ">= " + std::to_string(min)
            : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    return "must be " + bound + ", got " + std::to_string(v);
  };
  return {&flag, violation, hint.str()};
}

} // namespace

FlagRule inRange(const cl::opt<int64_t> &flag, int64_t min, int64_t max,
                 StringRef hint) {
  return intRange<int64_t>(flag, min, max, hint);
}
FlagRule inRange(const cl::opt<int> &flag, int min, int max, StringRef hint) {
  return intRange<int>(flag, min, max, hint);
}
FlagRule atLeast(const cl::opt<int64_t> &flag, int64_t min, StringRef hint) {
  return intRange<int64_t>(flag, min, INT64_MAX, hint);
}
FlagRule atLeast(const cl::opt<int> &flag, int min, StringRef hint) {
  return intRange<int>(flag, min, INT_MAX, hint);
}

FlagRule inInterval(const cl::opt<double> &flag, double lo, double hi,
                    Ends ends, StringRef hint) {
  auto violation = [&flag, lo, hi, ends]() -> std::string {
    double v = flag;
    bool openLo = ends == Ends::OpenLow || ends == Ends::Open;
    bool openHi = ends == Ends::OpenHigh || ends == Ends::Open;
    bool ok = std::isfinite(v) && (openLo ? v > lo : v >= lo) &&
              (openHi ? v < hi : v <= hi);
    if (ok)
      return "";
    std::string bound;
    if (std::isinf(hi))
      bound = (openLo ? "> " : ">= ") + formatNumber(lo);
    else if (std::isinf(lo))
      bound = (openHi ? "< " : "<= ") + formatNumber(hi);
    else
      bound = "in " + std::string(openLo ? "(" : "[") + formatNumber(lo) +
              ", " + formatNumber(hi) + (openHi ? ")" : "]");
    return "must be a finite number " + bound + ", got " + formatNumber(v);
  };
  return {&flag, violation, hint.str()};
}

FlagRule oneOf(const cl::opt<std::string> &flag, ArrayRef<StringRef> values,
               StringRef hint) {
  std::vector<std::string> allowed(values.begin(), values.end());
  auto violation = [&flag, allowed]() -> std::string {
    if (is_contained(allowed, flag.getValue()))
      return "";
    std::string list;
    for (size_t i = 0; i < allowed.size(); ++i)
      list += (i ? (i + 1 == allowed.size() ? " or " : ", ") : "") + allowed[i];
    return "must be " + list + ", got '" + flag.getValue() + "'";
  };
  return {&flag, violation, hint.str()};
}

Error checkFlags(ArrayRef<FlagRule> rules) {
  for (const FlagRule &r : rules) {
    if (!given(*r.flag))
      continue;
    std::string v = r.violation();
    if (v.empty())
      continue;
    return usageError("--" + r.flag->ArgStr + " " + v +
                      (r.hint.empty() ? "" : " (" + r.hint + ")"));
  }
  return Error::success();
}

Error checkSequenceParallel(bool sp, int64_t tp) {
  if (!sp || tp > 1)
    return Error::success();
  return usageError("sequence parallelism (--sp) splits the sequence over tp, "
                    "but tp is 1 (use --tp 2 or more, or drop --sp)");
}

Error checkPipelineFlags(const ScheduleSpec &spec, int64_t pp,
                         int64_t microbatches, int64_t layers) {
  auto schedule = buildSchedule(spec, pp, microbatches);
  if (!schedule)
    return schedule.takeError();
  int64_t stages = schedule->numStages();
  if (layers < stages)
    return usageError(Twine(stages) + " pipeline stages (pp=" + Twine(pp) +
                      ", " + spec.str() +
                      ") need at least one block each, but the model has " +
                      Twine(layers) + " (lower --pp or the virtual stages)");
  if (pp > 1 && microbatches < pp)
    reportNote("--pp " + Twine(pp) + " with " + Twine(microbatches) +
               " microbatches per step: each pipeline rank idles " +
               formatv("{0:F2}", idealBubbleFraction(*schedule)).str() +
               " of a step's compute in the pipeline bubble ((pp-1)/" +
               (spec.virtualStages > 1 ? "(V*microbatches)" : "microbatches") +
               ", " + spec.str() + "); use --microbatches " + Twine(pp) +
               " or more (the bubble shrinks as microbatches grow)");
  return Error::success();
}

} // namespace strata
