//===- CommunicatorTest.cpp - Gloo collectives against serial math --------===//
//
// Ranks are threads with in-process Gloo communicators (and, for the TCP
// store path, one rendezvous per rank as separate processes would have).
// Every collective op of a graph (runtime/comm/CollectiveKernels) runs on
// each rank of a group of 2 or 4, in f32 and f64, along the outer and inner
// dims, and is compared with the op's definition computed serially from all
// ranks' inputs. Sums are compared bit for bit with the left fold in group
// rank order: that order is the communicator's contract (deterministic
// reductions), not an approximation.
//
//===----------------------------------------------------------------------===//
#include "runtime/HostTensor.h"
#include "runtime/comm/CollectiveKernels.h"
#include "runtime/comm/GlooCommunicator.h"
#include "runtime/comm/TcpStore.h"
#include "runtime/kernels/Float16.h"

#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

namespace strata {
namespace {

using namespace std::chrono_literals;

Mesh makeMesh(std::initializer_list<std::pair<const char *, int64_t>> axes) {
  Mesh m;
  for (auto [name, size] : axes)
    m.axes.push_back({name, size});
  return m;
}

/// Runs fn(rank) on one thread per rank; returns each rank's error text
/// ("" for success).
std::vector<std::string>
onRanks(int64_t n, const std::function<llvm::Error(int64_t)> &fn) {
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      if (llvm::Error e = fn(r))
        errors[r] = llvm::toString(std::move(e));
    });
  for (std::thread &t : threads)
    t.join();
  return errors;
}

void expectAllOk(const std::vector<std::string> &errors) {
  for (size_t r = 0; r < errors.size(); ++r)
    EXPECT_EQ(errors[r], "") << "rank " << r;
}

HostTensor randomTensor(TensorType t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  HostTensor x(t);
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.set(i, u(rng));
  return x;
}

/// Block `index` of `n` along `dim`.
HostTensor sliceDim(const HostTensor &x, int64_t dim, int64_t index,
                    int64_t n) {
  TensorType t = x.type();
  int64_t size = t.shape[dim] / n;
  t.shape[dim] = size;
  HostTensor y(t);
  int64_t inner =
      numElements(llvm::ArrayRef<int64_t>(t.shape).drop_front(dim + 1));
  int64_t outer = numElements(llvm::ArrayRef<int64_t>(t.shape).take_front(dim));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < size * inner; ++i)
      y.set(o * size * inner + i,
            x.get((o * x.shape()[dim] + index * size) * inner + i));
  return y;
}

HostTensor concatDim(llvm::ArrayRef<HostTensor> xs, int64_t dim) {
  TensorType t = xs[0].type();
  int64_t size = t.shape[dim];
  t.shape[dim] *= int64_t(xs.size());
  HostTensor y(t);
  int64_t inner =
      numElements(llvm::ArrayRef<int64_t>(t.shape).drop_front(dim + 1));
  int64_t outer = numElements(llvm::ArrayRef<int64_t>(t.shape).take_front(dim));
  for (int64_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < xs.size(); ++j)
      for (int64_t i = 0; i < size * inner; ++i)
        y.set((o * t.shape[dim] + int64_t(j) * size) * inner + i,
              xs[j].get(o * size * inner + i));
  return y;
}

/// The left fold over `xs` in order, in the tensors' own dtype.
HostTensor foldInOrder(llvm::ArrayRef<HostTensor> xs, bool max) {
  HostTensor y = xs[0].clone();
  for (size_t j = 1; j < xs.size(); ++j)
    for (int64_t i = 0; i < y.numElements(); ++i) {
      if (y.dtype() == DType::F32) {
        float a = y.data<float>()[i], b = xs[j].data<float>()[i];
        y.data<float>()[i] = max ? std::max(a, b) : a + b;
      } else {
        double a = y.data<double>()[i], b = xs[j].data<double>()[i];
        y.data<double>()[i] = max ? std::max(a, b) : a + b;
      }
    }
  return y;
}

struct Case {
  const char *name;
  OpKind op;
  Attrs attrs;
  Shape inShape;
};

/// A graph of one collective over `mesh`; returns its node.
Graph oneNodeGraph(const Mesh &mesh, const Case &c, DType dt, Shape outShape) {
  Graph g;
  g.name = "collective";
  g.mesh = mesh;
  g.partitioned = true;
  ValueId x = g.addInput("x", TensorType{dt, c.inShape});
  int32_t n = g.addNode(c.op, {x}, {TensorType{dt, outShape}}, c.attrs, "test");
  g.addOutput(g.node(n).results[0]);
  return g;
}

