//===- RunDirectory.h - The files of a training run's --out directory
//------===//
//
// A run directory holds checkpoint.bin, metrics.jsonl and the token cache.
// A new run refuses a directory that already holds a run unless told to
// resume or overwrite it; a resumed run drops the metrics lines written after
// its checkpoint (so a crash between checkpoints leaves no duplicate steps);
// a resume may change only what does not change the model or its data.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "proto/model_spec.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strata {

/// `dir`/checkpoint.bin and `dir`/metrics.jsonl.
std::string checkpointPath(llvm::StringRef dir);
std::string metricsPath(llvm::StringRef dir);

/// Fails when `dir` holds a previous run's checkpoint or metrics and the run
/// neither resumes nor overwrites it.
llvm::Error checkRunDirectory(llvm::StringRef dir, bool resume, bool overwrite);

/// Appends one JSON object per line to a run's metrics.jsonl.
class MetricsLog {
public:
  /// Opens `dir`/metrics.jsonl; when resuming at `resumeStep`, keeps only the
  /// lines of steps before it (training lines say the step they ran, 0-based;
  /// evaluation lines the steps done) and appends after them.
  llvm::Error open(llvm::StringRef dir, std::optional<int64_t> resumeStep);
  void write(llvm::json::Object obj);

private:
  std::unique_ptr<llvm::raw_fd_ostream> os_;
};

/// The dotted paths of the fields whose values differ ("training.lr",
/// "hidden"), compared by value (an unset field has its default).
std::vector<std::string> differingFields(const google::protobuf::Message &a,
                                         const google::protobuf::Message &b);

/// Whether resuming may change `field`: the run length, evaluation interval,
/// learning-rate schedule and precision (the state is fp32 in every one).
bool resumeMayChange(llvm::StringRef field);

} // namespace strata
