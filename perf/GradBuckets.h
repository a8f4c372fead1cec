//===- GradBuckets.h - The dp gradient buckets a rank's runtime reduces ---===//
//
// What `strata estimate` simulates of the data-parallel gradient reduction:
// the buckets runtime/parallel/GradReducer.h lays a pipeline rank's
// gradients out in, and where in the step each is issued, from the plan
// alone. As the runtime does it:
//
//   - a gradient is final after the node of its chunk's backward program
//     that writes it (its defining node; the program's end when the output
//     is a view, an input, or read again later), in the rank's last
//     backward of that chunk in the step; a gradient no backward writes is
//     final after the step;
//   - gradients are taken by name, then stably by when they are final, and
//     cut into buckets of about `bucketBytes` (Megatron's bucket_size);
//   - a bucket is one all_reduce over dp of its all-reduced gradients
//     (each padded to 256 bytes) and one reduce_scatter per ZeRO-1
//     gradient, after scaling the bucket by 1 / microbatches;
//   - it is issued on the rank's reduction stream when its last gradient is
//     final (overlapping the rest of the backward), unless some F or B
//     program of the rank runs a dp collective itself: then every bucket is
//     issued after the backward. The optimizer waits for all of them.
//
// And ZeRO-1's parameter all-gathers, overlapped with the next step's
// forward (GatherBucket below).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/PipelinePlan.h"

#include <vector>

namespace strata {

/// One bucket of a rank's gradient reduction.
struct GradBucket {
  /// Issued after node `node` of chunk `chunk`'s backward program in its
  /// last microbatch; chunk -1: after the backward, before the optimizer.
  int64_t chunk = -1;
  size_t node = 0;
  /// Bytes of the bucket (what the 1 / microbatches scaling touches), of
  /// its all-reduced range (0: none), and the full (unreduced) bytes of
  /// each reduce-scattered gradient.
  double bytes = 0, allReduceBytes = 0;
  std::vector<double> reduceScatterBytes;
};

/// The buckets of pipeline rank `rank` of `plan` over `dp` data-parallel
/// ranks, in issue order (the file comment). Empty when dp is 1 or nothing
/// is reduced.
std::vector<GradBucket> gradientBuckets(const PipelinePlan &plan, int64_t rank,
                                        int64_t dp, int64_t bucketBytes);

/// One bucket of ZeRO-1's parameter all-gathers, as runtime/parallel/
/// ParamGatherer.h makes them: the optimizer's dp-shard outputs by where
/// the step's forwards first read them (per chunk, the first node of its
/// first forward program), cut into buckets of about `bucketBytes` of
/// gathered bytes. All are issued on the rank's second stream as the
/// step's first forward starts; node `node` of chunk `chunk`'s first
/// forward waits for the bucket (chunk -1: nothing reads it).
struct GatherBucket {
  int64_t chunk = -1;
  size_t node = 0;
  /// The gathered (full) bytes of each parameter.
  std::vector<double> gatherBytes;
};

/// The gather buckets of pipeline rank `rank` of `plan`, in issue order;
/// empty without a distributed optimizer.
std::vector<GatherBucket> parameterGatherBuckets(const PipelinePlan &plan,
                                                 int64_t rank,
                                                 int64_t bucketBytes);

} // namespace strata
