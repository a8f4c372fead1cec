//===- PlanFile.h - Reading and writing Plan files ------------------------===//
//
// A plan file is a 24-byte header followed by the binary strata.pb.Plan:
//
//   bytes 0-7    magic "STRATAPL"
//   bytes 8-11   format version (u32, little-endian), = Plan.format_version
//   bytes 12-15  CRC-32 of the payload
//   bytes 16-23  payload size in bytes (u64)
//
// The header lets a reader tell a plan from any other file, catch truncation
// and corruption (protobuf alone would parse a truncated message silently) and
// refuse a newer format before parsing it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "proto/strata.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace strata {

/// The plan format this build writes, and the newest it reads.
inline constexpr uint32_t kPlanFormatVersion = 2;
/// Recorded in every plan (Plan.strata_version).
inline constexpr const char *kStrataVersion = "0.1.0";
inline constexpr size_t kPlanHeaderSize = 24;

/// Serializes `plan` (header + payload) into bytes.
std::string serializePlan(const pb::Plan &plan);

/// Writes `plan` to `path` atomically: into a temporary file next to it, then
/// renamed, so a failure never leaves a partial file behind.
llvm::Error writePlanFile(llvm::StringRef path, const pb::Plan &plan);

/// Checks the header and parses a plan image. Errors are one line:
/// `<name>: error: <what> (<why>; <fix>)`.
llvm::Expected<pb::Plan> parsePlan(llvm::StringRef bytes, llvm::StringRef name);

/// parsePlan into `plan` (cleared first), which may live on a protobuf arena:
/// a plan is tens of thousands of small messages, and an arena allocates them
/// in blocks and frees them at once.
llvm::Error parsePlan(llvm::StringRef bytes, llvm::StringRef name,
                      pb::Plan &plan);

/// Reads and parses a plan file.
llvm::Expected<pb::Plan> readPlanFile(llvm::StringRef path);

/// readPlanFile into `plan` (see parsePlan).
llvm::Error readPlanFile(llvm::StringRef path, pb::Plan &plan);

/// True if `bytes` start with the plan magic.
bool hasPlanMagic(llvm::StringRef bytes);

} // namespace strata