/// The expected output of `c` on `rank` given every rank's input.
HostTensor expected(const Mesh &mesh, const Case &c, int64_t rank,
                    llvm::ArrayRef<HostTensor> inputs) {
  StrList axes = c.attrs.getStrings("axes");
  std::vector<HostTensor> group;
  for (int64_t q : groupRanks(mesh, rank, axes))
    group.push_back(inputs[q]);
  int64_t n = int64_t(group.size()), me = shardIndex(mesh, rank, axes);
  switch (c.op) {
  case OpKind::AllReduce:
    return foldInOrder(group, c.attrs.getString("reduce") == "max");
  case OpKind::AllGather:
    return concatDim(group, c.attrs.getInt("dim"));
  case OpKind::ReduceScatter:
    return sliceDim(foldInOrder(group, false), c.attrs.getInt("dim"), me, n);
  case OpKind::AllToAll: {
    std::vector<HostTensor> blocks;
    for (const HostTensor &x : group)
      blocks.push_back(sliceDim(x, c.attrs.getInt("split_dim"), me, n));
    return concatDim(blocks, c.attrs.getInt("concat_dim"));
  }
  case OpKind::BroadcastFrom:
    return group[c.attrs.getInt("root")].clone();
  default:
    ADD_FAILURE() << "no reference for " << opName(c.op).str();
    return HostTensor();
  }
}

Shape outShapeOf(const Mesh &mesh, const Case &c) {
  Shape s = c.inShape;
  int64_t n = 1;
  for (const std::string &a : c.attrs.getStrings("axes"))
    n *= mesh.axisSize(a);
  if (c.op == OpKind::AllGather)
    s[c.attrs.getInt("dim")] *= n;
  if (c.op == OpKind::ReduceScatter)
    s[c.attrs.getInt("dim")] /= n;
  if (c.op == OpKind::AllToAll) {
    s[c.attrs.getInt("split_dim")] /= n;
    s[c.attrs.getInt("concat_dim")] *= n;
  }
  return s;
}

void runCase(const Mesh &mesh, const Case &c, DType dt) {
  SCOPED_TRACE(std::string(c.name) + " " + dtypeName(dt).str());
  Graph g = oneNodeGraph(mesh, c, dt, outShapeOf(mesh, c));
  int64_t n = mesh.numDevices();
  std::vector<HostTensor> inputs, outputs;
  for (int64_t r = 0; r < n; ++r) {
    inputs.push_back(randomTensor(TensorType{dt, c.inShape}, 100 + r));
    outputs.emplace_back(g.type(g.outputs()[0]));
  }
  auto rdv = GlooRendezvous::inProcess(30s);
  // No rank closes its connections before every rank has its result: a
  // peer's close can reset a connection whose last bytes are still unread
  // ("Connection reset by peer", seen under ctest -j2).
  std::barrier done(n);
  expectAllOk(onRanks(n, [&](int64_t r) {
    auto comms = createGlooCommunicators(mesh, r, rdv);
    llvm::Error e = runCollective(g, g.nodes()[0], inputs[r].raw(),
                                  outputs[r].raw(), comms.get());
    done.arrive_and_wait();
    return e;
  }));
  for (int64_t r = 0; r < n; ++r) {
    HostTensor want = expected(mesh, c, r, inputs);
    ASSERT_EQ(outputs[r].type(), want.type()) << "rank " << r;
    for (int64_t i = 0; i < want.numElements(); ++i)
      ASSERT_EQ(outputs[r].get(i), want.get(i))
          << "rank " << r << " element " << i;
  }
}

Attrs on(StrList axes,
         std::initializer_list<std::pair<std::string, AttrValue>> more = {}) {
  Attrs a(more);
  a.set("axes", std::move(axes));
  return a;
}

