//===- ParamInit.cpp - Initial parameter values from their IR attributes
//---===//
#include "runtime/train/ParamInit.h"

#include "runtime/kernels/Philox.h"

#include <cmath>
#include <numbers>

namespace strata {

static uint32_t fnv1a(llvm::StringRef s) {
  uint32_t h = 2166136261u;
  for (char c : s)
    h = (h ^ uint8_t(c)) * 16777619u;
  return h;
}

llvm::Expected<std::function<double(int64_t)>>
paramInitializer(const Value &val, uint64_t seed) {
  std::string init = val.attrs.getString("init", "normal");
  if (init == "zeros")
    return [](int64_t) { return 0.0; };
  if (init == "ones")
    return [](int64_t) { return 1.0; };
  if (init != "normal")
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "parameter %" + val.name +
                                       ": unknown init '" + init +
                                       "' (expected normal, zeros or ones)");
  double stddev = val.attrs.getFloat("std", 0.02);
  kernels::PhiloxKey key{uint32_t(seed ^ (seed >> 32)), fnv1a(val.name)};
  return [stddev, key](int64_t i) {
    // Box-Muller on two 32-bit draws; u1 in (0, 1] keeps log finite.
    auto r = kernels::philox4x32_10(
        {uint32_t(i), uint32_t(uint64_t(i) >> 32), 0x1417u, 0}, key);
    double u1 = (double(r[0]) + 1.0) * 0x1p-32;
    double u2 = double(r[1]) * 0x1p-32;
    double z =
        std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    return stddev * z;
  };
}

llvm::Expected<HostTensor> initParam(const Graph &g, ValueId v, uint64_t seed) {
  const Value &val = g.value(v);
  auto element = paramInitializer(val, seed);
  if (!element)
    return element.takeError();
  HostTensor t(val.type);
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    t.set(i, (*element)(i));
  return t;
}

} // namespace strata
