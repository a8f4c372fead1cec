//===- IndexedDatasetTest.cpp - MMIDIDX files against a Python reader -----===//
//
// Files strata writes are read back by the independent Python reader of
// megatron_reference.py (written from Megatron's documented format), files
// that reader's writer makes are read by strata, every damaged field is
// rejected naming the file and field, and a .bin far larger than what is
// read stays mapped, not read.
//
//===----------------------------------------------------------------------===//
#include "test/data/megatron/MegatronTestUtil.h"

#include "llvm/Support/Endian.h"

#include <fstream>
#include <unistd.h>

namespace strata::megatron {
namespace {

using namespace test;

/// Every sequence of `ds`, as int64.
std::vector<std::vector<int64_t>> sequences(const IndexedDataset &ds) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t i = 0; i < ds.numSequences(); ++i) {
    std::vector<int32_t> t(ds.sequenceLength(i));
    ds.read(i, 0, int64_t(t.size()), t.data());
    out.emplace_back(t.begin(), t.end());
  }
  return out;
}

TEST(IndexedDataset, StrataWritesWhatThePythonReaderReads) {
  TempDir dir;
  for (auto [dtype, vocab] : {std::pair{DType::UInt16, 50257},
                              {DType::Int32, 128256},
                              {DType::UInt8, 256}}) {
    Corpus c = randomCorpus(unsigned(dtype), 60, 40, vocab);
    std::string prefix = dir.path("w" + std::to_string(int(dtype)));
    writeCorpus(prefix, dtype, c);
    llvm::json::Value ref = runReference({"read", prefix});
    const llvm::json::Object &o = *ref.getAsObject();
    EXPECT_EQ(*o.getInteger("dtype_code"), int(dtype));
    std::vector<int64_t> docIndex{0}, lengths;
    std::vector<std::vector<int64_t>> seqs;
    for (const auto &doc : c) {
      for (const auto &s : doc) {
        lengths.push_back(int64_t(s.size()));
        seqs.emplace_back(s.begin(), s.end());
      }
      docIndex.push_back(int64_t(lengths.size()));
    }
    EXPECT_EQ(ints(o.get("lengths")), lengths);
    EXPECT_EQ(ints(o.get("document_index")), docIndex);
    std::vector<std::vector<int64_t>> got;
    for (const llvm::json::Value &s : *o.getArray("sequences"))
      got.push_back(ints(&s));
    EXPECT_EQ(got, seqs) << dtypeName(dtype).str();
  }
}

TEST(IndexedDataset, StrataReadsWhatThePythonWriterWrites) {
  TempDir dir;
  for (int code : {1, 2, 3, 4, 5, 8}) {
    int32_t vocab = code == 2 ? 128 : code == 3 ? 32768 : 256;
    Corpus c = randomCorpus(unsigned(code) + 10, 50, 30, vocab);
    llvm::json::Array docs;
    for (const auto &doc : c) {
      llvm::json::Array seqs;
      for (const auto &s : doc)
        seqs.push_back(llvm::json::Array(s));
      docs.push_back(std::move(seqs));
    }
    std::string spec = dir.write(
        "spec.json", llvm::formatv("{0}", llvm::json::Value(llvm::json::Object{
                                              {"dtype_code", code},
                                              {"documents", std::move(docs)}}))
                         .str());
    std::string prefix = dir.path("p" + std::to_string(code));
    runReference({"write", prefix, spec});
    auto ds = IndexedDataset::open(prefix);
    ASSERT_TRUE(bool(ds)) << llvm::toString(ds.takeError());
    EXPECT_EQ(int((*ds)->dtype()), code);
    EXPECT_EQ((*ds)->numDocuments(), int64_t(c.size()));
    std::vector<std::vector<int64_t>> want;
    for (const auto &doc : c)
      for (const auto &s : doc)
        want.emplace_back(s.begin(), s.end());
    EXPECT_EQ(sequences(**ds), want) << "dtype code " << code;
    int64_t k = 0;
    for (size_t d = 0; d < c.size(); ++d) {
      EXPECT_EQ((*ds)->documentIndex(int64_t(d)), k);
      k += int64_t(c[d].size());
    }
  }
}

/// A valid uint16 dataset of two 3-token sequences; tests then damage it.
struct Damage {
  TempDir dir;
  std::string prefix = dir.path("d");
  std::string idx = prefix + ".idx", bin = prefix + ".bin";
  Damage() { writeCorpus(prefix, DType::UInt16, {{{1, 2, 3}}, {{4, 5, 6}}}); }
  void patch(size_t offset, llvm::StringRef bytes) {
    std::string s = slurp(idx);
    s.replace(offset, bytes.size(), bytes.str());
    dir.write("d.idx", s);
  }
  std::string error() {
    auto ds = IndexedDataset::open(prefix);
    return ds ? std::string("opened") : llvm::toString(ds.takeError());
  }
};

