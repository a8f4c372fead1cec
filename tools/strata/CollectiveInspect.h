//===- CollectiveInspect.h - `strata inspect PLAN --collectives`
//-----------===//
//
// Lists every collective of a compiled training step per pipeline rank: the
// program it is in and how often that program runs per optimizer step (F and
// B once per microbatch, the optimizer once), the op, its group and size,
// the bytes it moves per device, and its provenance (passes/spmd
// CollectiveReport.h); then per-step totals by group. `--json` carries the
// same as a "collectives" member.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/spmd/CollectiveReport.h"
#include "proto/strata.pb.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace strata {

/// The collectives of pipeline rank `rank`'s programs in a plan.
llvm::Expected<std::vector<CollectiveUse>> planCollectives(const pb::Plan &plan,
                                                           int64_t rank);

llvm::Error printCollectives(llvm::raw_ostream &os, const pb::Plan &plan);

/// {"ranks": [{"rank", "collectives": [...], "totals": [...]}]}.
llvm::Expected<llvm::json::Object> collectivesJson(const pb::Plan &plan);

} // namespace strata
