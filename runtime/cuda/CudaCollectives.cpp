//===- CudaCollectives.cpp - Collectives and send/recv of CudaDevice ------===//
//
// Every collective node and send/recv of a partitioned graph runs on the
// rank's NCCL communicators (nccl/NcclGroups.h), made by
// connectCollectives when the device group connects (or else at the first
// collective) from the rank's Gloo communicators, whose rendezvous store
// carries NCCL's unique id: the real NCCL on a GPU, its emulation over Gloo
// in interpret mode, the same calls either way. A collective along a dim other
// than the outermost packs the dim's blocks into a contiguous scratch buffer
// first (and unpacks after) with the strided-copy kernel, as
// runtime/comm/CollectiveKernels.cpp does on the host; the buffer is the
// communicator's, reused in stream order (nccl/NcclCommunicator.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDevice.h"

#include "runtime/comm/CollectiveKernels.h"
#include "runtime/comm/GlooCommunicator.h"
#include "runtime/cuda/nccl/InterpretNccl.h"
#include "runtime/cuda/nccl/NcclGroups.h"

#include "llvm/ADT/ScopeExit.h"

namespace strata {

namespace {

/// kernels/Layout.cu's StridedCopy, laid out alike.
struct StridedCopy {
  long long size[8], xStride[8], yStride[8];
  long long xOffset, yOffset, count;
  int rank;
};

} // namespace

llvm::Error CudaDevice::packBlocks(const void *x, void *y, int64_t outer,
                                   int64_t n, int64_t blk, bool unpack,
                                   cuda::StreamHandle s) {
  int64_t unit = blk % 8 == 0 ? 8 : 4;
  if (blk % unit)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "a collective's blocks of " + llvm::Twine(blk) +
            " bytes are not a multiple of 4 bytes (the copy kernel's unit)");
  auto f = opKernels_->kernel(unit == 8 ? "strata_copy_b8" : "strata_copy_b4");
  if (!f)
    return f.takeError();
  long long u = blk / unit;
  StridedCopy c{};
  c.rank = 3;
  c.size[0] = outer;
  c.size[1] = n;
  c.size[2] = u;
  // [outer, n, u] in its own layout, and [n, outer, u].
  long long rowMajor[3] = {n * u, u, 1}, swapped[3] = {u, outer * u, 1};
  for (int d = 0; d < 3; ++d) {
    c.xStride[d] = unpack ? swapped[d] : rowMajor[d];
    c.yStride[d] = unpack ? rowMajor[d] : swapped[d];
  }
  c.count = outer * n * u;
  void *params[] = {&x, &y, &c};
  return cuda::launch1d(*driver_, s, *f, c.count, params);
}

llvm::Error CudaDevice::connectCollectives(Communicators &comms) {
  if (nccl_)
    return llvm::Error::success();
  std::unique_ptr<cuda::Nccl> api;
  bool interpret = driver_->hostAddressable();
  if (interpret) {
    api = cuda::makeInterpretNccl(*driver_, rendezvousOf(comms));
  } else {
    auto real = cuda::openRealNccl();
    if (!real)
      return real.takeError();
    api = std::move(*real);
  }
  auto groups =
      cuda::NcclGroups::create(std::move(api), *driver_, comms,
                               cuda::NcclWatchdog::defaultTimeout(interpret));
  if (!groups)
    return groups.takeError();
  nccl_ = std::move(*groups);
  return llvm::Error::success();
}

std::vector<int64_t> CudaDevice::packingBuffers(const Graph &g, const Node &n) {
  if (n.op != OpKind::AllGather && n.op != OpKind::ReduceScatter &&
      n.op != OpKind::AllToAll)
    return {};
  const TensorType &inT = g.type(n.operands[0]), &outT = g.type(n.results[0]);
  if (n.op == OpKind::AllToAll)
    return {inT.bytes(), inT.bytes()};
  const TensorType &split = n.op == OpKind::AllGather ? inT : outT;
  auto dim = dimAttr(n, split, "dim");
  if (!dim) {
    llvm::consumeError(dim.takeError()); // the launch reports it
    return {};
  }
  if (viewAround(split, *dim).outer == 1)
    return {};
  return {n.op == OpKind::AllGather ? outT.bytes() : inT.bytes()};
}

