//===- AdamWBatch.h - Every AdamW update of a program in one launch -------===//
//
// An optimizer program updates each parameter with its own adamw_update,
// usually after a `mul` by the clip coefficient. Launched one by one that is
// 2 kernels per parameter (hundreds per step for a large model), each too
// small to fill a GPU. The CUDA device instead defers them here and runs
// them as one launch of kernels/AdamW.cu's adamw_multi, described by a
// table of tensors and chunks in device memory (kernel parameters hold at
// most 4 KiB). A `mul(grad, coef)` whose only use is an update's gradient is
// folded into the update (prepare() finds them: foldableMuls), so its
// product is never stored.
//
// Deferral keeps the program's meaning: a launch or device operation that
// reads what a pending update writes, or writes what it reads or writes,
// flushes the batch first (CudaDevice calls conflicts() and flush()); so
// does any copy, fill, event, host task or synchronize, and a launch on
// another stream. A folded mul whose update has not come yet when the batch
// flushes runs as its own kernel, and the update then reads its product.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"
#include "runtime/cuda/OpKernels.h"

#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <vector>

namespace strata::cuda {

/// One tensor of a batch: the layout of StrataAdamwTensor (AdamW.cu).
struct AdamWTensor {
  const void *p, *g, *m, *v;
  void *pOut, *mOut, *vOut;
  const void *factor; // the gradient's factor (a device scalar), or null
  int64_t n;
  double beta1, beta2, eps, weightDecay;
};
/// Elements [begin, begin + chunk) of tensor `tensor`: StrataAdamwChunk.
struct AdamWChunk {
  int64_t tensor, begin;
};

/// The `mul` nodes of `g` that an update folds: mul(x, s) with s a scalar
/// of x's dtype, whose one use is the gradient (operand 1) of an
/// adamw_update, and not an output; each mapped to its update.
llvm::DenseMap<const Node *, const Node *> foldableMuls(const Graph &g);

class AdamWBatch {
public:
  /// `runMul` launches a folded mul as its own kernel (when its update is
  /// not in the batch at a flush).
  using MulLauncher = std::function<llvm::Error(
      const Node &mul, llvm::ArrayRef<const void *> operands, void *result,
      const LaunchContext &ctx)>;
  AdamWBatch(const OpKernelModule &kernels, MulLauncher runMul)
      : kernels_(kernels), runMul_(std::move(runMul)) {}
  ~AdamWBatch();

  /// Whether the batch takes `node` (an adamw_update it has a kernel for,
  /// or a folded mul: `folds` maps it to its update). It may flush first.
  llvm::Expected<bool>
  take(const Graph &g, const Node &node, llvm::ArrayRef<const void *> operands,
       llvm::ArrayRef<void *> results, const LaunchContext &ctx,
       StreamHandle stream,
       const llvm::DenseMap<const Node *, const Node *> *folds);
  /// Whether `node`'s launch (on `stream`) must wait for the batch.
  bool conflicts(const Graph &g, const Node &node,
                 llvm::ArrayRef<const void *> operands,
                 llvm::ArrayRef<void *> results, StreamHandle stream) const;
  bool empty() const { return members_.empty() && muls_.empty(); }
  /// Launches what is pending, in one kernel (plus any unmatched mul).
  llvm::Error flush();
  /// Launches of adamw_multi so far (tests count them).
  int64_t launches() const { return launches_; }

  /// Bytes [begin, end) of device memory.
  struct Range {
    uintptr_t begin, end;
  };

private:
  struct PendingMul {
    const Node *mul, *update;
    const void *x, *factor;
    void *result;
    LaunchContext ctx;
    llvm::SmallVector<Range, 2> reads;
    Range write;
  };
  bool overlaps(llvm::ArrayRef<Range> reads,
                llvm::ArrayRef<Range> writes) const;
  llvm::Error upload(llvm::ArrayRef<char> table, DevicePtr &ptr);

  const OpKernelModule &kernels_;
  MulLauncher runMul_;
  StreamHandle stream_ = nullptr;
  DType dtype_ = DType::F32;
  const void *lr_ = nullptr, *step_ = nullptr;
  std::vector<AdamWTensor> members_;
  std::vector<PendingMul> muls_;
  std::vector<Range> reads_, writes_; // of the members
  /// Tables uploaded before, by content (the same every step).
  std::vector<std::pair<std::vector<char>, DevicePtr>> tables_;
  int64_t launches_ = 0;
};

} // namespace strata::cuda
