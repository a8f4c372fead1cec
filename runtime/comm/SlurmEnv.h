//===- SlurmEnv.h - torchrun's variables from Slurm's ---------------------===//
//
// strata's ranks find their job through torchrun's variables (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Under
// Slurm (`srun strata train ...`, one task per GPU) they come from Slurm's:
//   RANK             <- SLURM_PROCID
//   WORLD_SIZE       <- SLURM_NTASKS
//   LOCAL_RANK       <- SLURM_LOCALID (the GPU a rank takes)
//   LOCAL_WORLD_SIZE <- SLURM_NTASKS_PER_NODE, else the first count of
//                       SLURM_TASKS_PER_NODE ("4(x2),3" -> 4)
//   MASTER_ADDR      <- the first host of SLURM_JOB_NODELIST (or
//                       SLURM_NODELIST): "node[01-04]" -> "node01"
//   MASTER_PORT      <- 20000 + SLURM_JOB_ID % 10000 (jobs sharing a node
//                       get different ports)
// A variable already set wins (torchrun inside a Slurm allocation).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace strata {

/// The first host name of a Slurm host list: "node[01-04],gpu7" -> "node01",
/// "gpu[3,5-7]-ib" -> "gpu3-ib", "a1,b2" -> "a1".
llvm::Expected<std::string> firstSlurmHost(llvm::StringRef nodelist);

/// Looks up an environment variable (std::getenv in a run, a map in tests).
using EnvLookup = std::function<std::optional<std::string>(const char *)>;

/// The torchrun variables Slurm's stand for (see the file comment), minus
/// those `env` already has; empty outside Slurm (SLURM_PROCID unset).
/// Errors name the bad Slurm variable.
llvm::Expected<std::map<std::string, std::string>>
torchrunVarsFromSlurm(const EnvLookup &env);

/// torchrunVarsFromSlurm of this process's environment.
llvm::Expected<std::map<std::string, std::string>> torchrunVarsFromProcess();

/// Sets torchrunVarsFromProcess() in this process's environment.
llvm::Error adoptSlurmEnvironment();

} // namespace strata
