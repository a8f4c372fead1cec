//===- Hardware.h - Cluster descriptions for the performance model --------===//
//
// A cluster is a pb::Hardware (proto/hardware.proto): one accelerator kind,
// nodes of `devices_per_node` joined by an intra-node link, a network of
// `nics_per_node` NICs. The files of hardware/ (a100-80gb, h100-sxm, h200,
// v100-dgx2h) are compiled into strata, so `--cluster a100-80gb` works from
// any directory; any other path names a text proto of the same message.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "proto/hardware.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace strata {

/// The number format the device's matmuls and activations use. Plans hold
/// f32 tensors; a GPU runs them as f32 (FMA units), tf32 (tensor cores on
/// f32 storage) or bf16 (mixed precision as Megatron-LM trains: 16-bit
/// activations, gradients and matmuls, fp32 optimizer).
enum class Precision { F32, TF32, BF16 };

/// "f32", "tf32" or "bf16".
llvm::Expected<Precision> parsePrecision(llvm::StringRef text);
llvm::StringRef precisionName(Precision p);

/// The built-in clusters' names, sorted.
std::vector<std::string> builtinHardwareNames();

/// Parses and checks a description (every rate, size and count positive;
/// a peak may be 0 for a format the device lacks). Errors are
/// `<bufferName>:line:col: error: ...` or name the field.
llvm::Expected<pb::Hardware> parseHardware(llvm::StringRef text,
                                           llvm::StringRef bufferName);

/// A built-in cluster by name, or else the text proto at `nameOrPath`.
/// An unknown name lists the built-in ones.
llvm::Expected<pb::Hardware> loadHardware(llvm::StringRef nameOrPath);

/// The dense matmul peak in FLOP/s for `p`, or an error naming what the
/// device lacks (a V100 has no tf32).
llvm::Expected<double> peakFlops(const pb::Hardware &hw, Precision p);

} // namespace strata
