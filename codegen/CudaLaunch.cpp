//===- CudaLaunch.cpp - Launch geometry of the CUDA kernels ---------------===//
//
// Everything here is decided from the plan's static shapes, so it is part of
// the rendered text (constants) and of the launch metadata the runtime
// reads (CudaLaunch, Renderer.h):
//  - the vector width: 16 bytes of the widest float operand (4 floats or 2
//    doubles), when the innermost dim is a multiple of it, else 1;
//  - 32-bit indices when every count the kernel indexes is below 2^31;
//  - row kernels: a block per row of ceil(C / vector) threads rounded up to
//    a power of two, at most kMaxRowThreads (512: ptxas then has 128
//    registers a thread), so a thread caches at most
//    ceil(kMaxFusedRow / kMaxRowThreads) = 8 elements of each scratch row
//    and column sum;
//  - column sums: a partition of the rows into chunks (enough work items to
//    fill a GPU), which fixes the order of every sum.
//
//===----------------------------------------------------------------------===//
#include "codegen/Language.h"
#include "codegen/Renderer.h"

#include <algorithm>

namespace strata::codegen {

namespace {

constexpr int64_t kWarp = 32, kThreads = 256, kMaxRowThreads = 512;
constexpr int64_t kMaxBlocks = 8192;
/// Column sums of elementwise kernels: about this many (chunk, group) work
/// items. Row kernels: about this many threads over all chunks.
constexpr int64_t kSumWorkItems = int64_t(1) << 17;
constexpr int64_t kRowSumThreads = int64_t(1) << 18;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
unsigned grid(int64_t blocks) {
  return unsigned(std::clamp<int64_t>(blocks, 1, kMaxBlocks));
}
bool isFloatType(DType t) { return t == DType::F32 || t == DType::F64; }

int vectorWidth(const KernelPlan &p) {
  auto is16 = [&](ValueId v) { return isFloat16(p.storageOf(v)); };
  if (llvm::any_of(p.loads,
                   [&](const KernelLoad &l) { return is16(l.value); }) ||
      llvm::any_of(p.stores, is16))
    return 1; // 16-bit elements convert one by one
  int64_t widest = 4;
  for (const KernelLoad &l : p.loads)
    if (p.body->type(l.value).dtype == DType::F64)
      widest = 8;
  for (ValueId v : p.stores)
    if (p.body->type(v).dtype == DType::F64)
      widest = 8;
  int64_t width = 16 / widest;
  return p.inner() % width == 0 ? int(width) : 1;
}

} // namespace

bool cudaVectorLoad(const KernelPlan &p, const CudaLaunch &l, size_t k) {
  const KernelLoad &load = p.loads[k];
  if (l.vector == 1 || !isFloatType(p.body->type(load.value).dtype) ||
      load.strides.back() != 1)
    return false;
  return llvm::all_of(llvm::ArrayRef<int64_t>(load.strides).drop_back(),
                      [&](int64_t s) { return s % l.vector == 0; });
}

CudaLaunch cudaLaunchOf(const KernelPlan &p) {
  CudaLaunch l;
  l.vector = vectorWidth(p);
  const int64_t n = p.numElements(), C = p.inner(), rows = n / C;
  const int64_t groups = C / l.vector; // per row
  const int64_t sums = int64_t(p.sums.size());
  auto chunkRows = [&](int64_t chunks) {
    chunks = std::clamp<int64_t>(chunks, 1, rows);
    l.rowsPerChunk = ceilDiv(rows, chunks);
    l.chunks = ceilDiv(rows, l.rowsPerChunk);
    l.partialDoubles = sums * l.chunks * C;
    l.sumThreads = unsigned(kThreads);
    l.sumBlocks = grid(ceilDiv(C, kThreads));
  };
  if (!p.isRowKernel()) {
    l.threads = unsigned(kThreads);
    if (p.sums.empty()) {
      l.kind = CudaLaunch::Kind::Elementwise;
      l.blocks = grid(ceilDiv(n / l.vector, kThreads));
    } else {
      l.kind = CudaLaunch::Kind::ColumnSums;
      chunkRows(ceilDiv(kSumWorkItems, groups));
      l.blocks = grid(ceilDiv(l.chunks * groups, kThreads));
    }
  } else {
    // A power of two: ptxas caps the registers of other block sizes well
    // below 65536 / threads (72 at 416 or 448 threads), which spills.
    int64_t threads = kWarp;
    while (threads < groups && threads < kMaxRowThreads)
      threads *= 2;
    l.threads = unsigned(threads);
    l.groupsPerThread = ceilDiv(groups, threads);
    if (p.sums.empty()) {
      l.kind = CudaLaunch::Kind::Row;
      l.blocks = grid(rows);
    } else {
      l.kind = CudaLaunch::Kind::RowSums;
      chunkRows(kRowSumThreads / threads);
      l.blocks = grid(l.chunks);
    }
  }
  constexpr int64_t kInt32Limit = int64_t(1) << 31;
  l.index32 = n < kInt32Limit && l.partialDoubles < kInt32Limit;
  return l;
}

} // namespace strata::codegen
