//===- Driver.cpp - Spec -> plan, and loading what the verbs read ---------===//
#include "tools/strata/Driver.h"

#include "frontends/ModelStats.h"
#include "frontends/Models.h"
#include "ir/Verifier.h"
#include "proto/GraphProto.h"
#include "proto/PlanFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace strata {

llvm::Expected<pb::Plan> compilePlan(const pb::ModelSpec &spec) {
  ModelConfig c = resolveModelSpec(spec);
  Graph g = buildModelGraph(c);
  if (llvm::Error e = verifyGraph(g))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "internal error: the " + c.familyName() +
            " frontend built an invalid graph: " + toString(std::move(e)));
  pb::Plan plan;
  plan.set_format_version(kPlanFormatVersion);
  plan.set_strata_version(kStrataVersion);
  *plan.mutable_model() = spec;
  pb::ModelInfo *info = plan.mutable_info();
  info->set_vocab_size(c.vocab);
  info->set_padded_vocab_size(c.paddedVocab);
  info->set_head_dim(c.headDim);
  info->set_kv_heads(c.kvHeads);
  info->set_ffn(c.ffn);
  info->set_tie_embeddings(c.tieEmbeddings);
  info->set_num_params(countParams(g).total);
  *plan.mutable_logical_graph() = graphToProto(g);
  return plan;
}

bool isSpecPath(llvm::StringRef path) {
  llvm::StringRef ext = llvm::sys::path::extension(path);
  return ext == ".textproto" || ext == ".txtpb" || ext == ".pbtxt";
}

bool isCheckpointFile(llvm::StringRef path) {
  auto head = llvm::MemoryBuffer::getFileSlice(path, 8, 0);
  return head && (*head)->getBuffer() == "STRATACK"; // runtime/io/Checkpoint.h
}

std::string specDirectoryOf(llvm::StringRef specPath) {
  llvm::SmallString<256> p(specPath);
  llvm::sys::fs::make_absolute(p);
  llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
  return std::string(llvm::sys::path::parent_path(p));
}

std::string resolveDataPath(const LoadedPlan &p) {
  llvm::SmallString<256> path(p.plan.model().data().path());
  if (llvm::sys::path::is_relative(path) && !p.specDir.empty()) {
    llvm::SmallString<256> dir(p.specDir);
    llvm::sys::path::append(dir, path);
    llvm::sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
    path = dir;
  }
  return std::string(path);
}

/// The error for a checkpoint given where a spec or plan is read.
static llvm::Error checkpointNotAccepted(llvm::StringRef path,
                                         llvm::StringRef wanted) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      path + ": error: this is a training checkpoint, not " + wanted +
          " (`strata inspect " + path + "` summarizes it, `strata generate " +
          path +
          "` samples from it, `strata train SPEC --out DIR --resume` "
          "continues it)");
}

llvm::Error checkIsSpecFile(llvm::StringRef path) {
  if (isCheckpointFile(path))
    return checkpointNotAccepted(path, "a model spec");
  auto head = llvm::MemoryBuffer::getFileSlice(path, kPlanHeaderSize, 0);
  if (head && hasPlanMagic((*head)->getBuffer()))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path + ": error: this is a compiled plan, not a model spec (inspect, "
               "train and verify take the plan as it is; compile reads the "
               ".textproto it came from)");
  return llvm::Error::success();
}

LoadedPlan::LoadedPlan()
    : arena(std::make_unique<google::protobuf::Arena>()),
      plan(*google::protobuf::Arena::CreateMessage<pb::Plan>(arena.get())) {}

llvm::Expected<LoadedPlan> loadPlanOrSpec(llvm::StringRef path) {
  LoadedPlan out;
  if (isCheckpointFile(path))
    return checkpointNotAccepted(path, "a model spec or a plan");
  if (isSpecPath(path)) {
    auto spec = loadModelSpec(path);
    if (!spec)
      return spec.takeError();
    auto plan = compilePlan(*spec);
    if (!plan)
      return plan.takeError();
    out.plan = std::move(*plan);
    out.plan.set_spec_dir(specDirectoryOf(path));
  } else {
    if (llvm::Error e = readPlanFile(path, out.plan))
      return std::move(e);
    if (llvm::Error e = checkModelSpec(out.plan.model(), path))
      return e;
  }
  auto graph = graphFromProto(out.plan.logical_graph());
  if (!graph)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path + ": error: " + toString(graph.takeError()));
  if (llvm::Error e = verifyGraph(*graph))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path + ": error: invalid plan graph: " + toString(std::move(e)));
  out.graph = std::move(*graph);
  out.config = resolveModelSpec(out.plan.model());
  out.specDir = out.plan.spec_dir();
  return out;
}

std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

} // namespace strata
