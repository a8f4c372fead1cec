//===- PipelineInspect.h - What `strata inspect` shows of a pipelined plan
//-===//
//
//   --programs         every stage program as IR text, separated by
//                      `# ---- stage J F` lines (PipelinePlan.h)
//   --memory           bytes per device of each pipeline rank (MemoryPlan.h)
//   --schedule F.svg   each rank's instruction stream and the bubble
//                      fraction, and the timeline drawn into F.svg
//   --json             adds "parallel", "schedule" and "memory" objects
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/recompute/Recompute.h" // formatBytes
#include "proto/strata.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace strata {

llvm::Error printPrograms(llvm::raw_ostream &os, const pb::Plan &plan);
void printMemoryReport(llvm::raw_ostream &os, const pb::Plan &plan);
/// Prints the streams and bubble fraction, and writes the SVG to `svgPath`
/// atomically.
llvm::Error printSchedule(llvm::raw_ostream &os, const pb::Plan &plan,
                          llvm::StringRef svgPath);
/// The "parallel", "schedule" and "memory" members of `inspect --json`.
llvm::json::Object pipelineJson(const pb::Plan &plan);

/// "stage J F", with "(rank R, chunk C)" when interleaved.
std::string stageLabel(const pb::Plan &plan, const pb::PipelineStage &s,
                       llvm::StringRef kind);
/// The stage indices of pipeline rank r: "0,2".
std::string stagesOf(const pb::Plan &plan, int64_t r);
/// "tp=2 dp=2 pp=1, 1f1b, 8 microbatches, recompute none".
std::string parallelSummary(const pb::Plan &plan);

} // namespace strata
