//===- MemoryCheck.cpp - Does a training run fit in this machine's memory?
//-===//
#include "runtime/train/MemoryCheck.h"

#include "passes/autodiff/Autodiff.h"
#include "passes/memory/Activations.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace strata {

HostMemoryNeed hostMemoryNeed(const Graph &forward,
                              const ParallelConfig &parallel,
                              int64_t localRanks, int64_t worldSize) {
  HostMemoryNeed need;
  int64_t paramBytes = 0;
  for (ValueId v : forward.inputs())
    if (forward.value(v).isParam()) {
      need.params += forward.value(v).type.numElements();
      paramBytes += forward.value(v).type.bytes();
    }
  // Values and gradients on every dp replica; moments too unless ZeRO-1
  // shards them over dp.
  int64_t dp = parallel.dp;
  int64_t momentCopies = parallel.distributedOptimizer ? 1 : dp;
  double share = double(localRanks) / double(worldSize);
  need.stateBytes =
      int64_t(double(paramBytes) * double(2 * dp + 2 * momentCopies) * share);
  Graph micro = forward;
  if (llvm::Error e = differentiate(micro))
    llvm::consumeError(std::move(e)); // the session reports it when it compiles
  else
    need.stashBytes = int64_t(double(stashBytes(micro)) * share);
  return need;
}

/// The number after `key` in a /proc/meminfo-style text, in bytes.
static int64_t meminfoBytes(llvm::StringRef text, llvm::StringRef key) {
  size_t at = text.find(key);
  if (at == llvm::StringRef::npos)
    return -1;
  llvm::StringRef rest = text.drop_front(at + key.size()).ltrim();
  int64_t kib;
  if (rest.consumeInteger(10, kib))
    return -1;
  return kib * 1024;
}

int64_t availableHostMemory() {
  int64_t available = -1;
  if (auto info = llvm::MemoryBuffer::getFileAsStream("/proc/meminfo"))
    available = meminfoBytes((*info)->getBuffer(), "MemAvailable:");
  if (auto limit =
          llvm::MemoryBuffer::getFileAsStream("/sys/fs/cgroup/memory.max")) {
    int64_t max;
    if (!(*limit)->getBuffer().trim().getAsInteger(10, max) &&
        (available < 0 || max < available))
      available = max;
  }
  return available;
}

static std::string gib(int64_t bytes) {
  std::string s;
  llvm::raw_string_ostream(s)
      << llvm::format("%.1f GiB", double(bytes) / double(int64_t(1) << 30));
  return s;
}

llvm::Error checkHostMemory(const HostMemoryNeed &need, int64_t available) {
  if (available < 0 || need.total() <= available)
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "the run needs at least " + gib(need.total()) + " of host memory (" +
          gib(need.stateBytes) +
          " for the parameters, gradients and AdamW "
          "moments of " +
          std::to_string(need.params) + " parameters, " + gib(need.stashBytes) +
          " for one microbatch's activations) but " + gib(available) +
          " are available on this machine; make the model smaller (hidden, "
          "layers, vocab_size), the microbatch smaller (--batch, --seq), or "
          "spread it over processes on more machines (strata launch)");
}

} // namespace strata