std::vector<Case> cases() {
  return {
      {"all_reduce_sum",
       OpKind::AllReduce,
       on({"tp"}, {{"reduce", std::string("sum")}}),
       {3, 5, 7}},
      {"all_reduce_max",
       OpKind::AllReduce,
       on({"tp"}, {{"reduce", std::string("max")}}),
       {3, 5}},
      {"all_reduce_world",
       OpKind::AllReduce,
       on({"dp", "tp"}, {{"reduce", std::string("sum")}}),
       {17}},
      // Over 64 KiB: the reduce-scatter + all-gather path, with padding.
      {"all_reduce_large",
       OpKind::AllReduce,
       on({"tp"}, {{"reduce", std::string("sum")}}),
       {129, 70}},
      {"all_reduce_dp",
       OpKind::AllReduce,
       on({"dp"}, {{"reduce", std::string("sum")}}),
       {2, 3}},
      {"all_gather_outer",
       OpKind::AllGather,
       on({"tp"}, {{"dim", int64_t(0)}}),
       {2, 3}},
      {"all_gather_inner",
       OpKind::AllGather,
       on({"tp"}, {{"dim", int64_t(1)}}),
       {2, 3, 4}},
      {"all_gather_last",
       OpKind::AllGather,
       on({"dp", "tp"}, {{"dim", int64_t(2)}}),
       {2, 3, 2}},
      {"reduce_scatter_outer",
       OpKind::ReduceScatter,
       on({"tp"}, {{"dim", int64_t(0)}}),
       {4, 3}},
      {"reduce_scatter_inner",
       OpKind::ReduceScatter,
       on({"tp"}, {{"dim", int64_t(1)}}),
       {3, 8, 2}},
      {"reduce_scatter_world",
       OpKind::ReduceScatter,
       on({"dp", "tp"}, {{"dim", int64_t(1)}}),
       {2, 8}},
      {"all_to_all",
       OpKind::AllToAll,
       on({"tp"}, {{"split_dim", int64_t(1)}, {"concat_dim", int64_t(2)}}),
       {2, 4, 3}},
      {"all_to_all_outer",
       OpKind::AllToAll,
       on({"tp"}, {{"split_dim", int64_t(0)}, {"concat_dim", int64_t(1)}}),
       {4, 3}},
      {"all_to_all_same_dim",
       OpKind::AllToAll,
       on({"tp"}, {{"split_dim", int64_t(1)}, {"concat_dim", int64_t(1)}}),
       {3, 4}},
      {"broadcast_from",
       OpKind::BroadcastFrom,
       on({"tp"}, {{"root", int64_t(1)}}),
       {5, 2}},
  };
}

TEST(Collectives, GroupsOfTwoInMeshOfFour) {
  Mesh mesh = makeMesh({{"dp", 2}, {"tp", 2}});
  for (const Case &c : cases())
    for (DType dt : {DType::F32, DType::F64})
      runCase(mesh, c, dt);
}

TEST(Collectives, GroupOfFour) {
  Mesh mesh = makeMesh({{"dp", 1}, {"tp", 4}});
  for (const Case &c : cases())
    if (c.op != OpKind::ReduceScatter ||
        c.inShape[c.attrs.getInt("dim")] % 4 == 0)
      for (DType dt : {DType::F32, DType::F64})
        runCase(mesh, c, dt);
}

TEST(Collectives, SizeOneAxesNeedNoCommunicators) {
  Mesh mesh = makeMesh({{"dp", 1}, {"tp", 1}});
  Case c{
      "all_gather", OpKind::AllGather, on({"tp"}, {{"dim", int64_t(0)}}), {2}};
  Graph g = oneNodeGraph(mesh, c, DType::F32, {2});
  HostTensor x = randomTensor(TensorType{DType::F32, {2}}, 1), y(x.type());
  ASSERT_FALSE(bool(runCollective(g, g.nodes()[0], x.raw(), y.raw(), nullptr)));
  EXPECT_EQ(y.get(1), x.get(1));

  Graph wide = oneNodeGraph(makeMesh({{"tp", 2}}), c, DType::F32, {4});
  HostTensor z(TensorType{DType::F32, {4}});
  llvm::Error e =
      runCollective(wide, wide.nodes()[0], x.raw(), z.raw(), nullptr);
  EXPECT_NE(llvm::toString(std::move(e)).find("needs communicators"),
            std::string::npos);
}

TEST(Communicator, SendRecvAndReductionsOfIntegersFail) {
  Mesh mesh = makeMesh({{"tp", 2}});
  auto rdv = GlooRendezvous::inProcess(30s);
  std::vector<double> got(3);
  expectAllOk(onRanks(2, [&](int64_t r) -> llvm::Error {
    auto comms = createGlooCommunicators(mesh, r, rdv);
    auto c = comms->group({"tp"});
    if (!c)
      return c.takeError();
    double buf[3] = {1.5 * (r + 1), 2.5, -3.0};
    if (r == 0)
      return (*c)->send(buf, 3, DType::F64, 1, 7);
    if (auto e = (*c)->recv(got.data(), 3, DType::F64, 0, 7))
      return e;
    int32_t ints[2] = {1, 2};
    llvm::Error e = (*c)->allReduce(ints, 2, DType::I32, ReduceOp::Sum);
    EXPECT_TRUE(bool(e));
    llvm::consumeError(std::move(e));
    return llvm::Error::success();
  }));
  EXPECT_EQ(got, (std::vector<double>{1.5, 2.5, -3.0}));
}

