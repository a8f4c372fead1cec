//===- CheckpointTest.cpp - Checkpoint round trips and corruption ---------===//
#include "runtime/io/Checkpoint.h"

#include "test/io/TestFiles.h"

#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <limits>
#include <sys/resource.h>

using namespace strata;
using strata::test::message;
using strata::test::readBytes;
using strata::test::TempDir;
using strata::test::writeBytes;

namespace {

HostTensor filled(DType dtype, Shape shape, double start) {
  HostTensor t(TensorType{dtype, std::move(shape)});
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, start + i);
  return t;
}

Checkpoint sampleCheckpoint() {
  Checkpoint c;
  c.meta = llvm::json::Object{
      {"step", 1200},
      {"seed", "1337"},
      {"sampler",
       llvm::json::Object{{"seed", "1337"}, {"step", 1200}, {"microbatch", 0}}},
      {"tokenizer",
       llvm::json::Object{{"kind", "char"}, {"vocab", "\n ab\xC3\xA9"}}},
      {"model", "gpt {\n  layers: 2  # \"tiny\"\n}\n"},
      {"config", llvm::json::Object{{"lr", 6e-4},
                                    {"betas", {0.9, 0.95}},
                                    {"clip", nullptr},
                                    {"fused", true}}}};
  HostTensor w = filled(DType::F32, {3, 5}, -7);
  w.data<float>()[0] = -0.0f;
  w.data<float>()[1] = std::numeric_limits<float>::denorm_min();
  HostTensor bf16(TensorType{DType::BF16, {3}});
  const uint16_t bits[] = {0x3F80, 0xC000, 0x7FC1};
  std::memcpy(bf16.raw(), bits, sizeof(bits));
  c.tensors.push_back({"wte", std::move(w)});
  c.tensors.push_back({"adam.m.wte", filled(DType::F64, {2, 2}, 0.25)});
  c.tensors.push_back({"marker", filled(DType::I32, {4}, 0x12345678)});
  c.tensors.push_back({"bf16", std::move(bf16)});
  c.tensors.push_back({"ids", filled(DType::I64, {2}, -3)});
  c.tensors.push_back({"scale", HostTensor::scalar(0.5)});
  c.tensors.push_back({"empty", HostTensor(TensorType{DType::F32, {0}})});
  return c;
}

bool sameCheckpoint(const Checkpoint &a, const Checkpoint &b) {
  if (a.meta != b.meta || a.tensors.size() != b.tensors.size())
    return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const HostTensor &x = a.tensors[i].tensor, &y = b.tensors[i].tensor;
    if (a.tensors[i].name != b.tensors[i].name || x.type() != y.type() ||
        std::memcmp(x.raw(), y.raw(), size_t(x.bytes())) != 0)
      return false;
  }
  return true;
}

std::string loadError(const std::string &path) {
  return message(loadCheckpoint(path));
}

/// A file with a valid prefix (magic, `version`, header CRC and length)
/// around `header`, followed by `data`.
std::string craft(llvm::StringRef header, uint32_t version = 1,
                  llvm::StringRef data = "") {
  std::string file(24, '\0');
  std::memcpy(&file[0], "STRATACK", 8);
  llvm::support::endian::write32le(&file[8], version);
  llvm::support::endian::write32le(
      &file[12], llvm::crc32(llvm::arrayRefFromStringRef(header)));
  llvm::support::endian::write64le(&file[16], header.size());
  file += header;
  file.resize((file.size() + 63) / 64 * 64, '\0');
  return file + data.str();
}

TEST(Checkpoint, RoundTripIsBitwise) {
  TempDir tmp;
  std::string path = tmp.path("run.ckpt");
  Checkpoint c = sampleCheckpoint();
  ASSERT_FALSE(saveCheckpoint(path, c));
  auto back = loadCheckpoint(path);
  ASSERT_TRUE(bool(back)) << message(back);
  EXPECT_TRUE(sameCheckpoint(*back, c));
  EXPECT_EQ(back->lookup("marker")->get(3), double(0x12345678 + 3));
  EXPECT_EQ(back->lookup("nope"), nullptr);

  std::string bytes = readBytes(path);
  EXPECT_EQ(bytes.substr(0, 8), "STRATACK");
  EXPECT_EQ(bytes.size() % 64, 0u);
  EXPECT_EQ(tmp.list(), (std::vector<std::string>{"run.ckpt"}));
}

