//===- TestSpecs.h - Example specs and small graphs for frontend tests ----===//
#pragma once

#include "frontends/ModelSpec.h"
#include "frontends/Models.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

#include <string>

namespace strata::test {

inline std::string sourcePath(const std::string &rel) {
  return std::string(STRATA_SOURCE_DIR) + "/" + rel;
}

/// Loads examples/<name>.textproto, failing the test on error.
inline pb::ModelSpec loadExample(const std::string &name) {
  auto spec = loadModelSpec(sourcePath("examples/" + name + ".textproto"));
  if (!spec) {
    ADD_FAILURE() << llvm::toString(spec.takeError());
    return {};
  }
  return *spec;
}

/// Parses spec text that must be valid.
inline pb::ModelSpec specFromText(const std::string &text) {
  auto spec = parseModelSpec(text, "spec");
  if (!spec) {
    ADD_FAILURE() << llvm::toString(spec.takeError());
    return {};
  }
  return *spec;
}

/// The one-layer models of the structure tests (dropout on, so every
/// dropout site shows).
inline const char *kTinyGPT = R"(
  family: GPT vocab_size: 60 hidden: 32 layers: 1 heads: 4
  seq_len: 16 micro_batch: 2 dropout: 0.1
)";
inline const char *kTinyLlama = R"(
  family: LLAMA vocab_size: 61 hidden: 32 layers: 1 heads: 4 kv_heads: 2
  ffn_multiple_of: 8 seq_len: 16 micro_batch: 2
)";

inline Graph buildFromText(const std::string &text) {
  return buildModelGraph(resolveModelSpec(specFromText(text)));
}

} // namespace strata::test
