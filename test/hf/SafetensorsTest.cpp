//===- SafetensorsTest.cpp - safetensors reader/writer and validation -----===//
//
// Round trips through strata's writer, exact f16/bf16 conversion, and
// headers that lie (each must be an error naming the file and the tensor or
// field, never an out-of-bounds read). Interop with the reference
// `safetensors` package is safetensors_interop.py.
//
//===----------------------------------------------------------------------===//
#include "runtime/io/Safetensors.h"

#include "test/io/TestFiles.h"

#include "llvm/Support/Endian.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace strata {
namespace {

using test::TempDir;

HostTensor iota(llvm::ArrayRef<int64_t> shape, float base) {
  HostTensor t(TensorType{DType::F32, Shape(shape.begin(), shape.end())});
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = base + 0.25f * i;
  return t;
}

/// A file: 8-byte length, `header`, then `data`.
void writeRaw(const std::string &path, const std::string &header,
              const std::string &data) {
  std::ofstream f(path, std::ios::binary);
  char len[8];
  llvm::support::endian::write64le(len, header.size());
  f.write(len, 8);
  f << header << data;
}

std::string errorOf(const std::string &path) {
  auto f = SafetensorsFile::open(path);
  return f ? std::string("(opened)") : llvm::toString(f.takeError());
}

TEST(Safetensors, WriteThenReadIsExact) {
  TempDir d;
  std::vector<NamedTensor> ts;
  ts.push_back({"b.weight", iota({3, 5}, 1)});
  ts.push_back({"a.bias", iota({5}, -2)});
  ts.push_back({"empty", HostTensor(TensorType{DType::F32, {0, 4}})});
  std::string p = d.path("m.safetensors");
  ASSERT_FALSE(bool(writeSafetensors(p, ts, {{"format", "pt"}})));
  auto f = SafetensorsFile::open(p);
  ASSERT_TRUE(bool(f)) << llvm::toString(f.takeError());
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  ASSERT_EQ((*f)->entries().size(), 3u);
  for (const NamedTensor &nt : ts) {
    auto t = (*f)->readF32(nt.name);
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    EXPECT_EQ(t->type(), nt.tensor.type());
    EXPECT_EQ(0, std::memcmp(t->raw(), nt.tensor.raw(), nt.tensor.bytes()));
  }
  // The header is padded to 8 bytes, so the data is aligned.
  uint64_t n = 0;
  std::ifstream(p, std::ios::binary).read(reinterpret_cast<char *>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(Safetensors, HalfAndBfloat16ConvertExactly) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
  EXPECT_EQ(halfToFloat(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
  EXPECT_EQ(halfToFloat(0x7c00), INFINITY);
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(bfloat16ToFloat(0x4049), 3.140625f);
}

TEST(Safetensors, ReadsF16AndBF16Tensors) {
  TempDir d;
  std::string p = d.path("h.safetensors");
  std::string data("\x00\x3c\x00\xc0\x80\x3f\x49\x40",
                   8); // f16 1, -2; bf16 1, 3.140625
  writeRaw(p,
           R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
           R"("b":{"dtype":"BF16","shape":[1,2],"data_offsets":[4,8]}})",
           data);
  auto f = SafetensorsFile::open(p);
  ASSERT_TRUE(bool(f)) << llvm::toString(f.takeError());
  auto h = (*f)->readF32("h");
  auto b = (*f)->readF32("b");
  ASSERT_TRUE(h && b);
  EXPECT_EQ(h->data<float>()[0], 1.0f);
  EXPECT_EQ(h->data<float>()[1], -2.0f);
  EXPECT_EQ(b->type().shape, (Shape{1, 2}));
  EXPECT_EQ(b->data<float>()[1], 3.140625f);
}

TEST(Safetensors, LyingHeadersAreErrorsNamingTheField) {
  TempDir d;
  std::string p = d.path("bad.safetensors");
  auto expectError = [&](const std::string &header, const std::string &data,
                         const std::string &needle) {
    writeRaw(p, header, data);
    std::string e = errorOf(p);
    EXPECT_NE(e.find(p), std::string::npos) << e;
    EXPECT_NE(e.find(needle), std::string::npos)
        << "want '" << needle << "' in: " << e;
  };
  std::string eight(8, '\0');
  // Byte count differs from dtype x shape.
  expectError(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
              eight,
              "tensor 'w': \"data_offsets\" [0, 8) span 8 bytes but F32");
  // Offsets past the end of the file.
  expectError(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
              eight, "past the 8 data bytes");
  // A gap (not contiguous).
  expectError(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
              eight, "begin at 4 but the previous tensor ends at 0");
  // Overlap.
  expectError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
              eight, "previous tensor ends at 8");
  // Trailing bytes nobody owns.
  expectError(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
              eight, "cover 4 of the 8 data bytes");
  expectError(R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", eight,
              "unknown dtype \"Q4\"");
  expectError(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
              eight, "non-negative integers");
  expectError(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})",
              eight, "0 <= begin <= end");
  expectError(R"({"__metadata__":{"format":1}})", "", "is not a string");
  expectError(R"([1,2])", "", "does not start with '{'");
  expectError(R"({"w":)", "", "malformed JSON header");
  // A length prefix larger than the file, and one over the limit.
  {
    std::ofstream f(p, std::ios::binary);
    char len[8];
    llvm::support::endian::write64le(len, 1000);
    f.write(len, 8);
    f << "{}";
  }
  EXPECT_NE(errorOf(p).find("runs past the end of the 10-byte file"),
            std::string::npos);
  {
    std::ofstream f(p, std::ios::binary);
    char len[8];
    llvm::support::endian::write64le(len, uint64_t(1) << 40);
    f.write(len, 8);
  }
  EXPECT_NE(errorOf(p).find("exceeds the 100 MB limit"), std::string::npos);
  std::ofstream(p, std::ios::binary) << "abc";
  EXPECT_NE(errorOf(p).find("shorter than the 8-byte header length"),
            std::string::npos);
  EXPECT_NE(errorOf(d.path("none")).find("cannot open"), std::string::npos);
}

TEST(Safetensors, UnsupportedDtypeIsReportedOnRead) {
  TempDir d;
  std::string p = d.path("i.safetensors");
  writeRaw(p, R"({"ids":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
           std::string(8, '\0'));
  auto f = SafetensorsFile::open(p);
  ASSERT_TRUE(bool(f));
  auto t = (*f)->readF32("ids");
  ASSERT_FALSE(bool(t));
  EXPECT_NE(llvm::toString(t.takeError())
                .find("tensor 'ids': dtype I64 is not supported"),
            std::string::npos);
}

TEST(Safetensors, ShardedModelRoundTripAndIndexChecks) {
  TempDir d;
  std::vector<NamedTensor> ts;
  for (int i = 0; i < 5; ++i)
    ts.push_back({"t" + std::to_string(i), iota({4, 4}, i)});
  // 64 bytes each, 100-byte shards: one tensor per shard.
  ASSERT_FALSE(bool(writeSafetensorsModel(d.dir(), ts, 100)));
  EXPECT_TRUE(
      llvm::sys::fs::exists(d.path("model-00005-of-00005.safetensors")));
  auto m = SafetensorsModel::open(d.dir());
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->names().size(), 5u);
  auto t3 = m->readF32("t3");
  ASSERT_TRUE(bool(t3));
  EXPECT_EQ(t3->data<float>()[1], 3.25f);
  EXPECT_EQ(m->fileOf("t3"), d.path("model-00004-of-00005.safetensors"));

