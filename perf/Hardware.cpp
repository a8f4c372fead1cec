//===- Hardware.cpp - Cluster descriptions for the performance model ------===//
#include "perf/Hardware.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <utility>

namespace strata {

namespace {
namespace gp = google::protobuf;

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The files of hardware/, embedded by perf/CMakeLists.txt.
const std::vector<std::pair<std::string, std::string>> &builtins() {
  static const std::vector<std::pair<std::string, std::string>> files = {
#include "perf/HardwareFiles.inc"
  };
  return files;
}

/// Protobuf's text-format errors as `file:line:col: error: ...`.
class Collector : public gp::io::ErrorCollector {
public:
  explicit Collector(llvm::StringRef file) : file_(file) {}
  void AddError(int line, gp::io::ColumnNumber column,
                const std::string &message) override {
    if (!first_.empty())
      return;
    std::string what = message;
    llvm::StringRef m(message);
    size_t at = m.find("has no field named \"");
    if (at != llvm::StringRef::npos)
      what = "unknown field '" +
             m.drop_front(at + 20)
                 .take_until([](char c) { return c == '"'; })
                 .str() +
             "'";
    first_ = file_ + ":" + std::to_string(line + 1) + ":" +
             std::to_string(column + 1) + ": error: " + what +
             " (see proto/hardware.proto for the fields)";
  }
  std::string first_;

private:
  std::string file_;
};

/// The first field of `hw` that must be positive and is not.
std::string badField(const pb::Hardware &hw) {
  const pb::Accelerator &a = hw.accelerator();
  std::pair<const char *, double> positive[] = {
      {"accelerator.memory_bandwidth", a.memory_bandwidth()},
      {"accelerator.memory_bytes", double(a.memory_bytes())},
      {"accelerator.multiprocessors", double(a.multiprocessors())},
      {"accelerator.gemm_tile_m", double(a.gemm_tile_m())},
      {"accelerator.gemm_tile_n", double(a.gemm_tile_n())},
      {"accelerator.peak_f32_flops", a.peak_f32_flops()},
      {"devices_per_node", double(hw.devices_per_node())},
      {"intra_node.bandwidth", hw.intra_node().bandwidth()},
      {"nics_per_node", double(hw.nics_per_node())},
      {"nic.bandwidth", hw.nic().bandwidth()},
  };
  for (auto &[name, v] : positive)
    if (!(v > 0))
      return std::string(name) + " must be > 0";
  std::pair<const char *, double> nonNegative[] = {
      {"accelerator.peak_tf32_flops", a.peak_tf32_flops()},
      {"accelerator.peak_bf16_flops", a.peak_bf16_flops()},
      {"accelerator.kernel_launch_s", a.kernel_launch_s()},
      {"intra_node.latency_s", hw.intra_node().latency_s()},
      {"nic.latency_s", hw.nic().latency_s()},
      {"collective_launch_s", hw.collective_launch_s()},
      {"nodes", double(hw.nodes())},
  };
  for (auto &[name, v] : nonNegative)
    if (!(v >= 0))
      return std::string(name) + " must be >= 0";
  return "";
}
} // namespace

llvm::Expected<Precision> parsePrecision(llvm::StringRef text) {
  if (text == "f32")
    return Precision::F32;
  if (text == "tf32")
    return Precision::TF32;
  if (text == "bf16")
    return Precision::BF16;
  return makeError("unknown precision '" + text +
                   "' (expected f32, tf32 or "
                   "bf16)");
}

llvm::StringRef precisionName(Precision p) {
  switch (p) {
  case Precision::F32:
    return "f32";
  case Precision::TF32:
    return "tf32";
  case Precision::BF16:
    return "bf16";
  }
  return "f32";
}

std::vector<std::string> builtinHardwareNames() {
  std::vector<std::string> names;
  for (auto &f : builtins())
    names.push_back(f.first);
  llvm::sort(names);
  return names;
}

llvm::Expected<pb::Hardware> parseHardware(llvm::StringRef text,
                                           llvm::StringRef bufferName) {
  pb::Hardware hw;
  Collector errors(bufferName);
  gp::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &hw))
    return makeError(errors.first_.empty()
                         ? bufferName + ": error: cannot parse the hardware "
                                        "description"
                         : llvm::Twine(errors.first_));
  std::string bad = badField(hw);
  if (!bad.empty())
    return makeError(bufferName + ": error: " + bad +
                     " (every rate, size and count of a cluster is positive; "
                     "see proto/hardware.proto)");
  return hw;
}

llvm::Expected<pb::Hardware> loadHardware(llvm::StringRef nameOrPath) {
  for (auto &[name, text] : builtins())
    if (name == nameOrPath)
      return parseHardware(text, "hardware/" + name + ".textproto");
  if (!llvm::sys::fs::exists(nameOrPath)) {
    std::string names;
    for (const std::string &n : builtinHardwareNames())
      names += (names.empty() ? "" : ", ") + n;
    return makeError("unknown cluster '" + nameOrPath +
                     "' (not a built-in one and no such file; the built-in "
                     "clusters are " +
                     names + ", or give a hardware .textproto file)");
  }
  auto buf = llvm::MemoryBuffer::getFile(nameOrPath, /*IsText=*/true);
  if (!buf)
    return makeError(nameOrPath +
                     ": error: cannot read: " + buf.getError().message());
  return parseHardware((*buf)->getBuffer(), nameOrPath);
}

llvm::Expected<double> peakFlops(const pb::Hardware &hw, Precision p) {
  const pb::Accelerator &a = hw.accelerator();
  double peak = p == Precision::F32    ? a.peak_f32_flops()
                : p == Precision::TF32 ? a.peak_tf32_flops()
                                       : a.peak_bf16_flops();
  if (peak > 0)
    return peak;
  return makeError(hw.name() + " (" + a.name() + ") has no " +
                   precisionName(p) +
                   " matmul peak (choose another --precision)");
}

} // namespace strata