TEST(Checkpoint, TensorDataIsAligned) {
  TempDir tmp;
  std::string path = tmp.path("run.ckpt");
  ASSERT_FALSE(saveCheckpoint(path, sampleCheckpoint()));
  std::string bytes = readBytes(path);
  // The marker tensor's first element sits on a 64-byte boundary.
  const char marker[] = {0x78, 0x56, 0x34, 0x12};
  size_t at = bytes.find(std::string(marker, 4));
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(at % 64, 0u);
}

TEST(Checkpoint, SaveReplacesTheOldFile) {
  TempDir tmp;
  std::string path = tmp.path("run.ckpt");
  Checkpoint c = sampleCheckpoint();
  ASSERT_FALSE(saveCheckpoint(path, c));
  c.meta["step"] = 1300;
  c.tensors.pop_back();
  ASSERT_FALSE(saveCheckpoint(path, c));
  auto back = loadCheckpoint(path);
  ASSERT_TRUE(bool(back)) << message(back);
  EXPECT_TRUE(sameCheckpoint(*back, c));
  EXPECT_EQ(tmp.list(), (std::vector<std::string>{"run.ckpt"}));
}

TEST(Checkpoint, SaveRejectsDuplicateNames) {
  TempDir tmp;
  Checkpoint c;
  c.tensors.push_back({"w", HostTensor::scalar(1)});
  c.tensors.push_back({"w", HostTensor::scalar(2)});
  std::string path = tmp.path("run.ckpt");
  EXPECT_EQ(
      message(saveCheckpoint(path, c)),
      path + ": error: cannot save the checkpoint: duplicate tensor name 'w'");
  EXPECT_TRUE(tmp.list().empty());
}

TEST(Checkpoint, MissingFile) {
  TempDir tmp;
  std::string path = tmp.path("none.ckpt");
  EXPECT_EQ(
      loadError(path),
      path + ": error: cannot open the checkpoint: No such file or directory");
}

TEST(Checkpoint, NotACheckpoint) {
  TempDir tmp;
  std::string path = tmp.path("x.ckpt");
  for (llvm::StringRef bytes : {"", "STRATA", "{\"tensors\": []} and more"}) {
    writeBytes(path, bytes);
    EXPECT_EQ(loadError(path),
              path + ": error: not a strata checkpoint (no STRATACK header; "
                     "checkpoints are written by `strata train`)");
  }
}

TEST(Checkpoint, NewerVersion) {
  TempDir tmp;
  std::string path = tmp.path("x.ckpt");
  ASSERT_FALSE(saveCheckpoint(path, sampleCheckpoint()));
  std::string bytes = readBytes(path);
  bytes[8] = 2;
  writeBytes(path, bytes);
  EXPECT_EQ(loadError(path), path + ": error: " +
                                 "format version 2 is newer than this "
                                 "build reads (up to 1); use a newer strata");
  bytes[8] = 0;
  writeBytes(path, bytes);
  EXPECT_EQ(loadError(path), path + ": error: invalid format version 0");
}

TEST(Checkpoint, Truncated) {
  TempDir tmp;
  std::string path = tmp.path("x.ckpt");
  ASSERT_FALSE(saveCheckpoint(path, sampleCheckpoint()));
  std::string bytes = readBytes(path);
  uint64_t headerLen = llvm::support::endian::read64le(&bytes[16]);
  uint64_t dataStart = (24 + headerLen + 63) / 64 * 64;
  uint64_t dataBytes = bytes.size() - dataStart;

  writeBytes(path, bytes.substr(0, bytes.size() - 1));
  EXPECT_EQ(loadError(path),
            path + ": error: truncated: the header promises " +
                std::to_string(dataBytes) + " data bytes but only " +
                std::to_string(dataBytes - 1) + " are present");
  writeBytes(path, bytes.substr(0, 100));
  EXPECT_NE(loadError(path).find("truncated: the header needs"),
            std::string::npos);
  writeBytes(path, bytes.substr(0, 12));
  EXPECT_NE(loadError(path).find("truncated: the file ends inside its"),
            std::string::npos);
  writeBytes(path, bytes + "x");
  EXPECT_EQ(loadError(path),
            path + ": error: " + "1 unexpected bytes after the tensor data");
}