TEST(IndexedDataset, DamagedFilesNameFileAndField) {
  {
    Damage d;
    d.dir.write("d.idx", slurp(d.idx).substr(0, 50));
    std::string e = d.error();
    EXPECT_NE(e.find(d.idx), std::string::npos) << e;
    EXPECT_NE(e.find("sequence count"), std::string::npos) << e;
  }
  {
    Damage d;
    d.dir.write("d.idx", slurp(d.idx).substr(0, 20));
    EXPECT_NE(d.error().find("header: truncated"), std::string::npos)
        << d.error();
  }
  {
    Damage d;
    d.patch(0, "MMIDIDY");
    EXPECT_NE(d.error().find(d.idx + ": magic"), std::string::npos)
        << d.error();
  }
  {
    Damage d;
    d.patch(9, llvm::StringRef("\x02", 1));
    EXPECT_NE(d.error().find(d.idx + ": version: is 2"), std::string::npos)
        << d.error();
  }
  {
    Damage d;
    d.patch(17, llvm::StringRef("\x09", 1));
    EXPECT_NE(d.error().find(d.idx + ": dtype code: is 9"), std::string::npos)
        << d.error();
  }
  {
    Damage d;
    d.patch(17, llvm::StringRef("\x07", 1)); // float32
    EXPECT_NE(d.error().find("does not hold token ids"), std::string::npos)
        << d.error();
  }
  {
    Damage d; // .bin shorter than the last sequence's pointer + length
    d.dir.write("d.bin", slurp(d.bin).substr(0, 9));
    std::string e = d.error();
    EXPECT_NE(
        e.find(d.idx + ": sequence pointers: sequence 1 spans bytes [6, 12)"),
        std::string::npos)
        << e;
    EXPECT_NE(e.find(d.bin + " has 9"), std::string::npos) << e;
  }
  {
    Damage d; // document index not ending at the sequence count
    char buf[8];
    llvm::support::endian::write64le(buf, 5);
    d.patch(34 + 2 * 12 + 2 * 8, llvm::StringRef(buf, 8));
    EXPECT_NE(d.error().find(d.idx + ": document index"), std::string::npos)
        << d.error();
  }
  {
    Damage d;
    llvm::sys::fs::remove(d.bin);
    EXPECT_NE(d.error().find(d.bin + ": cannot open the data file"),
              std::string::npos)
        << d.error();
  }
}

/// Resident memory of this process, in bytes.
int64_t residentBytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

TEST(IndexedDataset, LargeBinIsMappedNotRead) {
  // A 4 GiB sparse .bin whose second sequence sits at its end: opening the
  // dataset and reading that sequence touches a few pages, not the file.
  TempDir dir;
  std::string prefix = dir.path("big");
  const int64_t binBytes = int64_t(4) << 30;
  {
    std::ofstream bin(prefix + ".bin", std::ios::binary);
    bin.seekp(binBytes - 4);
    const char tail[4] = {7, 0, 9, 0}; // uint16 7, 9
    bin.write(tail, 4);
  }
  {
    std::string idx("MMIDIDX\0\0", 9);
    char buf[8];
    auto u64 = [&](uint64_t v) {
      llvm::support::endian::write64le(buf, v);
      idx.append(buf, 8);
    };
    u64(1);
    idx += char(8);
    u64(2);
    u64(3);
    for (uint32_t n : {2u, 2u}) {
      llvm::support::endian::write32le(buf, n);
      idx.append(buf, 4);
    }
    u64(0);
    u64(uint64_t(binBytes - 4));
    u64(0);
    u64(1);
    u64(2);
    dir.write("big.idx", idx);
  }
  int64_t before = residentBytes();
  auto ds = IndexedDataset::open(prefix);
  ASSERT_TRUE(bool(ds)) << llvm::toString(ds.takeError());
  EXPECT_TRUE((*ds)->binIsMapped());
  EXPECT_EQ((*ds)->binSize(), uint64_t(binBytes));
  int32_t t[2];
  (*ds)->read(1, 0, 2, t);
  EXPECT_EQ(t[0], 7);
  EXPECT_EQ(t[1], 9);
  // Two touched pages and the index; 64 MiB leaves room for the allocator.
  EXPECT_LT(residentBytes() - before, int64_t(64) << 20);
}

} // namespace
} // namespace strata::megatron
