//===- TensorArchiveTest.cpp - Archive round trips, incl. the Python side -===//
#include "runtime/io/TensorArchive.h"

#include "test/io/TestFiles.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace strata;
using strata::test::message;
using strata::test::readBytes;
using strata::test::TempDir;
using strata::test::writeBytes;

namespace {

HostTensor iota(DType dtype, Shape shape, double scale) {
  HostTensor t(TensorType{dtype, std::move(shape)});
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, (i - 3) * scale);
  return t;
}

bool bitwiseEqual(const HostTensor &a, const HostTensor &b) {
  return a.type() == b.type() &&
         std::memcmp(a.raw(), b.raw(), size_t(a.bytes())) == 0;
}

/// Every dtype and rank the format allows, scalars and empty tensors too.
TensorArchive sampleArchive() {
  TensorArchive a;
  HostTensor odd = iota(DType::F32, {2, 3}, 0.1);
  odd.data<float>()[0] = -0.0f;
  odd.data<float>()[1] = std::nanf("");
  odd.data<float>()[2] = 1e-40f; // subnormal
  std::pair<const char *, HostTensor> items[] = {
      {"layers.0.w", std::move(odd)},
      {"x64", iota(DType::F64, {5}, 1.0 / 3)},
      {"tokens", iota(DType::I32, {3, 1, 2}, 7)},
      {"loss", HostTensor::scalar(2.5, DType::F32)},
      {"loss64", HostTensor::scalar(-1.0 / 7, DType::F64)},
      {"step", HostTensor::scalar(42, DType::I32)},
      {"empty", HostTensor(TensorType{DType::F32, {0, 4}})},
      {"tail", iota(DType::F32, {1}, 1)},
  };
  for (auto &[name, t] : items)
    EXPECT_FALSE(a.add(name, std::move(t)));
  return a;
}

void expectSame(const TensorArchive &got, const TensorArchive &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got.tensors()[i].name, want.tensors()[i].name);
    EXPECT_TRUE(bitwiseEqual(got.tensors()[i].tensor, want.tensors()[i].tensor))
        << want.tensors()[i].name;
  }
}

TEST(TensorArchive, RoundTripIsBitwise) {
  TempDir tmp;
  TensorArchive a = sampleArchive();
  std::string dir = tmp.path("archive");
  ASSERT_FALSE(a.write(dir));
  auto b = TensorArchive::read(dir);
  ASSERT_TRUE(bool(b)) << message(b);
  expectSame(*b, a);
  EXPECT_EQ(b->path(), dir);
  auto loss = b->get("loss");
  ASSERT_TRUE(bool(loss));
  EXPECT_TRUE(loss->shape().empty());
  EXPECT_EQ(loss->get(0), 2.5);
}

TEST(TensorArchive, LayoutIsAlignedAndPacked) {
  TempDir tmp;
  ASSERT_FALSE(sampleArchive().write(tmp.dir()));
  auto index = llvm::json::parse(readBytes(tmp.path("index.json")));
  ASSERT_TRUE(bool(index));
  const llvm::json::Array *entries = index->getAsObject()->getArray("tensors");
  ASSERT_TRUE(entries);
  std::vector<int64_t> offsets;
  for (const llvm::json::Value &e : *entries) {
    auto offset = e.getAsObject()->getInteger("offset");
    ASSERT_TRUE(offset.hasValue());
    offsets.push_back(*offset);
  }
  // 24 B, 40 B, 24 B, 4, 8, 4, 0 and 4 bytes, each at the next multiple of 64.
  EXPECT_EQ(offsets,
            (std::vector<int64_t>{0, 64, 128, 192, 256, 320, 384, 384}));
  EXPECT_EQ(readBytes(tmp.path("data.bin")).size(), 388u);
}

TEST(TensorArchive, WriteRejectsOtherDTypes) {
  TensorArchive a;
  ASSERT_FALSE(a.add("ids", HostTensor(TensorType{DType::I64, {2}})));
  TempDir tmp;
  EXPECT_EQ(message(a.write(tmp.dir())),
            "cannot write tensor 'ids' of dtype i64 to a tensor archive (f32, "
            "f64 and i32 only)");
}

TEST(TensorArchive, NamesAreUnique) {
  TensorArchive a;
  EXPECT_FALSE(a.add("w", HostTensor::scalar(1)));
  EXPECT_EQ(message(a.add("w", HostTensor::scalar(2))),
            "duplicate tensor name 'w'");
  EXPECT_EQ(a.lookup("w")->get(0), 1.0);
  EXPECT_EQ(a.lookup("v"), nullptr);
  EXPECT_EQ(message(a.get("v")), "tensor archive '<memory>' has no tensor 'v'");
}