  // A missing shard.
  llvm::sys::fs::remove(d.path("model-00002-of-00005.safetensors"));
  auto e = SafetensorsModel::open(d.dir());
  ASSERT_FALSE(bool(e));
  EXPECT_NE(llvm::toString(e.takeError())
                .find("model.safetensors.index.json: shard "
                      "'model-00002-of-00005.safetensors' "
                      "(holding 't1') is missing"),
            std::string::npos);
  // A shard with a wrong byte count (truncated by 4 bytes).
  ASSERT_FALSE(bool(writeSafetensorsModel(d.dir(), ts, 100)));
  std::string s3 = d.path("model-00003-of-00005.safetensors");
  uint64_t size;
  llvm::sys::fs::file_size(s3, size);
  ASSERT_EQ(::truncate(s3.c_str(), off_t(size - 4)), 0);
  e = SafetensorsModel::open(d.dir());
  ASSERT_FALSE(bool(e));
  std::string msg = llvm::toString(e.takeError());
  EXPECT_NE(msg.find(s3 + ": tensor 't2'"), std::string::npos) << msg;
}

TEST(Safetensors, MissingModelFileIsNamed) {
  TempDir d;
  auto m = SafetensorsModel::open(d.dir());
  ASSERT_FALSE(bool(m));
  EXPECT_NE(llvm::toString(m.takeError())
                .find(d.path("model.safetensors") + ": no such file"),
            std::string::npos);
}

} // namespace
} // namespace strata