// bf16 / f16 reductions move 16-bit values and add them in f32 in rank
// order, rounding once (NCCL's bf16 semantics; CollectiveKernels' f32
// path gives the same bits): bit for bit the left fold of the widened
// values, rounded. All-reduce below and above the one-round size (64 KiB),
// max, and reduce-scatter, over 4 ranks.
TEST(Communicator, Float16ReductionsAddInF32AndRoundOnce) {
  Mesh mesh = makeMesh({{"tp", 4}});
  for (DType dt : {DType::BF16, DType::F16}) {
    auto widen = [&](uint16_t h) {
      return dt == DType::BF16 ? kernels::bf16ToFloat(h)
                               : kernels::halfToFloat(h);
    };
    auto narrow = [&](float f) {
      return dt == DType::BF16 ? kernels::floatToBf16(f)
                               : kernels::floatToHalf(f);
    };
    for (int64_t count : {int64_t(100), int64_t(20000)}) {
      std::vector<std::vector<uint16_t>> in(4, std::vector<uint16_t>(count));
      std::mt19937 rng{unsigned(count)};
      std::uniform_real_distribution<float> u(-3, 3);
      for (auto &v : in)
        for (uint16_t &h : v)
          h = narrow(u(rng));
      std::vector<uint16_t> sum(count), max(count);
      for (int64_t i = 0; i < count; ++i) {
        float s = widen(in[0][i]), m = s;
        for (int r = 1; r < 4; ++r) {
          s += widen(in[r][i]);
          m = std::max(m, widen(in[r][i]));
        }
        sum[i] = narrow(s);
        max[i] = narrow(m);
      }
      std::vector<std::vector<uint16_t>> gotSum = in, gotMax = in,
                                         gotScatter(4);
      auto rdv = GlooRendezvous::inProcess(30s);
      expectAllOk(onRanks(4, [&](int64_t r) -> llvm::Error {
        auto comms = createGlooCommunicators(mesh, r, rdv);
        auto c = comms->group({"tp"});
        if (!c)
          return c.takeError();
        if (auto e =
                (*c)->allReduce(gotSum[r].data(), count, dt, ReduceOp::Sum))
          return e;
        if (auto e =
                (*c)->allReduce(gotMax[r].data(), count, dt, ReduceOp::Max))
          return e;
        gotScatter[r].resize(count / 4);
        return (*c)->reduceScatter(in[r].data(), gotScatter[r].data(),
                                   count / 4, dt, ReduceOp::Sum);
      }));
      for (int r = 0; r < 4; ++r) {
        EXPECT_EQ(gotSum[r], sum) << dtypeName(dt).str() << " " << count;
        EXPECT_EQ(gotMax[r], max) << dtypeName(dt).str() << " " << count;
        EXPECT_EQ(gotScatter[r],
                  std::vector<uint16_t>(sum.begin() + r * (count / 4),
                                        sum.begin() + (r + 1) * (count / 4)))
            << dtypeName(dt).str() << " " << count;
      }
    }
  }
}

// A rank that fails closes its connections: peers blocked in a collective
// with it fail at once, long before the 60 s timeout.
TEST(Communicator, FailedRankReleasesBlockedPeers) {
  Mesh mesh = makeMesh({{"dp", 2}, {"tp", 2}});
  auto rdv = GlooRendezvous::inProcess(60s);
  auto start = std::chrono::steady_clock::now();
  auto errors = onRanks(4, [&](int64_t r) -> llvm::Error {
    auto comms = createGlooCommunicators(mesh, r, rdv);
    auto world = comms->group({"dp", "tp"});
    if (!world)
      return world.takeError();
    if (r == 0) {
      std::this_thread::sleep_for(300ms); // the others are blocked by now
      comms->abort("rank 0 failed");
      return llvm::Error::success();
    }
    std::vector<float> buf(1000, 1.0f);
    return (*world)->allReduce(buf.data(), 1000, DType::F32, ReduceOp::Sum);
  });
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(secs, 10.0);
  for (int64_t r = 1; r < 4; ++r)
    EXPECT_NE(errors[r], "") << "rank " << r;
}

