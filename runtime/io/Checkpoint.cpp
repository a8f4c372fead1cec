//===- Checkpoint.cpp - Single-file training checkpoints ------------------===//
#include "runtime/io/Checkpoint.h"
#include "runtime/io/JsonNesting.h"

#include "runtime/io/AtomicFile.h"
#include "runtime/io/TensorIndex.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SwapByteOrder.h"

#include <cmath>
#include <cstring>

namespace strata {

static_assert(!llvm::sys::IsBigEndianHost,
              "checkpoints hold little-endian data; add byte swapping");

namespace endian = llvm::support::endian;

static constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'C', 'K'};
static constexpr uint64_t kPrefixBytes = 24;

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static uint32_t crcOf(const void *data, uint64_t bytes) {
  return llvm::crc32(
      llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(data), bytes));
}

static std::string hex32(uint32_t v) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format_hex(v, 10);
  return s;
}

const HostTensor *Checkpoint::lookup(llvm::StringRef name) const {
  for (const NamedTensor &nt : tensors)
    if (nt.name == name)
      return &nt.tensor;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Save
//===----------------------------------------------------------------------===//

/// "nan", "inf" or "-inf" (std::to_string says "-nan" for some NaNs).
static std::string nonFiniteText(double v) {
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

llvm::Error saveCheckpoint(llvm::StringRef path, const Checkpoint &ckpt) {
  llvm::StringSet<> names;
  for (const NamedTensor &nt : ckpt.tensors) {
    if (!names.insert(nt.name).second)
      return fail(path +
                  ": error: cannot save the checkpoint: duplicate "
                  "tensor name '" +
                  nt.name + "'");
    // A diverged state never replaces a good checkpoint.
    if (int64_t i = nt.tensor.firstNonFinite(); i >= 0)
      return fail(path + ": error: refusing to save the checkpoint: tensor '" +
                  nt.name + "' holds a non-finite value (" +
                  nonFiniteText(nt.tensor.get(i)) + " at element " +
                  llvm::Twine(i) + "); the previous checkpoint is kept");
  }

  // Tensor offsets from the start of the data section, and the header.
  std::vector<uint64_t> offsets;
  uint64_t dataBytes = 0;
  llvm::json::Array entries;
  for (const NamedTensor &nt : ckpt.tensors) {
    const HostTensor &t = nt.tensor;
    offsets.push_back(alignTensorOffset(dataBytes));
    dataBytes = offsets.back() + uint64_t(t.bytes());
    llvm::json::Array shape;
    for (int64_t d : t.shape())
      shape.push_back(d);
    entries.push_back(llvm::json::Object{
        {"name", nt.name},
        {"dtype", dtypeName(t.dtype())},
        {"shape", std::move(shape)},
        {"offset", int64_t(offsets.back())},
        {"crc32", int64_t(crcOf(t.raw(), uint64_t(t.bytes())))}});
  }
  dataBytes = alignTensorOffset(dataBytes);
  llvm::json::Object header{{"meta", llvm::json::Object(ckpt.meta)},
                            {"data_bytes", int64_t(dataBytes)},
                            {"tensors", std::move(entries)}};
  std::string headerText;
  llvm::raw_string_ostream(headerText) << llvm::json::Value(std::move(header));
  uint64_t dataStart = alignTensorOffset(kPrefixBytes + headerText.size());

  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    char prefix[kPrefixBytes];
    std::memcpy(prefix, kMagic, 8);
    endian::write32le(prefix + 8, kCheckpointVersion);
    endian::write32le(prefix + 12, crcOf(headerText.data(), headerText.size()));
    endian::write64le(prefix + 16, headerText.size());
    os.write(prefix, kPrefixBytes);
    os << headerText;
    os.write_zeros(dataStart - kPrefixBytes - headerText.size());
    uint64_t pos = 0;
    for (size_t i = 0; i < ckpt.tensors.size(); ++i) {
      const HostTensor &t = ckpt.tensors[i].tensor;
      os.write_zeros(offsets[i] - pos);
      os.write(static_cast<const char *>(t.raw()), t.bytes());
      pos = offsets[i] + uint64_t(t.bytes());
    }
    os.write_zeros(dataBytes - pos);
    return llvm::Error::success();
  });
}

//===----------------------------------------------------------------------===//
// Load
//===----------------------------------------------------------------------===//

