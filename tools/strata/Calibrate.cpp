//===- Calibrate.cpp - `strata calibrate -o hardware/NAME.textproto` ------===//
//
// Measures the machine it runs on (perf/Calibrate.h: GEMM, attention and
// memory-bound kernels, the per-node launch cost and Gloo all-reduces) and
// writes a pb::Hardware text proto that `strata estimate --cluster FILE`
// reads. The CPU backend is what it measures; --threads-per-device sets how
// many kernel threads one device (rank) has, as `strata train` shares the
// cores among the devices of a layout (cores / devices each).
//
//===----------------------------------------------------------------------===//
#include "perf/Calibrate.h"
#include "perf/Hardware.h"
#include "runtime/io/AtomicFile.h"
#include "tools/strata/Driver.h"
#include "tools/strata/Flags.h"
#include "tools/strata/Verb.h"

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
cl::opt<std::string> device("device",
                            cl::desc("The backend to measure: cpu (cuda is "
                                     "not measured yet)"),
                            cl::init("cpu"), cl::sub(calibrateCmd),
                            cl::cat(cat));
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
          checkFlags({oneOf(device, {"cpu", "cuda"}),
                      inRange(threadsPerDevice, 0, cores,
                              "kernel threads per device (this machine has " +
                                  std::to_string(cores) + " cores)")}))
    return reportError(std::move(e));
  if (device == "cuda")
    return reportError(usageError(
        "--device cuda: calibrating the CUDA backend is not built yet "
        "(measure the CPU backend, or use a built-in GPU description: " +
        [] {
          std::string s;
          for (const std::string &n : builtinHardwareNames())
            s += (s.empty() ? "" : ", ") + n;
          return s;
        }() +
        ")"));
  StringRef dir = sys::path::parent_path(outPath);
  if (!dir.empty() && !sys::fs::is_directory(dir))
    return reportError(usageError("-o " + outPath + ": the directory '" + dir +
                                  "' does not exist (create it first)"));
  CalibrateOptions o;
  o.name = name.empty() ? sys::path::stem(outPath).str() : name.getValue();
  o.threadsPerDevice = int(threadsPerDevice);
  o.quick = quick;
  auto hw = calibrateCpu(o, errs());
  if (!hw)
    return reportError(hw.takeError());
  std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  hw->set_source(std::string("strata calibrate") + (quick ? " --quick" : "") +
                 " on this machine, " + when);
  std::string text;
  google::protobuf::TextFormat::PrintToString(*hw, &text);
  // What estimate reads back must be what was measured.
  if (auto check = parseHardware(text, outPath); !check)
    return reportError(check.takeError());
  if (Error e = writeFileAtomically(outPath, [&](raw_ostream &out) {
        out << "# Measured by `strata calibrate` (perf/Calibrate.h): GEMM, "
               "attention and\n# memory-bound kernels of the CPU backend, "
               "the per-node launch cost and\n# Gloo all-reduces; read by "
               "`strata estimate --cluster FILE`.\n"
               "# proto-file: proto/hardware.proto\n"
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