// Ranks in separate processes share no abort flag: closing the connections
// alone must release the peers. Each rank has its own TCP rendezvous here.
TEST(Communicator, TcpRendezvousAndConnectionLoss) {
  auto server = TcpStoreServer::start(0);
  ASSERT_TRUE(bool(server)) << llvm::toString(server.takeError());
  int port = (*server)->port();
  Mesh mesh = makeMesh({{"tp", 3}});
  std::vector<float> sums(3);
  auto start = std::chrono::steady_clock::now();
  auto errors = onRanks(3, [&](int64_t r) -> llvm::Error {
    auto rdv = GlooRendezvous::tcp("127.0.0.1", port, false, "127.0.0.1", 60s);
    if (!rdv)
      return rdv.takeError();
    auto comms = createGlooCommunicators(mesh, r, *rdv);
    auto tp = comms->group({"tp"});
    if (!tp)
      return tp.takeError();
    float x = float(r + 1);
    if (auto e = (*tp)->allReduce(&x, 1, DType::F32, ReduceOp::Sum))
      return e;
    sums[r] = x;
    if (r == 2) {
      comms.reset(); // as if the process exited
      return llvm::Error::success();
    }
    return (*tp)->allReduce(&x, 1, DType::F32, ReduceOp::Sum);
  });
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(secs, 10.0);
  EXPECT_EQ(sums, (std::vector<float>{6, 6, 6}));
  EXPECT_NE(errors[0], "");
  EXPECT_NE(errors[1], "");
  EXPECT_EQ(errors[2], "");
}

TEST(Communicator, MissingRankTimesOut) {
  Mesh mesh = makeMesh({{"tp", 2}});
  auto rdv = GlooRendezvous::inProcess(500ms);
  auto comms = createGlooCommunicators(mesh, 0, rdv);
  auto start = std::chrono::steady_clock::now();
  auto c = comms->group({"tp"});
  ASSERT_FALSE(bool(c));
  EXPECT_NE(llvm::toString(c.takeError()).find("connecting group [tp]"),
            std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 35s);
}

TEST(TcpStore, SetGetWaitAndTimeout) {
  auto server = TcpStoreServer::start(0);
  ASSERT_TRUE(bool(server)) << llvm::toString(server.takeError());
  auto a = TcpStore::connect("127.0.0.1", (*server)->port(), 1s);
  auto b = TcpStore::connect("localhost", (*server)->port(), 1s);
  ASSERT_TRUE(a && b);
  std::thread later([&] {
    std::this_thread::sleep_for(50ms);
    (*a)->set("k", {'h', 'i'});
  });
  EXPECT_EQ((*b)->get("k"), (std::vector<char>{'h', 'i'}));
  later.join();
  EXPECT_THROW((*b)->wait({"never"}, 100ms), std::exception);
  auto none = TcpStore::connect("127.0.0.1", 1, 100ms); // nothing listens
  EXPECT_FALSE(bool(none));
  llvm::consumeError(none.takeError());
}

// A client's will: once its connection ends (its process died), the server
// sets the key, and a wait for keys that client would have set fails at
// once instead of after its timeout (a rank killed during the rendezvous).
TEST(TcpStore, AClientsWillEndsTheWaitsForIt) {
  auto server = TcpStoreServer::start(0);
  ASSERT_TRUE(bool(server)) << llvm::toString(server.takeError());
  auto dying = TcpStore::connect("127.0.0.1", (*server)->port(), 1s);
  auto waiting = TcpStore::connect("127.0.0.1", (*server)->port(), 1s);
  ASSERT_TRUE(dying && waiting);
  std::string will = "rank 1 exited";
  (*dying)->setWill(kRankExitedKey, {will.begin(), will.end()});
  std::vector<char> v;
  EXPECT_FALSE((*waiting)->tryGet(kRankExitedKey, v)); // alive: not yet
  std::thread dies([&] {
    std::this_thread::sleep_for(50ms);
    dying->reset(); // closes the connection
  });
  auto start = std::chrono::steady_clock::now();
  try {
    (*waiting)->wait({"group/dp/0/1"}, 60s);
    ADD_FAILURE() << "the wait ended without its key";
  } catch (const std::exception &e) {
    EXPECT_STREQ(e.what(), "tcp store: rank 1 exited while this rank waited "
                           "for 'group/dp/0/1'");
  }
  dies.join();
  // The will is read every 100 ms: far below the 60 s the wait had.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

} // namespace
} // namespace strata