llvm::Expected<Checkpoint> loadCheckpoint(llvm::StringRef path) {
  auto bad = [&](const llvm::Twine &why) {
    return fail(path + ": error: " + why);
  };
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return fail(path + ": error: cannot open the checkpoint: " +
                file.getError().message());
  llvm::StringRef bytes = (*file)->getBuffer();
  auto *p = reinterpret_cast<const uint8_t *>(bytes.data());
  uint64_t size = bytes.size();

  if (size < sizeof(kMagic) || std::memcmp(p, kMagic, sizeof(kMagic)) != 0)
    return fail(path + ": error: not a strata checkpoint (no STRATACK header; "
                       "checkpoints are written by `strata train`)");
  if (size < kPrefixBytes)
    return bad("truncated: the file ends inside its " +
               llvm::Twine(kPrefixBytes) + "-byte prefix");
  uint32_t version = endian::read32le(p + 8);
  if (version > kCheckpointVersion)
    return bad("format version " + llvm::Twine(version) +
               " is newer than this build reads (up to " +
               llvm::Twine(kCheckpointVersion) + "); use a newer strata");
  if (version == 0)
    return bad("invalid format version 0");
  uint32_t headerCrc = endian::read32le(p + 12);
  uint64_t headerLen = endian::read64le(p + 16);
  if (headerLen > size - kPrefixBytes)
    return bad("truncated: the header needs " + llvm::Twine(headerLen) +
               " bytes but the file has " + llvm::Twine(size - kPrefixBytes) +
               " after the prefix");
  llvm::StringRef headerText(bytes.data() + kPrefixBytes, headerLen);
  if (crcOf(headerText.data(), headerLen) != headerCrc)
    return bad("the header is corrupt (CRC-32 mismatch)");

  if (auto deep = jsonNestingError(headerText))
    return bad("the header " + *deep);
  auto header = llvm::json::parse(headerText);
  if (!header)
    return bad("malformed JSON header: " + llvm::toString(header.takeError()));
  const llvm::json::Object *root = header->getAsObject();
  if (!root)
    return bad("malformed header: expected a JSON object");
  const llvm::json::Object *meta = root->getObject("meta");
  auto dataBytes = root->getInteger("data_bytes");
  const llvm::json::Array *entries = root->getArray("tensors");
  if (!meta || !dataBytes || *dataBytes < 0 || !entries)
    return bad("malformed header: needs object \"meta\", integer "
               "\"data_bytes\" and array \"tensors\"");

  uint64_t dataStart = alignTensorOffset(kPrefixBytes + headerLen);
  uint64_t present = size > dataStart ? size - dataStart : 0;
  if (present < uint64_t(*dataBytes))
    return bad("truncated: the header promises " + llvm::Twine(*dataBytes) +
               " data bytes but only " + llvm::Twine(present) + " are present");
  if (present > uint64_t(*dataBytes))
    return bad(llvm::Twine(present - *dataBytes) +
               " unexpected bytes after the tensor data");

  Checkpoint ckpt;
  ckpt.meta = *meta;
  llvm::StringSet<> names;
  const uint8_t *data = p + dataStart;
  for (const llvm::json::Value &v : *entries) {
    auto e =
        parseTensorEntry(v, uint64_t(*dataBytes), [](DType) { return true; });
    if (!e)
      return bad(llvm::toString(e.takeError()));
    if (!names.insert(e->name).second)
      return bad("duplicate tensor name '" + e->name + "'");
    auto stored = v.getAsObject()->getInteger("crc32");
    if (!stored || *stored < 0 || *stored > int64_t(UINT32_MAX))
      return bad("tensor '" + e->name + "': missing 32-bit integer \"crc32\"");
    HostTensor t(e->type);
    uint32_t crc = crcOf(data + e->offset, uint64_t(t.bytes()));
    if (crc != uint32_t(*stored))
      return bad("tensor '" + e->name + "' is corrupt (CRC-32 " + hex32(crc) +
                 ", expected " + hex32(uint32_t(*stored)) + ")");
    if (t.bytes())
      std::memcpy(t.raw(), data + e->offset, t.bytes());
    if (int64_t i = t.firstNonFinite(); i >= 0)
      return bad("tensor '" + e->name + "' holds a non-finite value (" +
                 nonFiniteText(t.get(i)) + " at element " + llvm::Twine(i) +
                 "): the run that wrote it diverged; resume from an "
                 "earlier checkpoint");
    ckpt.tensors.push_back({e->name, std::move(t)});
  }
  return ckpt;
}

} // namespace strata
