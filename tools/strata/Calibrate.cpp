//===- Calibrate.cpp - `strata calibrate -o hardware/NAME.textproto` ------===//
//
// Measures the machine it runs on (perf/Calibrate.h: GEMM, attention and
// memory-bound kernels, the per-node launch cost and Gloo all-reduces) and
// writes a pb::Hardware text proto that `strata estimate --cluster FILE`
// reads. On the CPU backend, --threads-per-device sets how many kernel
// threads one device (rank) has, as `strata train` shares the cores among
// the devices of a layout (cores / devices each). On cuda (and
// cuda-interpret, which tests the path) it measures the one device
// (perf/CalibrateDevice.h) and keeps the links of --base.
//
//===----------------------------------------------------------------------===//
#include "perf/Calibrate.h"
#include "perf/CalibrateDevice.h"
#include "perf/Hardware.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/parallel/Backend.h"
#include "tools/strata/Driver.h"
#include "tools/strata/Flags.h"
#include "tools/strata/Verb.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/text_format.h>

#include <ctime>
#include <thread>

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand calibrateCmd("calibrate",
                            "Measure this machine's backend and write a "
                            "hardware description for `strata estimate`");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> outPath("o", cl::Required,
                             cl::desc("Where to write the description"),
                             cl::value_desc("hardware/NAME.textproto"),
                             cl::sub(calibrateCmd), cl::cat(cat));
cl::opt<std::string> device(
    "device",
    cl::desc("The backend to measure: cpu, cuda (GPU 0) or cuda-interpret "
             "(the CUDA backend on the host: tests the path, its times mean "
             "nothing)"),
    cl::init("cpu"), cl::sub(calibrateCmd), cl::cat(cat));
cl::opt<std::string>
    base("base",
         cl::desc("For cuda: the built-in name or file of a description of "
                  "the same accelerator, whose links, node size and GEMM "
                  "tiles the result keeps (one GPU cannot measure them)"),
         cl::value_desc("NAME|FILE"), cl::sub(calibrateCmd), cl::cat(cat));
cl::opt<int64_t> threadsPerDevice(
    "threads-per-device",
    cl::desc("Kernel threads of one device (default: every core, one device "
             "per machine; `strata train` of an N-device layout gives each "
             "cores / N)"),
    cl::init(0), cl::sub(calibrateCmd), cl::cat(cat));
cl::opt<bool> quick("quick",
                    cl::desc("A smaller table and shorter timings (about 20 "
                             "s on 2 cores)"),
                    cl::sub(calibrateCmd), cl::cat(cat));
cl::opt<std::string> name("name",
                          cl::desc("The description's name (default: the "
                                   "file name without .textproto)"),
                          cl::sub(calibrateCmd), cl::cat(cat));

int runCalibrate() {
  int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (Error e =
          checkFlags({oneOf(device, {"cpu", "cuda", "cuda-interpret"}),
                      inRange(threadsPerDevice, 0, cores,
                              "kernel threads per device (this machine has " +
                                  std::to_string(cores) + " cores)")}))
    return reportError(std::move(e));
  if (device == "cpu" && !base.empty())
    return reportError(usageError(
        "--base is for --device cuda: the CPU backend measures its links"));
  std::optional<pb::Hardware> baseHw;
  if (device != "cpu") {
    if (base.empty())
      return reportError(usageError(
          "--device " + device +
          " needs --base NAME|FILE: one GPU cannot measure the links between "
          "GPUs, so they come from a description of the same machine (one "
          "of " +
          join(builtinHardwareNames(), ", ") + ")"));
    auto b = loadHardware(base);
    if (!b)
      return reportError(b.takeError());
    baseHw = std::move(*b);
  }
  StringRef dir = sys::path::parent_path(outPath);
  if (!dir.empty() && !sys::fs::is_directory(dir))
    return reportError(usageError("-o " + outPath + ": the directory '" + dir +
                                  "' does not exist (create it first)"));
  CalibrateOptions o;
  o.name = name.empty() ? sys::path::stem(outPath).str() : name.getValue();
  o.threadsPerDevice = int(threadsPerDevice);
  o.quick = quick;
  auto hw = [&]() -> Expected<pb::Hardware> {
    if (!baseHw)
      return calibrateCpu(o, errs());
    auto backend = parseBackend(device);
    if (!backend)
      return backend.takeError();
    auto dev = makeDevice(*backend, 0, 0);
    if (!dev)
      return dev.takeError();
    return calibrateDevice(**dev, *baseHw, {o.name, quick}, errs());
  }();
  if (!hw)
    return reportError(hw.takeError());
  std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  hw->set_source(
      std::string("strata calibrate --device ") + device +
      (quick ? " --quick" : "") + " on this machine, " + when +
      (baseHw ? "; links, node size and GEMM tiles from " + baseHw->name()
              : ""));
  std::string text;
  google::protobuf::TextFormat::PrintToString(*hw, &text);
  // What estimate reads back must be what was measured.
  if (auto check = parseHardware(text, outPath); !check)
    return reportError(check.takeError());
  if (Error e = writeFileAtomically(outPath, [&](raw_ostream &out) {
        out << (baseHw ? "# Measured by `strata calibrate --device " + device +
                             "` (perf/CalibrateDevice.h): GEMM,\n# attention "
                             "and memory-bound kernels and the per-node "
                             "launch cost of one\n# device; links from " +
                             baseHw->name() +
                             ". Read by `strata estimate "
                             "--cluster FILE`.\n"
                       : "# Measured by `strata calibrate` "
                         "(perf/Calibrate.h): GEMM, attention and\n# "
                         "memory-bound kernels of the CPU backend, the "
                         "per-node launch cost and\n# Gloo all-reduces; read "
                         "by `strata estimate --cluster FILE`.\n")
            << "# proto-file: proto/hardware.proto\n"
               "# proto-message: strata.pb.Hardware\n"
            << text;
        return Error::success();
      }))
    return reportError(std::move(e));
  outs() << "wrote " << outPath << " (" << hw->accelerator().name() << ")\n";
  return kExitOk;
}

VerbRegistration reg(calibrateCmd, runCalibrate);

} // namespace
} // namespace strata