TEST(Checkpoint, CorruptHeader) {
  TempDir tmp;
  std::string path = tmp.path("x.ckpt");
  ASSERT_FALSE(saveCheckpoint(path, sampleCheckpoint()));
  std::string bytes = readBytes(path);
  bytes[40] ^= 1;
  writeBytes(path, bytes);
  EXPECT_EQ(loadError(path),
            path + ": error: " + "the header is corrupt (CRC-32 mismatch)");
}

TEST(Checkpoint, MalformedHeader) {
  TempDir tmp;
  std::string path = tmp.path("x.ckpt");
  writeBytes(path, craft("{\"meta\": {}, \"tensors\": ["));
  EXPECT_NE(loadError(path).find(": error: malformed JSON header: "),
            std::string::npos);
  writeBytes(path, craft("[]"));
  EXPECT_EQ(loadError(path),
            path + ": error: " + "malformed header: expected a JSON object");
  writeBytes(path, craft("{\"meta\": {}, \"tensors\": []}"));
  EXPECT_NE(loadError(path).find("needs object \"meta\", integer "
                                 "\"data_bytes\" and array \"tensors\""),
            std::string::npos);
  writeBytes(path, craft(R"({"meta": {}, "data_bytes": 64, "tensors": [
      {"name": "x", "dtype": "q8", "shape": [], "offset": 0, "crc32": 0}]})",
                         1, std::string(64, '\0')));
  EXPECT_EQ(loadError(path),
            path + ": error: tensor 'x': unsupported dtype \"q8\"");
  writeBytes(path, craft(R"({"meta": {}, "data_bytes": 64, "tensors": [
      {"name": "x", "dtype": "f32", "shape": [8], "offset": 0}]})",
                         1, std::string(64, '\0')));
  EXPECT_EQ(loadError(path), path + ": error: " +
                                 "tensor 'x': missing 32-bit integer "
                                 "\"crc32\"");
  writeBytes(path, craft(R"({"meta": {}, "data_bytes": 64, "tensors": [
      {"name": "x", "dtype": "f32", "shape": [8], "offset": 48, "crc32": 0}]})",
                         1, std::string(64, '\0')));
  EXPECT_NE(loadError(path).find("tensor 'x': bytes [48, 80) lie past the end"),
            std::string::npos);
  // A well-formed file built by hand loads.
  writeBytes(
      path, craft(R"({"meta": {"step": 3}, "data_bytes": 64,
      "tensors": [{"name": "z", "dtype": "f32", "shape": [16], "offset": 0,
                   "crc32": )" +
                      std::to_string(llvm::crc32(
                          llvm::arrayRefFromStringRef(std::string(64, '\0')))) +
                      "}]}",
                  1, std::string(64, '\0')));
  auto ok = loadCheckpoint(path);
  ASSERT_TRUE(bool(ok)) << message(ok);
  EXPECT_EQ(ok->tensors[0].tensor.numElements(), 16);
}

TEST(Checkpoint, CorruptTensorIsNamed) {
  TempDir tmp;
  std::string path = tmp.path("x.ckpt");
  ASSERT_FALSE(saveCheckpoint(path, sampleCheckpoint()));
  std::string bytes = readBytes(path);
  size_t at = bytes.find(std::string("\x79\x56\x34\x12", 4)); // marker[1]
  ASSERT_NE(at, std::string::npos);
  bytes[at] ^= 0x10;
  writeBytes(path, bytes);
  std::string err = loadError(path);
  EXPECT_NE(err.find(path + ": error: " +
                     "tensor 'marker' is corrupt "
                     "(CRC-32 0x"),
            std::string::npos)
      << err;
}

// Every truncation fails; every single-byte change fails or (in padding)
// loads exactly the saved checkpoint. Nothing crashes.
TEST(Checkpoint, NoDamageGoesUnnoticed) {
  TempDir tmp;
  std::string path = tmp.path("x.ckpt");
  Checkpoint c;
  c.meta["step"] = 1;
  c.tensors.push_back({"a", filled(DType::F32, {3}, 1)});
  c.tensors.push_back({"b", filled(DType::I32, {2, 2}, 5)});
  ASSERT_FALSE(saveCheckpoint(path, c));
  std::string good = readBytes(path);
  std::string damaged = tmp.path("damaged.ckpt");
  for (size_t n = 0; n < good.size(); ++n) {
    writeBytes(damaged, good.substr(0, n));
    EXPECT_FALSE(loadError(damaged).empty()) << "truncated to " << n;
  }
  int unnoticed = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bytes = good;
    bytes[i] ^= 0x5A;
    writeBytes(damaged, bytes);
    auto r = loadCheckpoint(damaged);
    if (r) {
      EXPECT_TRUE(sameCheckpoint(*r, c)) << "byte " << i;
      ++unnoticed;
    } else {
      llvm::consumeError(r.takeError());
    }
  }
  EXPECT_GT(unnoticed, 0); // padding bytes are not checked, and need not be
}

