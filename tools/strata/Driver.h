//===- Driver.h - Spec -> plan, and loading what the verbs read -----------===//
//
// The steps shared by the verbs: compile a model spec into a Plan, and load
// either a plan file or a spec (compiled in memory) with its graph and
// resolved config.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "ir/Graph.h"
#include "proto/strata.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <google/protobuf/arena.h>

#include <memory>
#include <string>

namespace strata {

/// Builds and verifies the logical graph of `spec` (already checked) and
/// packs it into a Plan with the current format version.
llvm::Expected<pb::Plan> compilePlan(const pb::ModelSpec &spec);

/// A plan with its graph rebuilt and its model config resolved.
struct LoadedPlan {
  LoadedPlan();
  /// Owns `plan`'s messages (a plan file parses into tens of thousands of
  /// them; an arena allocates and frees them in blocks). Moving a LoadedPlan
  /// moves the arena, so `plan` stays valid.
  std::unique_ptr<google::protobuf::Arena> arena;
  pb::Plan &plan;
  Graph graph;
  ModelConfig config;
  /// The absolute directory of the spec (the plan's spec_dir; empty for a
  /// plan older than that field).
  std::string specDir;
};

/// True if `path` starts with a training checkpoint's magic (STRATACK).
bool isCheckpointFile(llvm::StringRef path);

/// Refuses a checkpoint or a plan given where a model spec is read, saying
/// what the file is and which verbs read it.
llvm::Error checkIsSpecFile(llvm::StringRef path);

/// The absolute directory of the file `specPath`.
std::string specDirectoryOf(llvm::StringRef specPath);

/// The spec's data.path, a relative one joined to the spec's directory.
std::string resolveDataPath(const LoadedPlan &p);

/// True if `path` names a model spec (.textproto, .txtpb, .pbtxt) rather than
/// a plan file.
bool isSpecPath(llvm::StringRef path);

/// Loads a plan file, or compiles a spec in memory (recording its directory
/// as a compiled plan does). A checkpoint is refused with a pointer to the
/// verbs that read checkpoints.
llvm::Expected<LoadedPlan> loadPlanOrSpec(llvm::StringRef path);

/// 124439808 -> "124,439,808".
std::string withCommas(int64_t n);

} // namespace strata
