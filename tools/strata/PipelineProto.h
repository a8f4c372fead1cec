//===- PipelineProto.h - Compiled pipelines in the Plan, and back
//----------===//
//
// `strata compile` stores the parallel configuration, the stage programs,
// the schedule and the memory plan in the Plan's fields 16, 17, 24 and 32
// (proto/strata.proto); `strata inspect` reads them back.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/ParallelCompile.h"
#include "proto/strata.pb.h"

#include "llvm/Support/Error.h"

namespace strata {

/// Fills `plan`'s parallel, pipeline, schedule and memory fields.
void storePipeline(pb::Plan &plan, const CompiledPipeline &compiled,
                   const ParallelCompileOptions &options);

/// Fills `plan`'s kernels: the C++ and CUDA libraries of every fused node of
/// the stage and optimizer programs (codegen/KernelLibrary.h); none when
/// nothing is fused.
llvm::Error storeKernels(pb::Plan &plan, const CompiledPipeline &compiled);

/// The compiled programs of a plan, rebuilt and verified (every program,
/// then verifyPipelinePlan); the memory plan is not read back.
llvm::Expected<CompiledPipeline> loadPipeline(const pb::Plan &plan);

/// Checks that the kernels the runtime generates for `compiled` (a plan's
/// loaded programs) are the plan's: each library hashes the same.
llvm::Error checkKernels(const pb::Plan &plan,
                         const CompiledPipeline &compiled);

/// The schedule of a plan, rebuilt and validated.
llvm::Expected<Schedule> scheduleFromProto(const pb::Schedule &s);

} // namespace strata
