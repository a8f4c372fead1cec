//===- ParamInit.h - Initial parameter values from their IR attributes
//-----===//
//
// A parameter input carries `init` ("normal" | "zeros" | "ones") and `std`.
// Normal draws are counter-based (Philox keyed by the seed and a hash of the
// parameter's name, counter = element index), so a parameter's values do not
// depend on the order or the set of other parameters, nor on how a parallel
// plan shards it: a shard can draw exactly its part of the serial tensor.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "runtime/HostTensor.h"

#include "llvm/Support/Error.h"

#include <functional>

namespace strata {

/// Element i (row-major) of the initial value of parameter `param`: what
/// a rank draws for its block alone (runtime/parallel/Sharded.h, blockOf).
/// Fails on an unknown init.
llvm::Expected<std::function<double(int64_t)>>
paramInitializer(const Value &param, uint64_t seed);

/// Initial value of parameter input `v` of `g` (dtype of the input).
llvm::Expected<HostTensor> initParam(const Graph &g, ValueId v, uint64_t seed);

} // namespace strata