TEST(TensorArchive, ReadRejectsBadArchives) {
  TempDir tmp;
  ASSERT_FALSE(sampleArchive().write(tmp.dir()));
  std::string index = tmp.path("index.json"), data = tmp.path("data.bin");
  std::string goodIndex = readBytes(index), goodData = readBytes(data);
  auto readError = [&] { return message(TensorArchive::read(tmp.dir())); };

  writeBytes(data, goodData.substr(0, 300));
  EXPECT_EQ(readError(), index + ": tensor 'step': bytes [320, 324) lie "
                                 "past the end of the 300 data bytes "
                                 "(truncated file?)");
  writeBytes(data, goodData);

  auto withIndex = [&](llvm::StringRef text) {
    writeBytes(index, text);
    return readError();
  };
  EXPECT_NE(withIndex("{\"tensors\": [").find(index + ": invalid JSON"),
            std::string::npos);
  EXPECT_EQ(withIndex("{\"tensor\": []}"),
            index + ": expected an object with an array \"tensors\"");
  EXPECT_EQ(withIndex(R"({"tensors": [{"name": "a", "dtype": "i64",
                        "shape": [], "offset": 0}]})"),
            index + ": tensor 'a': unsupported dtype \"i64\"");
  EXPECT_EQ(withIndex(R"({"tensors": [{"name": "a", "dtype": "f32",
                        "shape": [-1], "offset": 0}]})"),
            index + ": tensor 'a': \"shape\" must hold non-negative integers");
  EXPECT_EQ(withIndex(R"({"tensors": [{"name": "a", "dtype": "f32",
                        "shape": [4611686018427387904, 4], "offset": 0}]})"),
            index + ": tensor 'a': its shape needs more bytes than the 388 "
                    "data bytes (truncated file?)");
  EXPECT_EQ(withIndex(R"({"tensors": [{"name": "a", "dtype": "f32",
                        "shape": [], "offset": 0},
                       {"name": "a", "dtype": "f32", "shape": [],
                        "offset": 4}]})"),
            index + ": duplicate tensor name 'a'");
  EXPECT_EQ(withIndex(R"({"tensors": [{"dtype": "f32"}]})"),
            index + ": tensor entry: missing string \"name\"");

  llvm::sys::fs::remove(index);
  EXPECT_EQ(readError(),
            "cannot read '" + index + "': No such file or directory");
}

/// Whether STRATA_PYTHON (/usr/bin/python3) can import numpy.
bool havePythonWithNumpy() {
  if (!llvm::sys::fs::can_execute(STRATA_PYTHON))
    return false;
  llvm::StringRef args[] = {STRATA_PYTHON, "-c", "import numpy"};
  llvm::Optional<llvm::StringRef> quiet[] = {
      llvm::StringRef(""), llvm::StringRef(""), llvm::StringRef("")};
  return llvm::sys::ExecuteAndWait(STRATA_PYTHON, args, llvm::None, quiet) == 0;
}

// Byte compatibility with test/reference/tensor_archive.py: Python reads what
// C++ writes and rewrites it identically; C++ reads what Python writes.
TEST(TensorArchive, PythonReaderAndWriterAgree) {
  if (!havePythonWithNumpy())
    GTEST_SKIP() << STRATA_PYTHON << " with numpy is not available";
  TempDir tmp;
  TensorArchive original = sampleArchive();
  std::string fromCpp = tmp.path("cpp"), copied = tmp.path("copy"),
              fromPy = tmp.path("py");
  ASSERT_FALSE(original.write(fromCpp));
  std::string log = tmp.path("python.log");
  llvm::StringRef args[] = {STRATA_PYTHON,
                            STRATA_ARCHIVE_SCRIPT,
                            STRATA_REFERENCE_DIR,
                            fromCpp,
                            copied,
                            fromPy};
  llvm::Optional<llvm::StringRef> redirects[] = {
      llvm::None, llvm::StringRef(log), llvm::StringRef(log)};
  int rc = llvm::sys::ExecuteAndWait(STRATA_PYTHON, args, llvm::None, redirects,
                                     /*SecondsToWait=*/120);
  ASSERT_EQ(rc, 0) << readBytes(log);

  EXPECT_EQ(readBytes(copied + "/index.json"),
            readBytes(fromCpp + "/index.json"));
  EXPECT_EQ(readBytes(copied + "/data.bin"), readBytes(fromCpp + "/data.bin"));
  auto back = TensorArchive::read(copied);
  ASSERT_TRUE(bool(back)) << message(back);
  expectSame(*back, original);

  // The script's own tensors (see archive_roundtrip.py).
  auto py = TensorArchive::read(fromPy);
  ASSERT_TRUE(bool(py)) << message(py);
  TensorArchive want;
  HostTensor w(TensorType{DType::F32, {2, 3}});
  for (int i = 0; i < 6; ++i)
    w.data<float>()[i] = float(i) / 4 - 0.5f;
  HostTensor third = HostTensor::scalar(1.0 / 3, DType::F64);
  HostTensor ids(TensorType{DType::I32, {4}});
  for (int i = 0; i < 4; ++i)
    ids.data<int32_t>()[i] = i * 1000 - 2;
  ASSERT_FALSE(want.add("w", std::move(w)));
  ASSERT_FALSE(want.add("third", std::move(third)));
  ASSERT_FALSE(want.add("ids", std::move(ids)));
  ASSERT_FALSE(want.add("none", HostTensor(TensorType{DType::F64, {3, 0}})));
  expectSame(*py, want);
}

} // namespace
