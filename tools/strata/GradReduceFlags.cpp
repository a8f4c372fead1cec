//===- GradReduceFlags.cpp - --dp-bucket-mb, --overlap-grad-reduce, ... ---===//
#include "tools/strata/GradReduceFlags.h"

#include <cmath>

namespace strata {

namespace cl = llvm::cl;

GradReduceFlags::GradReduceFlags(cl::SubCommand &cmd)
    : bucketMb("dp-bucket-mb",
               cl::desc("MiB of gradients per data-parallel reduction bucket "
                        "(default 152.6: Megatron's bucket_size of 40M f32 "
                        "elements)"),
               cl::init(double(GradReduceOptions().bucketBytes) / (1 << 20)),
               cl::sub(cmd)),
      overlap("overlap-grad-reduce",
              cl::desc("Reduce each bucket over dp during the backward, as "
                       "soon as its gradients are final (default true; "
                       "=false: after the backward, with the same result "
                       "bitwise)"),
              cl::init(true), cl::sub(cmd)),
      overlapParamGather(
          "overlap-param-gather",
          cl::desc("With --distributed-optimizer: all-gather the updated "
                   "parameters in buckets during the next forward, each "
                   "waited for before its first reader (default true; "
                   "=false: right after the optimizer, with the same result "
                   "bitwise)"),
          cl::init(true), cl::sub(cmd)) {}

llvm::Expected<GradReduceOptions> GradReduceFlags::options() const {
  if (!(bucketMb > 0) || !std::isfinite(bucketMb))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--dp-bucket-mb must be a positive number of MiB (got " +
            std::to_string(double(bucketMb)) +
            "; Megatron's 40M f32 elements are 152.6)");
  GradReduceOptions o;
  o.bucketBytes = std::max<int64_t>(1, int64_t(bucketMb * (1 << 20)));
  o.overlap = overlap;
  o.overlapParamGather = overlapParamGather;
  return o;
}

} // namespace strata
