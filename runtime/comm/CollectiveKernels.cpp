//===- CollectiveKernels.cpp - Collectives of a graph on host buffers -----===//
#include "runtime/comm/CollectiveKernels.h"

#include "runtime/kernels/Float16.h"

#include <cstring>
#include <vector>

namespace strata {

llvm::Error collectiveError(const Node &n, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::Twine(opName(n.op)) + " (" + n.scope +
                                     "): " + msg);
}

DimView viewAround(const TensorType &t, int64_t dim) {
  llvm::ArrayRef<int64_t> s = t.shape;
  return {numElements(s.take_front(dim)), s[dim],
          numElements(s.drop_front(dim + 1)) * dtypeBytes(t.dtype)};
}

llvm::Expected<int64_t> dimAttr(const Node &n, const TensorType &t,
                                llvm::StringRef name) {
  int64_t d = n.attrs.getInt(name);
  if (d < 0)
    d += t.rank();
  if (d < 0 || d >= t.rank())
    return collectiveError(n, name + " " + llvm::Twine(n.attrs.getInt(name)) +
                                  " is out of range for " + t.str());
  return d;
}

llvm::Error checkSingleRankAxes(const Graph &g, const Node &n) {
  for (const std::string &a : n.attrs.getStrings("axes"))
    if (g.mesh && g.mesh->axisSize(a) > 1)
      return collectiveError(
          n, "needs communicators: run the partitioned graph on a "
             "device group (runtime/parallel)");
  return llvm::Error::success();
}

namespace {

/// x viewed as [outer, n, blk] -> y as [n, outer, blk] (blk in bytes).
void packBlocks(const char *x, char *y, int64_t outer, int64_t n, int64_t blk) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(y + (j * outer + o) * blk, x + (o * n + j) * blk, blk);
}
/// The inverse: x as [n, outer, blk] -> y as [outer, n, blk].
void unpackBlocks(const char *x, char *y, int64_t outer, int64_t n,
                  int64_t blk) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(y + (o * n + j) * blk, x + (j * outer + o) * blk, blk);
}

bool isFloat16(DType t) { return t == DType::BF16 || t == DType::F16; }

/// A 16-bit buffer widened to f32 (bf16 / fp16 reductions add in f32 and
/// round once, so the sum does not depend on the group's order of adds).
std::vector<float> widen(DType t, const void *x, int64_t n) {
  std::vector<float> y(n);
  const uint16_t *h = static_cast<const uint16_t *>(x);
  for (int64_t i = 0; i < n; ++i)
    y[i] = t == DType::BF16 ? kernels::bf16ToFloat(h[i])
                            : kernels::halfToFloat(h[i]);
  return y;
}
void narrow(DType t, const float *x, void *y, int64_t n) {
  uint16_t *h = static_cast<uint16_t *>(y);
  for (int64_t i = 0; i < n; ++i)
    h[i] = t == DType::BF16 ? kernels::floatToBf16(x[i])
                            : kernels::floatToHalf(x[i]);
}

/// Reduces `count` elements of 16-bit `x` into `y` through f32 buffers.
llvm::Error reduce16(DType t, const void *x, void *y, int64_t count,
                     int64_t outCount, ReduceOp op, Communicator &c,
                     bool scatter) {
  std::vector<float> w = widen(t, x, count);
  std::vector<float> r(outCount);
  if (auto e = scatter ? c.reduceScatter(w.data(), r.data(), outCount,
                                         DType::F32, op)
                       : c.allReduce(w.data(), count, DType::F32, op))
    return e;
  narrow(t, scatter ? r.data() : w.data(), y, outCount);
  return llvm::Error::success();
}

} // namespace

