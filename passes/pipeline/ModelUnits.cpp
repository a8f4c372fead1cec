//===- ModelUnits.cpp - Which part of the model a node belongs to
//----------===//
#include "passes/pipeline/ModelUnits.h"

#include <algorithm>

namespace strata {

namespace {
/// `scope` is `name` or starts with `name.`.
bool inScope(llvm::StringRef scope, llvm::StringRef name) {
  return scope == name || scope.startswith((name + ".").str());
}
} // namespace

std::string ModelUnit::str() const {
  switch (kind) {
  case Pre:
    return "embed";
  case Layer:
    return "layers." + std::to_string(layer);
  case Post:
    return "head";
  case Unknown:
    break;
  }
  return "unknown";
}

ModelUnit unitOfScope(llvm::StringRef scope) {
  if (inScope(scope, "embed"))
    return {ModelUnit::Pre, -1};
  if (inScope(scope, "ln_f") || inScope(scope, "lm_head") ||
      inScope(scope, "loss"))
    return {ModelUnit::Post, -1};
  llvm::StringRef rest = scope;
  if (rest.consume_front("layers.")) {
    llvm::StringRef digits = rest.take_until([](char c) { return c == '.'; });
    int64_t i;
    if (!digits.getAsInteger(10, i) && i >= 0 &&
        (rest.size() == digits.size() || rest[digits.size()] == '.'))
      return {ModelUnit::Layer, i};
  }
  return {ModelUnit::Unknown, -1};
}

int64_t countLayers(const Graph &g) {
  int64_t n = 0;
  for (const Node &node : g.nodes()) {
    ModelUnit u = unitOfScope(node.scope);
    if (u.kind == ModelUnit::Layer)
      n = std::max(n, u.layer + 1);
  }
  return n;
}

} // namespace strata
