//===- ProgramPasses.h - Passes over a whole training program -------------===//
//
// The compiler's last steps as registered passes (passes/Pass.h) that work
// on a CompiledPipeline, so the PassManager runs them with the verifier
// between and `strata-opt --print-ir-after=pipeline` shows their result:
//
//   pipeline{pp,schedule,microbatches,layers,distributed-optimizer,beta1,
//            beta2,eps,weight-decay,grad-clip}
//       cuts the microbatch graph into stage programs, builds every pipeline
//       rank's optimizer program (AdamW; ZeRO-1 with distributed-optimizer)
//       and the schedule, and fills the binding table (Bindings.h).
//   memory{saved-state=strata|megatron}
//       plans every program's buffers and each rank's peak bytes.
//
// Graph passes (fusion) then apply to every stage and optimizer program.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"
#include "passes/memory/Activations.h"
#include "passes/pipeline/Pipeline.h"

namespace strata {

std::unique_ptr<Pass> createPipelinePass(PipelineOptions options);
std::unique_ptr<Pass> createMemoryPass(SavedStateModel model);

} // namespace strata
