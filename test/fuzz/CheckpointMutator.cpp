//===- CheckpointMutator.cpp - Checkpoint mutations past the CRCs ---------===//
//
// A checkpoint's JSON header and each tensor carry a CRC-32, so plain byte
// mutations would only test the prefix. Seven times in eight this mutator
// mutates either the JSON header or the tensor data, then lays the file out
// again (header length and CRC, 64-byte aligned data) and, every other time,
// also sets "data_bytes" to the data present and each in-bounds tensor's
// "crc32" to its data's CRC, so the fuzzer reaches the index and tensor
// checks; the eighth time it mutates the raw file.
//
//===----------------------------------------------------------------------===//
#include "runtime/io/JsonNesting.h"
#include "runtime/io/TensorIndex.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <random>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace endian = llvm::support::endian;

namespace {
constexpr size_t kPrefix = 24;

uint32_t crcOf(llvm::StringRef s) {
  return llvm::crc32(llvm::arrayRefFromStringRef(s));
}

/// Mutates `s` with libFuzzer's mutators, allowing it to grow by `room`.
void mutate(std::string &s, size_t room) {
  size_t size = s.size();
  s.resize(size + room + 1);
  s.resize(
      LLVMFuzzerMutate(reinterpret_cast<uint8_t *>(s.data()), size, s.size()));
}

/// Sets data_bytes to data.size() and every in-bounds tensor's crc32 to
/// its data's CRC; returns the header text, or "" when it is not JSON.
std::string fixHeader(llvm::StringRef header, llvm::StringRef data) {
  if (strata::jsonNestingError(header))
    return "";
  auto root = llvm::json::parse(header);
  if (!root || !root->getAsObject())
    return "";
  llvm::json::Object &obj = *root->getAsObject();
  obj["data_bytes"] = int64_t(data.size());
  if (llvm::json::Array *tensors = obj.getArray("tensors"))
    for (llvm::json::Value &v : *tensors) {
      auto e = strata::parseTensorEntry(v, data.size(),
                                        [](strata::DType) { return true; });
      if (!e) {
        llvm::consumeError(e.takeError());
        continue;
      }
      // parseTensorEntry bounded the size by the data (unless a dim is 0).
      uint64_t bytes =
          llvm::is_contained(e->type.shape, 0) ? 0 : uint64_t(e->type.bytes());
      (*v.getAsObject())["crc32"] =
          int64_t(crcOf(data.substr(e->offset, bytes)));
    }
  std::string out;
  llvm::raw_string_ostream(out) << llvm::json::Value(std::move(*root));
  return out;
}
} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  std::minstd_rand rng(seed);
  llvm::StringRef file(reinterpret_cast<const char *>(data), size);
  if (size < kPrefix || !file.startswith("STRATACK") || rng() % 8 == 0)
    return LLVMFuzzerMutate(data, size, maxSize);
  uint64_t headerLen =
      std::min<uint64_t>(endian::read64le(data + 16), size - kPrefix);
  std::string header = file.substr(kPrefix, headerLen).str();
  uint64_t dataStart = strata::alignTensorOffset(kPrefix + headerLen);
  std::string tensors = file.substr(std::min<uint64_t>(dataStart, size)).str();
  size_t room = maxSize > size ? maxSize - size : 0;
  if (rng() % 4)
    mutate(header, room);
  else
    mutate(tensors, room);
  if (rng() % 2)
    if (std::string fixed = fixHeader(header, tensors); !fixed.empty())
      header = std::move(fixed);

  std::string out = file.substr(0, kPrefix).str();
  endian::write32le(&out[12], crcOf(header));
  endian::write64le(&out[16], header.size());
  out += header;
  out.resize(strata::alignTensorOffset(out.size()), '\0');
  out += tensors;
  if (out.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