llvm::Error runCollective(const Graph &g, const Node &n, const void *in,
                          void *out, Communicators *comms) {
  const TensorType &inT = g.type(n.operands[0]), &outT = g.type(n.results[0]);
  StrList axes = n.attrs.getStrings("axes");
  Communicator *c = nullptr;
  if (comms) {
    auto grp = comms->group(axes);
    if (!grp)
      return collectiveError(n, llvm::toString(grp.takeError()));
    c = *grp;
  } else if (auto e = checkSingleRankAxes(g, n)) {
    return e;
  }
  const int64_t groupSize = c ? c->size() : 1;
  const DType dt = inT.dtype;
  const char *x = static_cast<const char *>(in);
  char *y = static_cast<char *>(out);
  auto wrap = [&](llvm::Error e) {
    return e ? collectiveError(n, llvm::toString(std::move(e)))
             : llvm::Error::success();
  };

  switch (n.op) {
  case OpKind::AllReduce: {
    std::string reduce = n.attrs.getString("reduce", "sum");
    if (reduce != "sum" && reduce != "max")
      return collectiveError(n, "unknown reduce \"" + reduce + "\"");
    if (in != out)
      std::memcpy(y, x, outT.bytes());
    if (!c)
      return llvm::Error::success();
    ReduceOp op = reduce == "max" ? ReduceOp::Max : ReduceOp::Sum;
    if (isFloat16(dt))
      return wrap(reduce16(dt, y, y, outT.numElements(), outT.numElements(), op,
                           *c, /*scatter=*/false));
    return wrap(c->allReduce(y, outT.numElements(), dt, op));
  }
  case OpKind::AllGather: {
    auto dim = dimAttr(n, inT, "dim");
    if (!dim)
      return dim.takeError();
    DimView v = viewAround(inT, *dim);
    int64_t blk = v.size * v.innerBytes;
    if (!c) {
      std::memcpy(y, x, outT.bytes());
      return llvm::Error::success();
    }
    if (v.outer == 1)
      return wrap(c->allGather(x, y, inT.numElements(), dt));
    std::vector<char> blocks(groupSize * inT.bytes());
    if (auto e = c->allGather(x, blocks.data(), inT.numElements(), dt))
      return wrap(std::move(e));
    unpackBlocks(blocks.data(), y, v.outer, groupSize, blk);
    return llvm::Error::success();
  }
  case OpKind::ReduceScatter: {
    auto dim = dimAttr(n, outT, "dim");
    if (!dim)
      return dim.takeError();
    DimView v = viewAround(outT, *dim);
    int64_t blk = v.size * v.innerBytes;
    if (!c) {
      std::memcpy(y, x, outT.bytes());
      return llvm::Error::success();
    }
    const char *src = x;
    std::vector<char> blocks;
    if (v.outer != 1) {
      blocks.resize(inT.bytes());
      packBlocks(x, blocks.data(), v.outer, groupSize, blk);
      src = blocks.data();
    }
    if (isFloat16(dt))
      return wrap(reduce16(dt, src, y, inT.numElements(), outT.numElements(),
                           ReduceOp::Sum, *c, /*scatter=*/true));
    return wrap(
        c->reduceScatter(src, y, outT.numElements(), dt, ReduceOp::Sum));
  }
  case OpKind::AllToAll: {
    auto split = dimAttr(n, inT, "split_dim");
    if (!split)
      return split.takeError();
    auto concat = dimAttr(n, outT, "concat_dim");
    if (!concat)
      return concat.takeError();
    if (!c) {
      std::memcpy(y, x, outT.bytes());
      return llvm::Error::success();
    }
    // Send block j of split_dim to rank j; the block from rank j is block j
    // of concat_dim. Blocks have the input's shape with split_dim / size.
    TensorType block = inT;
    block.shape[*split] /= groupSize;
    DimView s = viewAround(block, *split), t = viewAround(block, *concat);
    std::vector<char> sendBuf(inT.bytes()), recvBuf(inT.bytes());
    packBlocks(x, sendBuf.data(), s.outer, groupSize, s.size * s.innerBytes);
    if (auto e = c->allToAll(sendBuf.data(), recvBuf.data(),
                             block.numElements(), dt))
      return wrap(std::move(e));
    unpackBlocks(recvBuf.data(), y, t.outer, groupSize, t.size * t.innerBytes);
    return llvm::Error::success();
  }
  case OpKind::BroadcastFrom: {
    if (in != out)
      std::memcpy(y, x, outT.bytes());
    if (!c)
      return llvm::Error::success();
    return wrap(
        c->broadcast(y, outT.numElements(), dt, n.attrs.getInt("root")));
  }
  default:
    return collectiveError(n, "not a collective this kernel runs");
  }
}

llvm::Expected<uint32_t> messageSlot(const Node &n, uint64_t microbatch) {
  // Gloo matches by a 32-bit slot: the tag above, the microbatch below.
  constexpr int kMicroBits = 12;
  int64_t tag = n.attrs.getInt("tag");
  if (tag < 0 || tag >= (int64_t(1) << (32 - kMicroBits)) ||
      microbatch >= (uint64_t(1) << kMicroBits))
    return collectiveError(n,
                           "tag " + llvm::Twine(tag) + " of microbatch " +
                               llvm::Twine(microbatch) +
                               " does not fit a message slot (tags below 2^20, "
                               "microbatches below 4096)");
  return uint32_t(tag) << kMicroBits | uint32_t(microbatch);
}

llvm::Error runPointToPoint(const Graph &g, const Node &n, const void *in,
                            void *out, Communicators *comms,
                            uint64_t microbatch) {
  if (!comms)
    return collectiveError(
        n, "needs communicators: run the pipeline's programs on a "
           "device group (runtime/parallel)");
  auto grp = comms->group(n.attrs.getStrings("axes"));
  if (!grp)
    return collectiveError(n, llvm::toString(grp.takeError()));
  auto slotOr = messageSlot(n, microbatch);
  if (!slotOr)
    return slotOr.takeError();
  uint32_t slot = *slotOr;
  int64_t peer = n.attrs.getInt("peer");
  llvm::Error e = llvm::Error::success();
  if (n.op == OpKind::Send) {
    const TensorType &t = g.type(n.operands[0]);
    e = (*grp)->postSend(in, t.numElements(), t.dtype, peer, slot);
  } else if (n.op == OpKind::Recv) {
    const TensorType &t = g.type(n.results[0]);
    e = (*grp)->recv(out, t.numElements(), t.dtype, peer, slot);
  } else {
    return collectiveError(n, "not a send or recv");
  }
  return e ? collectiveError(n, llvm::toString(std::move(e)))
           : llvm::Error::success();
}

} // namespace strata
