//===- SlurmEnv.cpp - torchrun's variables from Slurm's -------------------===//
#include "runtime/comm/SlurmEnv.h"

#include <cstdlib>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

llvm::Expected<std::string> firstSlurmHost(llvm::StringRef nodelist) {
  // The first entry: up to a comma outside brackets.
  size_t end = 0;
  int depth = 0;
  for (; end < nodelist.size(); ++end) {
    char ch = nodelist[end];
    if (ch == '[')
      ++depth;
    else if (ch == ']')
      --depth;
    else if (ch == ',' && depth == 0)
      break;
  }
  llvm::StringRef entry = nodelist.take_front(end).trim();
  size_t open = entry.find('[');
  if (open == llvm::StringRef::npos) {
    if (entry.empty() || entry.contains(']'))
      return err("SLURM_JOB_NODELIST='" + nodelist + "' has no host name");
    return entry.str();
  }
  size_t close = entry.find(']', open);
  if (close == llvm::StringRef::npos)
    return err("SLURM_JOB_NODELIST='" + nodelist + "' has an unclosed '['");
  llvm::StringRef inside = entry.slice(open + 1, close);
  llvm::StringRef first = inside.split(',').first.split('-').first.trim();
  if (first.empty() ||
      !llvm::all_of(first, [](char c) { return c >= '0' && c <= '9'; }))
    return err("SLURM_JOB_NODELIST='" + nodelist +
               "' has a range that does not start with a number");
  return (entry.take_front(open) + first + entry.drop_front(close + 1)).str();
}

llvm::Expected<std::map<std::string, std::string>>
torchrunVarsFromSlurm(const EnvLookup &env) {
  std::map<std::string, std::string> vars;
  auto procid = env("SLURM_PROCID");
  if (!procid)
    return vars;
  auto number = [&](const char *name,
                    llvm::StringRef text) -> llvm::Expected<int64_t> {
    int64_t x;
    if (text.getAsInteger(10, x) || x < 0)
      return err(llvm::Twine(name) + "='" + text +
                 "' is not a non-negative integer");
    return x;
  };
  auto adopt = [&](const char *to, const char *from) -> llvm::Error {
    auto v = env(from);
    if (env(to) || !v)
      return llvm::Error::success();
    auto x = number(from, *v);
    if (!x)
      return x.takeError();
    vars[to] = std::to_string(*x);
    return llvm::Error::success();
  };
  if (auto e = adopt("RANK", "SLURM_PROCID"))
    return std::move(e);
  if (auto e = adopt("WORLD_SIZE", "SLURM_NTASKS"))
    return std::move(e);
  if (!env("WORLD_SIZE") && !env("SLURM_NTASKS"))
    return err("SLURM_PROCID is set but SLURM_NTASKS is not (run the ranks "
               "with srun, one task per GPU)");
  if (auto e = adopt("LOCAL_RANK", "SLURM_LOCALID"))
    return std::move(e);
  if (!env("LOCAL_WORLD_SIZE")) {
    if (auto v = env("SLURM_NTASKS_PER_NODE")) {
      if (auto e = adopt("LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"))
        return std::move(e);
    } else if (auto t = env("SLURM_TASKS_PER_NODE")) {
      // "4(x2),3": the count of this job's first node.
      llvm::StringRef first =
          llvm::StringRef(*t).split(',').first.split('(').first;
      auto x = number("SLURM_TASKS_PER_NODE", first);
      if (!x)
        return x.takeError();
      vars["LOCAL_WORLD_SIZE"] = std::to_string(*x);
    }
  }
  if (!env("MASTER_ADDR")) {
    auto list = env("SLURM_JOB_NODELIST");
    if (!list)
      list = env("SLURM_NODELIST");
    if (list) {
      auto host = firstSlurmHost(*list);
      if (!host)
        return host.takeError();
      vars["MASTER_ADDR"] = *host;
    }
  }
  if (!env("MASTER_PORT"))
    if (auto job = env("SLURM_JOB_ID")) {
      auto id = number("SLURM_JOB_ID", *job);
      if (!id)
        return id.takeError();
      vars["MASTER_PORT"] = std::to_string(20000 + *id % 10000);
    }
  return vars;
}

llvm::Expected<std::map<std::string, std::string>> torchrunVarsFromProcess() {
  return torchrunVarsFromSlurm(
      [](const char *name) -> std::optional<std::string> {
        if (const char *v = std::getenv(name))
          return std::string(v);
        return std::nullopt;
      });
}

llvm::Error adoptSlurmEnvironment() {
  auto vars = torchrunVarsFromProcess();
  if (!vars)
    return vars.takeError();
  for (auto &[k, v] : *vars)
    setenv(k.c_str(), v.c_str(), 1);
  return llvm::Error::success();
}

} // namespace strata
