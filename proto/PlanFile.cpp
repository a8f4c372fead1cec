//===- PlanFile.cpp - Reading and writing Plan files ----------------------===//
#include "proto/PlanFile.h"

#include "runtime/io/AtomicFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SHA256.h"

namespace strata {

namespace endian = llvm::support::endian;

namespace {
constexpr llvm::StringLiteral kMagic = "STRATAPL";

llvm::Error fileError(llvm::StringRef name, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 name + ": error: " + msg);
}

uint32_t payloadCrc(llvm::StringRef payload) {
  return llvm::crc32(llvm::arrayRefFromStringRef(payload));
}
} // namespace

bool hasPlanMagic(llvm::StringRef bytes) { return bytes.startswith(kMagic); }

std::string serializePlan(const pb::Plan &plan) {
  std::string payload;
  plan.SerializeToString(&payload);
  std::string out(kPlanHeaderSize, '\0');
  memcpy(&out[0], kMagic.data(), kMagic.size());
  endian::write32le(&out[8], plan.format_version());
  endian::write32le(&out[12], payloadCrc(payload));
  endian::write64le(&out[16], payload.size());
  return out + payload;
}

llvm::Error writePlanFile(llvm::StringRef path, const pb::Plan &plan) {
  std::string bytes = serializePlan(plan);
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << bytes;
    return llvm::Error::success();
  });
}

llvm::Expected<pb::Plan> parsePlan(llvm::StringRef bytes,
                                   llvm::StringRef name) {
  pb::Plan plan;
  if (llvm::Error e = parsePlan(bytes, name, plan))
    return std::move(e);
  return plan;
}

llvm::Error parsePlan(llvm::StringRef bytes, llvm::StringRef name,
                      pb::Plan &plan) {
  const char *recompile = "recompile it with `strata compile`";
  if (!hasPlanMagic(bytes))
    return fileError(name, "not a strata plan (no STRATAPL header; plans are "
                           "written by `strata compile`, model specs end in "
                           ".textproto)");
  if (bytes.size() < kPlanHeaderSize)
    return fileError(
        name, llvm::Twine("truncated plan (") + llvm::Twine(bytes.size()) +
                  " bytes, shorter than the header; " + recompile + ")");
  uint32_t version = endian::read32le(bytes.data() + 8);
  uint32_t crc = endian::read32le(bytes.data() + 12);
  uint64_t size = endian::read64le(bytes.data() + 16);
  if (version < kPlanFormatVersion)
    return fileError(
        name, llvm::Twine("plan format version ") + llvm::Twine(version) +
                  " is older than this strata reads (" +
                  llvm::Twine(kPlanFormatVersion) +
                  ": its buffer plans lack reshape views; " + recompile + ")");
  if (version > kPlanFormatVersion)
    return fileError(name, llvm::Twine("plan format version ") +
                               llvm::Twine(version) +
                               " is newer than this strata reads (" +
                               llvm::Twine(kPlanFormatVersion) +
                               "; use a newer strata or recompile the plan)");
  llvm::StringRef payload = bytes.drop_front(kPlanHeaderSize);
  if (payload.size() != size)
    return fileError(
        name, llvm::Twine(payload.size() < size ? "truncated" : "corrupt") +
                  " plan (header says " + llvm::Twine(size) +
                  " payload bytes, file has " + llvm::Twine(payload.size()) +
                  "; " + recompile + ")");
  if (payloadCrc(payload) != crc)
    return fileError(name, llvm::Twine("corrupt plan (checksum mismatch; ") +
                               recompile + ")");
  if (!plan.ParseFromArray(payload.data(), static_cast<int>(payload.size())))
    return fileError(name, llvm::Twine("corrupt plan (payload is not a valid "
                                       "Plan message; ") +
                               recompile + ")");
  if (plan.format_version() != version)
    return fileError(name, llvm::Twine("corrupt plan (header version ") +
                               llvm::Twine(version) +
                               " differs from payload "
                               "version " +
                               llvm::Twine(plan.format_version()) + "; " +
                               recompile + ")");
  for (const pb::KernelLibrary &k : plan.kernels())
    if (llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(k.source())),
                    /*LowerCase=*/true) != k.sha256())
      return fileError(name, "corrupt plan (the " + k.target() +
                                 " kernel library's source does not hash to "
                                 "its recorded SHA-256; " +
                                 recompile + ")");
  return llvm::Error::success();
}

llvm::Expected<pb::Plan> readPlanFile(llvm::StringRef path) {
  pb::Plan plan;
  if (llvm::Error e = readPlanFile(path, plan))
    return std::move(e);
  return plan;
}

llvm::Error readPlanFile(llvm::StringRef path, pb::Plan &plan) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return fileError(path, "cannot read plan: " + buf.getError().message());
  return parsePlan((*buf)->getBuffer(), path, plan);
}

} // namespace strata