// A diverged run (NaN or inf in a weight) never replaces a good checkpoint.
TEST(Checkpoint, SaveRefusesNonFiniteTensorsAndKeepsTheOldFile) {
  TempDir tmp;
  std::string path = tmp.path("run.ckpt");
  ASSERT_FALSE(saveCheckpoint(path, sampleCheckpoint()));
  std::string good = readBytes(path);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    -std::numeric_limits<float>::infinity()}) {
    Checkpoint c = sampleCheckpoint();
    c.tensors[0].tensor.data<float>()[4] = bad;
    std::string err = message(saveCheckpoint(path, c));
    EXPECT_NE(err.find(path + ": error: refusing to save the checkpoint: "
                              "tensor 'wte' holds a non-finite value"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("at element 4"), std::string::npos) << err;
    EXPECT_EQ(readBytes(path), good);
    EXPECT_EQ(tmp.list(), (std::vector<std::string>{"run.ckpt"}));
  }
}

// A checkpoint with valid CRCs but a NaN weight (written by another tool or
// an older strata) is refused on load, naming the tensor.
TEST(Checkpoint, LoadRefusesNonFiniteTensors) {
  TempDir tmp;
  std::string path = tmp.path("nan.ckpt");
  std::string data(64, '\0');
  float values[2] = {1.5f, std::numeric_limits<float>::quiet_NaN()};
  std::memcpy(&data[0], values, sizeof values);
  uint32_t crc = llvm::crc32(
      llvm::arrayRefFromStringRef(llvm::StringRef(data.data(), sizeof values)));
  std::string header =
      R"({"meta":{},"data_bytes":64,"tensors":[{"name":"h.0.w","dtype":"f32",)"
      R"("shape":[2],"offset":0,"crc32":)" +
      std::to_string(crc) + "}]}";
  writeBytes(path, craft(header, 1, data));
  EXPECT_EQ(loadError(path),
            path + ": error: " +
                "tensor 'h.0.w' holds a non-finite value (nan at element "
                "1): the run that wrote it diverged; resume from an earlier "
                "checkpoint");
}

TEST(Checkpoint, FailedSaveKeepsTheOldCheckpoint) {
  TempDir tmp;
  std::string path = tmp.path("run.ckpt");
  Checkpoint old = sampleCheckpoint();
  ASSERT_FALSE(saveCheckpoint(path, old));
  std::string oldBytes = readBytes(path);
  Checkpoint big;
  big.tensors.push_back({"w", HostTensor(TensorType{DType::F32, {1 << 16}})});

  // The write fails part way: the file size limit stops it (EFBIG).
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 64 * 1024;
  auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  llvm::Error err = saveCheckpoint(path, big);
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, oldHandler);
  EXPECT_EQ(message(std::move(err)), "cannot write '" + path + ".tmp." +
                                         std::to_string(::getpid()) +
                                         "': File too large");
  EXPECT_EQ(readBytes(path), oldBytes);
  EXPECT_EQ(tmp.list(), (std::vector<std::string>{"run.ckpt"}));

  // The target is a directory.
  std::string dirPath = tmp.path("dir.ckpt");
  ASSERT_FALSE(llvm::sys::fs::create_directory(dirPath));
  EXPECT_EQ(message(saveCheckpoint(dirPath, old)),
            dirPath + ": error: cannot write: it is a directory (name a file "
                      "to write)");
  EXPECT_TRUE(llvm::sys::fs::is_directory(dirPath));
  EXPECT_EQ(tmp.list(), (std::vector<std::string>{"dir.ckpt", "run.ckpt"}));

  // The directory does not exist.
  std::string nowhere = tmp.path("no/run.ckpt");
  EXPECT_EQ(message(saveCheckpoint(nowhere, old)),
            nowhere + ": error: cannot write: the directory '" +
                tmp.path("no") +
                "' does not exist (create it first: mkdir -p " +
                tmp.path("no") + ")");
}

} // namespace