llvm::Error CudaDevice::launchCollective(const Graph &g, const Node &n,
                                         const void *in, void *out,
                                         const LaunchContext &ctx) {
  cuda::StreamHandle s = stream(ctx.stream);
  StrList axes = n.attrs.getStrings("axes");
  if (!nccl_ && ctx.comms)
    if (auto e = connectCollectives(*ctx.comms))
      return collectiveError(n, llvm::toString(std::move(e)));
  cuda::NcclCommunicator *c = nullptr;
  if (nccl_) {
    auto grp = n.op == OpKind::Send || n.op == OpKind::Recv
                   ? nccl_->pointToPoint(axes, n.attrs.getInt("peer"),
                                         n.op == OpKind::Send)
                   : nccl_->group(axes);
    if (!grp)
      return collectiveError(n, llvm::toString(grp.takeError()));
    c = *grp;
  } else if (auto e = checkSingleRankAxes(g, n)) {
    return e;
  }
  auto wrap = [&](llvm::Error e) {
    return e ? collectiveError(n, llvm::toString(std::move(e)))
             : llvm::Error::success();
  };
  if (n.op == OpKind::Send || n.op == OpKind::Recv) {
    if (!c)
      return collectiveError(n, "has no peer: its group is this rank alone");
    c->orderWith(s);
    c->setTrace(trace_, traceRank_);
    bool isSend = n.op == OpKind::Send;
    const TensorType &t = g.type(isSend ? n.operands[0] : n.results[0]);
    int64_t peer = n.attrs.getInt("peer");
    if (isSend && sendsJoinCompute_)
      return wrap(c->send(in, t.numElements(), t.dtype, peer, 0));
    return wrap(isSend ? c->postSend(in, t.numElements(), t.dtype, peer, 0)
                       : c->recv(out, t.numElements(), t.dtype, peer, 0));
  }
  const TensorType &inT = g.type(n.operands[0]), &outT = g.type(n.results[0]);
  const DType dt = inT.dtype;
  auto copyAll = [&] {
    return in == out
               ? llvm::Error::success()
               : driver_->copyOnDevice(cuda::DevicePtr(out),
                                       cuda::DevicePtr(in), outT.bytes(), s);
  };
  if (!c) // a group of this rank alone
    return copyAll();
  c->orderWith(s);
  c->setTrace(trace_, traceRank_);
  const int64_t size = c->size();
  // Packing buffers go back to the communicator once the node's last use
  // of them is enqueued on `s`: the next collective of `s` may reuse them.
  std::vector<cuda::DevicePtr> packing;
  auto recycle = llvm::make_scope_exit([&] {
    for (cuda::DevicePtr p : packing)
      c->recycle(p, s);
  });
  auto scratch = [&](int64_t bytes) -> llvm::Expected<void *> {
    auto p = c->scratch(bytes, s);
    if (!p)
      return p.takeError();
    packing.push_back(*p);
    return reinterpret_cast<void *>(*p);
  };
  switch (n.op) {
  case OpKind::AllReduce: {
    std::string reduce = n.attrs.getString("reduce", "sum");
    if (reduce != "sum" && reduce != "max")
      return collectiveError(n, "unknown reduce \"" + reduce + "\"");
    return wrap(c->allReduce(in, out, outT.numElements(), dt,
                             reduce == "max" ? ReduceOp::Max : ReduceOp::Sum));
  }
  case OpKind::AllGather: {
    auto dim = dimAttr(n, inT, "dim");
    if (!dim)
      return dim.takeError();
    DimView v = viewAround(inT, *dim);
    if (v.outer == 1)
      return wrap(c->allGather(in, out, inT.numElements(), dt));
    auto blocks = scratch(size * inT.bytes());
    if (!blocks)
      return blocks.takeError();
    if (auto e = c->allGather(in, *blocks, inT.numElements(), dt))
      return wrap(std::move(e));
    return packBlocks(*blocks, out, v.outer, size, v.size * v.innerBytes,
                      /*unpack=*/true, s);
  }
  case OpKind::ReduceScatter: {
    auto dim = dimAttr(n, outT, "dim");
    if (!dim)
      return dim.takeError();
    DimView v = viewAround(outT, *dim);
    if (v.outer == 1)
      return wrap(
          c->reduceScatter(in, out, outT.numElements(), dt, ReduceOp::Sum));
    auto blocks = scratch(inT.bytes());
    if (!blocks)
      return blocks.takeError();
    if (auto e = packBlocks(in, *blocks, v.outer, size, v.size * v.innerBytes,
                            false, s))
      return e;
    return wrap(
        c->reduceScatter(*blocks, out, outT.numElements(), dt, ReduceOp::Sum));
  }
  case OpKind::AllToAll: {
    auto split = dimAttr(n, inT, "split_dim");
    if (!split)
      return split.takeError();
    auto concat = dimAttr(n, outT, "concat_dim");
    if (!concat)
      return concat.takeError();
    // Block j of split_dim goes to rank j; the block from rank j is block j
    // of concat_dim.
    TensorType block = inT;
    block.shape[*split] /= size;
    DimView sv = viewAround(block, *split), tv = viewAround(block, *concat);
    auto sendBuf = scratch(inT.bytes());
    if (!sendBuf)
      return sendBuf.takeError();
    auto recvBuf = scratch(inT.bytes());
    if (!recvBuf)
      return recvBuf.takeError();
    if (auto e = packBlocks(in, *sendBuf, sv.outer, size,
                            sv.size * sv.innerBytes, false, s))
      return e;
    if (auto e = c->allToAll(*sendBuf, *recvBuf, block.numElements(), dt))
      return wrap(std::move(e));
    return packBlocks(*recvBuf, out, tv.outer, size, tv.size * tv.innerBytes,
                      true, s);
  }
  case OpKind::BroadcastFrom:
    if (auto e = copyAll())
      return e;
    return wrap(
        c->broadcast(out, outT.numElements(), dt, n.attrs.getInt("root")));
  default:
    return collectiveError(n, "not a collective this device runs");
  }
}

} // namespace strata
