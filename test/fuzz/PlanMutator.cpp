//===- PlanMutator.cpp - Plan mutations that keep the header consistent ---===//
//
// A mutated plan almost never passes the header's payload size and CRC-32,
// so plain byte mutations would only test the header. Seven times in eight
// this mutator mutates the payload and then rewrites the size and CRC (and
// the kernels' SHA-256s when the payload still parses), so the fuzzer
// reaches the Plan, spec, graph and pipeline readers; the eighth time it
// mutates the raw file.
//
//===----------------------------------------------------------------------===//
#include "proto/PlanFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/SHA256.h"

#include <google/protobuf/arena.h>

#include <cstring>
#include <random>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace endian = llvm::support::endian;
using strata::kPlanHeaderSize;

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  std::minstd_rand rng(seed);
  llvm::StringRef file(reinterpret_cast<const char *>(data), size);
  if (size < kPlanHeaderSize || maxSize <= kPlanHeaderSize ||
      !strata::hasPlanMagic(file) || rng() % 8 == 0)
    return LLVMFuzzerMutate(data, size, maxSize);
  size_t n = LLVMFuzzerMutate(data + kPlanHeaderSize, size - kPlanHeaderSize,
                              maxSize - kPlanHeaderSize);
  std::string payload(reinterpret_cast<const char *>(data) + kPlanHeaderSize,
                      n);
  // On an arena: parsing and freeing a plan's many small messages one by one
  // took most of a run under ASan.
  google::protobuf::Arena arena;
  auto &plan =
      *google::protobuf::Arena::CreateMessage<strata::pb::Plan>(&arena);
  if (rng() % 2 && plan.ParseFromString(payload) && plan.kernels_size()) {
    for (strata::pb::KernelLibrary &k : *plan.mutable_kernels())
      k.set_sha256(llvm::toHex(
          llvm::SHA256::hash(llvm::arrayRefFromStringRef(k.source())),
          /*LowerCase=*/true));
    std::string fixed = plan.SerializeAsString();
    if (fixed.size() <= maxSize - kPlanHeaderSize)
      payload = std::move(fixed);
  }
  std::memcpy(data + kPlanHeaderSize, payload.data(), payload.size());
  endian::write32le(data + 12,
                    llvm::crc32(llvm::arrayRefFromStringRef(payload)));
  endian::write64le(data + 16, payload.size());
  return kPlanHeaderSize + payload.size();
}
