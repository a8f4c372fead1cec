//===- IndexedDataset.cpp - Megatron's MMIDIDX .bin/.idx token files ------===//
#include "runtime/data/megatron/IndexedDataset.h"

#include "runtime/io/AtomicFile.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Endian.h"

#include <cstring>
#include <limits>

namespace strata::megatron {

namespace endian = llvm::support::endian;

static constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
static constexpr uint64_t kVersion = 1;
static constexpr size_t kHeaderBytes = 34; // 9 + 8 + 1 + 8 + 8

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

struct DTypeInfo {
  DType dtype;
  const char *name;
  unsigned size;
  int64_t min, max; // the token ids it holds (floats: none)
};

/// Megatron's DType enum, in code order.
static constexpr DTypeInfo kDTypes[] = {
    {DType::UInt8, "uint8", 1, 0, 255},
    {DType::Int8, "int8", 1, -128, 127},
    {DType::Int16, "int16", 2, -32768, 32767},
    {DType::Int32, "int32", 4, INT32_MIN, INT32_MAX},
    {DType::Int64, "int64", 8, INT32_MIN, INT32_MAX},
    {DType::Float64, "float64", 8, 0, -1},
    {DType::Float32, "float32", 4, 0, -1},
    {DType::UInt16, "uint16", 2, 0, 65535},
};
static_assert(std::size(kDTypes) == 8, "one row per Megatron dtype code");

static const DTypeInfo &info(DType d) { return kDTypes[unsigned(d) - 1]; }

bool isValidDTypeCode(uint8_t code) { return code >= 1 && code <= 8; }
llvm::StringRef dtypeName(DType d) { return info(d).name; }
unsigned dtypeSize(DType d) { return info(d).size; }
DType optimalDType(int64_t vocabSize) {
  return vocabSize < 65500 ? DType::UInt16 : DType::Int32;
}

std::string binPath(llvm::StringRef prefix) { return (prefix + ".bin").str(); }
std::string idxPath(llvm::StringRef prefix) { return (prefix + ".idx").str(); }

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

llvm::Error
IndexedDatasetBuilder::addDocument(llvm::ArrayRef<int32_t> tokens,
                                   llvm::ArrayRef<int32_t> sequenceLengths) {
  const DTypeInfo &d = info(dtype_);
  int64_t total = 0;
  for (int32_t n : sequenceLengths)
    total += n;
  if (total != int64_t(tokens.size()))
    return fail("document of " + llvm::Twine(tokens.size()) +
                " tokens split into sequences of " + llvm::Twine(total));
  scratch_.resize(tokens.size() * d.size);
  char *p = scratch_.data();
  for (int32_t t : tokens) {
    if (t < d.min || t > d.max)
      return fail("token id " + llvm::Twine(t) + " does not fit dtype " +
                  d.name + " (use a dtype that holds the vocabulary)");
    switch (d.size) {
    case 1:
      *p = char(t);
      break;
    case 2:
      endian::write16le(p, uint16_t(t));
      break;
    case 4:
      endian::write32le(p, uint32_t(t));
      break;
    default:
      endian::write64le(p, uint64_t(int64_t(t)));
      break;
    }
    p += d.size;
  }
  bin_.write(scratch_.data(), scratch_.size());
  lengths_.insert(lengths_.end(), sequenceLengths.begin(),
                  sequenceLengths.end());
  docIndex_.push_back(int64_t(lengths_.size()));
  tokens_ += total;
  return llvm::Error::success();
}

void IndexedDatasetBuilder::writeIndex(llvm::raw_ostream &os) const {
  char buf[8];
  auto u64 = [&](uint64_t v) {
    endian::write64le(buf, v);
    os.write(buf, 8);
  };
  os.write(kMagic, sizeof kMagic);
  u64(kVersion);
  os << char(uint8_t(dtype_));
  u64(lengths_.size());
  u64(docIndex_.size());
  for (int32_t n : lengths_) {
    endian::write32le(buf, uint32_t(n));
    os.write(buf, 4);
  }
  int64_t pointer = 0;
  for (int32_t n : lengths_) {
    u64(uint64_t(pointer));
    pointer += int64_t(n) * dtypeSize(dtype_);
  }
  for (int64_t k : docIndex_)
    u64(uint64_t(k));
}

llvm::Error writeIndexedDataset(
    llvm::StringRef prefix, DType dtype,
    llvm::function_ref<llvm::Error(IndexedDatasetBuilder &)> fill) {
  std::unique_ptr<IndexedDatasetBuilder> builder;
  if (auto e = writeFileAtomically(binPath(prefix), [&](llvm::raw_ostream &os) {
        builder = std::make_unique<IndexedDatasetBuilder>(os, dtype);
        return fill(*builder);
      }))
    return e;
  llvm::Error e =
      writeFileAtomically(idxPath(prefix), [&](llvm::raw_ostream &os) {
        builder->writeIndex(os);
        return llvm::Error::success();
      });
  if (e) // no .bin without its .idx
    llvm::sys::fs::remove(binPath(prefix));
  return e;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// Maps `path` read-only; a zero-length file maps to nothing.
static llvm::Error
mapFile(llvm::StringRef path, const char *what,
        std::unique_ptr<llvm::sys::fs::mapped_file_region> &map,
        uint64_t &size) {
  auto fd = llvm::sys::fs::openNativeFileForRead(path);
  if (!fd)
    return fail(path + ": cannot open the " + what + " file (" +
                llvm::toString(fd.takeError()) +
                "; --data-path takes the prefix, without .bin/.idx)");
  llvm::sys::fs::file_status st;
  std::error_code ec = llvm::sys::fs::status(*fd, st);
  if (!ec && st.getSize() > 0) {
    map = std::make_unique<llvm::sys::fs::mapped_file_region>(
        *fd, llvm::sys::fs::mapped_file_region::readonly, st.getSize(), 0, ec);
    if (ec)
      map.reset();
  }
  llvm::sys::fs::closeFile(*fd);
  if (ec)
    return fail(path + ": cannot map the " + what + " file (" + ec.message() +
                ")");
  size = st.getSize();
  return llvm::Error::success();
}

llvm::Expected<std::shared_ptr<const IndexedDataset>>
IndexedDataset::open(llvm::StringRef prefix) {
  std::shared_ptr<IndexedDataset> ds(new IndexedDataset());
  ds->prefix_ = prefix.str();
  std::string idx = idxPath(prefix), bin = binPath(prefix);
  uint64_t idxSize = 0;
  if (auto e = mapFile(idx, "index", ds->idxMap_, idxSize))
    return e;
  if (auto e = mapFile(bin, "data", ds->binMap_, ds->binSize_))
    return e;
  auto bad = [&](const char *field, const llvm::Twine &what) {
    return fail(idx + ": " + field + ": " + what);
  };
  if (idxSize < kHeaderBytes)
    return bad(
        "header",
        "truncated: " + llvm::Twine(idxSize) +
            " bytes, the "
            "header alone takes 34 (an interrupted write? preprocess again)");
  auto *h = reinterpret_cast<const uint8_t *>(ds->idxMap_->const_data());
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0)
    return bad("magic", "not \"MMIDIDX\\x00\\x00\" (not a Megatron mmap "
                        "indexed dataset; write one with strata preprocess or "
                        "Megatron's tools/preprocess_data.py)");
  if (uint64_t v = endian::read64le(h + 9); v != kVersion)
    return bad("version", "is " + llvm::Twine(v) + ", only version 1 exists");
  uint8_t code = h[17];
  if (!isValidDTypeCode(code))
    return bad("dtype code",
               "is " + llvm::Twine(unsigned(code)) +
                   " (Megatron's codes are 1-8: uint8 int8 int16 int32 int64 "
                   "float64 float32 uint16)");
  ds->dtype_ = DType(code);
  ds->itemSize_ = dtypeSize(ds->dtype_);
  if (info(ds->dtype_).max < 0)
    return bad("dtype code", llvm::Twine(unsigned(code)) + " is " +
                                 dtypeName(ds->dtype_) +
                                 ", which does not hold token ids");
  uint64_t S = endian::read64le(h + 18), D = endian::read64le(h + 26);
  // The arrays must fit the file before their sizes are multiplied out.
  uint64_t room = idxSize - kHeaderBytes;
  if (S > room / 12 || D > (room - 12 * S) / 8)
    return bad("sequence count", llvm::Twine(S) + " sequences and " +
                                     llvm::Twine(D) +
                                     " document-index entries do not fit the " +
                                     llvm::Twine(idxSize) +
                                     "-byte file (truncated? preprocess "
                                     "again)");
  uint64_t expect = kHeaderBytes + 12 * S + 8 * D;
  if (idxSize != expect && idxSize != expect + S)
    return bad("size", llvm::Twine(idxSize) + " bytes where the header's " +
                           llvm::Twine(S) + " sequences and " + llvm::Twine(D) +
                           " document-index entries take " +
                           llvm::Twine(expect));
  ds->numSequences_ = int64_t(S);
  ds->numDocIndex_ = int64_t(D);
  ds->lengths_ = h + kHeaderBytes;
  ds->pointers_ = ds->lengths_ + 4 * S;
  ds->docs_ = ds->pointers_ + 8 * S;
  ds->bin_ = ds->binMap_
                 ? reinterpret_cast<const uint8_t *>(ds->binMap_->const_data())
                 : nullptr;

  if (D < 1 || ds->documentIndex(0) != 0 ||
      ds->documentIndex(int64_t(D) - 1) != int64_t(S))
    return bad("document index",
               "must run from 0 to the sequence count " + llvm::Twine(S) +
                   " (Megatron asserts document_indices[-1] == "
                   "sequence count)");
  for (int64_t k = 1; k < int64_t(D); ++k)
    if (ds->documentIndex(k) < ds->documentIndex(k - 1))
      return bad("document index", "entry " + llvm::Twine(k) + " (" +
                                       llvm::Twine(ds->documentIndex(k)) +
                                       ") is below entry " +
                                       llvm::Twine(k - 1));
  for (int64_t i = 0; i < int64_t(S); ++i) {
    int64_t n = ds->sequenceLength(i), p = ds->sequencePointer(i);
    if (n < 0)
      return bad("sequence lengths", "sequence " + llvm::Twine(i) +
                                         " has negative length " +
                                         llvm::Twine(n));
    if (p < 0 || uint64_t(p) > ds->binSize_ ||
        uint64_t(n) * ds->itemSize_ > ds->binSize_ - uint64_t(p))
      return bad("sequence pointers",
                 "sequence " + llvm::Twine(i) + " spans bytes [" +
                     llvm::Twine(p) + ", " +
                     llvm::Twine(p + n * int64_t(ds->itemSize_)) + ") but " +
                     bin + " has " + llvm::Twine(ds->binSize_) +
                     " (the .bin is truncated or belongs to another index)");
  }
  return std::shared_ptr<const IndexedDataset>(std::move(ds));
}

int64_t IndexedDataset::sequenceLength(int64_t i) const {
  return int32_t(endian::read32le(lengths_ + 4 * i));
}
int64_t IndexedDataset::sequencePointer(int64_t i) const {
  return int64_t(endian::read64le(pointers_ + 8 * i));
}
int64_t IndexedDataset::documentIndex(int64_t k) const {
  return int64_t(endian::read64le(docs_ + 8 * k));
}

int64_t IndexedDataset::countTokens(int64_t begin, int64_t end) const {
  int64_t n = 0;
  for (int64_t i = begin; i < end; ++i)
    n += sequenceLength(i);
  return n;
}

void IndexedDataset::read(int64_t seq, int64_t offset, int64_t n,
                          int32_t *out) const {
  const uint8_t *p = bin_ + sequencePointer(seq) + offset * itemSize_;
  switch (dtype_) {
  case DType::UInt8:
    for (int64_t j = 0; j < n; ++j)
      out[j] = p[j];
    break;
  case DType::Int8:
    for (int64_t j = 0; j < n; ++j)
      out[j] = int8_t(p[j]);
    break;
  case DType::Int16:
    for (int64_t j = 0; j < n; ++j)
      out[j] = int16_t(endian::read16le(p + 2 * j));
    break;
  case DType::UInt16:
    for (int64_t j = 0; j < n; ++j)
      out[j] = endian::read16le(p + 2 * j);
    break;
  case DType::Int32:
    for (int64_t j = 0; j < n; ++j)
      out[j] = int32_t(endian::read32le(p + 4 * j));
    break;
  case DType::Int64:
    for (int64_t j = 0; j < n; ++j)
      out[j] = int32_t(int64_t(endian::read64le(p + 8 * j)));
    break;
  case DType::Float64:
  case DType::Float32:
    break; // rejected by open()
  }
}

} // namespace strata::megatron
