//===- ExecutorTest.cpp - Hand-written partitioned graphs on devices ------===//
//
// The multi-device executor without the partitioner: partitioned graphs
// written by hand (Megatron's MLP with all_reduce, and with sequence
// parallelism's all_gather / reduce_scatter) run on every rank of an
// in-process device group and must compute the serial graph's function.
// Also: a failing rank stops every rank quickly and names itself; shards
// and their inverse; torchrun environment errors.
//
//===----------------------------------------------------------------------===//
#include "ir/IRText.h"
#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/parallel/RunPartitioned.h"
#include "runtime/parallel/Sharded.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

namespace strata {
namespace {

using namespace std::chrono_literals;

constexpr const char *kSerialMlp = R"(
graph @mlp(%x: f32[4,6,8], %w1: f32[8,16], %w2: f32[16,8]) {
  %h = matmul(%x, %w1) : f32[4,6,16]
  %g = gelu(%h) {approx="tanh"} : f32[4,6,16]
  %y = matmul(%g, %w2) : f32[4,6,8]
  return %y
}
)";

// Megatron's MLP: column- then row-parallel, one all_reduce.
constexpr const char *kTensorParallelMlp = R"(
graph @mlp mesh<dp=2,tp=2> partitioned(%x: f32[2,6,8] {shard=[dp,_,_]}, %w1: f32[8,8] {shard=[_,tp]}, %w2: f32[8,8] {shard=[tp,_]}) {
  %h = matmul(%x, %w1) : f32[2,6,8] {shard=[dp,_,tp]}
  %g = gelu(%h) {approx="tanh"} : f32[2,6,8] {shard=[dp,_,tp]}
  %yp = matmul(%g, %w2) : f32[2,6,8] {shard=[dp,_,_], partial=[tp]}
  %y = all_reduce(%yp) {axes=["tp"], reduce="sum"} : f32[2,6,8] {shard=[dp,_,_]}
  return %y
}
)";

// With sequence parallelism: the sequence dim is split outside the block.
constexpr const char *kSequenceParallelMlp = R"(
graph @mlp mesh<dp=2,tp=2> partitioned(%x: f32[2,3,8] {shard=[dp,tp,_]}, %w1: f32[8,8] {shard=[_,tp]}, %w2: f32[8,8] {shard=[tp,_]}) {
  %xg = all_gather(%x) {axes=["tp"], dim=1} : f32[2,6,8] {shard=[dp,_,_]}
  %h = matmul(%xg, %w1) : f32[2,6,8] {shard=[dp,_,tp]}
  %g = gelu(%h) {approx="tanh"} : f32[2,6,8] {shard=[dp,_,tp]}
  %yp = matmul(%g, %w2) : f32[2,6,8] {shard=[dp,_,_], partial=[tp]}
  %y = reduce_scatter(%yp) {axes=["tp"], dim=1} : f32[2,3,8] {shard=[dp,tp,_]}
  return %y
}
)";

Graph parse(const char *text) {
  auto g = parseGraph(text);
  EXPECT_TRUE(bool(g)) << llvm::toString(g.takeError());
  return std::move(*g);
}

std::vector<HostTensor> randomInputs(const Graph &g) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<HostTensor> ins;
  for (ValueId v : g.inputs()) {
    HostTensor t(g.type(v));
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, normal(rng));
    ins.push_back(std::move(t));
  }
  return ins;
}

DeviceGroupOptions quick() {
  DeviceGroupOptions o;
  o.timeout = 60s;
  return o;
}

/// Max |a - b| / max |b|: the normwise relative difference.
double relDiff(const HostTensor &a, const HostTensor &b) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < b.numElements(); ++i) {
    worst = std::max(worst, std::abs(a.get(i) - b.get(i)));
    scale = std::max(scale, std::abs(b.get(i)));
  }
  return worst / std::max(scale, 1e-30);
}

void expectMatchesSerial(const char *partitioned) {
  Graph serial = parse(kSerialMlp), par = parse(partitioned);
  std::vector<HostTensor> ins = randomInputs(serial);
  CpuDevice cpu;
  auto interp = Executable::create(serial, cpu);
  ASSERT_TRUE(bool(interp));
  auto want = (*interp)->runHost(ins);
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());

  auto group = DeviceGroup::inProcess(*par.mesh, quick());
  ASSERT_TRUE(bool(group)) << llvm::toString(group.takeError());
  for (int run = 0; run < 2; ++run) { // the groups are reusable
    auto got = runPartitioned(par, **group, ins);
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    ASSERT_EQ((*got)[0].type(), (*want)[0].type());
    // f32: only the order of the K-sum of the second matmul differs.
    EXPECT_LT(relDiff((*got)[0], (*want)[0]), 1e-6);
  }
}

TEST(RunPartitioned, TensorParallelMlpMatchesSerial) {
  expectMatchesSerial(kTensorParallelMlp);
}

TEST(RunPartitioned, SequenceParallelMlpMatchesSerial) {
  expectMatchesSerial(kSequenceParallelMlp);
}

TEST(RunPartitioned, RejectsAGraphForAnotherMesh) {
  Graph par = parse(kTensorParallelMlp);
  Mesh other;
  other.axes = {{"dp", 1}, {"tp", 4}};
  auto group = DeviceGroup::inProcess(other, quick());
  ASSERT_TRUE(bool(group));
  auto p = runPartitioned(par, **group, randomInputs(par));
  ASSERT_FALSE(bool(p));
  EXPECT_NE(llvm::toString(p.takeError())
                .find("cannot run on the device group of mesh<dp=1,tp=4>"),
            std::string::npos);
}

// Rank 2 fails before its first collective; rank 3, blocked in all_gather
// with it, must stop at once (not after the 60 s timeout), and the error
// names rank 2 as the cause. The group refuses further work.
TEST(DeviceGroup, FailingRankStopsItsPeers) {
  Graph par = parse(kSequenceParallelMlp);
  auto group = DeviceGroup::inProcess(*par.mesh, quick());
  ASSERT_TRUE(bool(group));
  DeviceGroup &g = **group;
  std::vector<std::unique_ptr<Executable>> interps;
  for (size_t l = 0; l < g.numLocal(); ++l)
    interps.push_back(std::move(*Executable::create(par, g.device(l))));
  std::vector<HostTensor> ins;
  for (ValueId v : par.inputs())
    ins.emplace_back(par.type(v));
  std::vector<const void *> ptrs;
  for (const HostTensor &t : ins)
    ptrs.push_back(t.raw());

  auto start = std::chrono::steady_clock::now();
  llvm::Error e = g.forEachRank([&](size_t l) -> llvm::Error {
    if (g.globalRank(l) == 2) {
      std::this_thread::sleep_for(200ms);
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "injected fault");
    }
    std::vector<void *> outs;
    return interps[l]->run(ptrs, outs, g.context(l));
  });
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(secs, 10.0);
  std::string msg = llvm::toString(std::move(e));
  EXPECT_EQ(msg.rfind("rank 2: injected fault (ranks 3 stopped with it)", 0),
            0u)
      << msg;

  llvm::Error again =
      g.forEachRank([](size_t) { return llvm::Error::success(); });
  EXPECT_NE(llvm::toString(std::move(again))
                .find("unusable after an earlier failure (rank 2 failed)"),
            std::string::npos);
}

TEST(Sharded, ShardOfAndGatherFullAreInverse) {
  Mesh mesh;
  mesh.axes = {{"dp", 2}, {"tp", 2}};
  HostTensor full(TensorType{DType::F32, {4, 6}});
  for (int64_t i = 0; i < full.numElements(); ++i)
    full.set(i, double(i));
  Sharding s = Sharding::replicated(2);
  s.dims[0] = {"tp"};
  s.dims[1] = {"dp"};
  std::vector<HostTensor> blocks;
  for (int64_t r = 0; r < 4; ++r)
    blocks.push_back(std::move(*shardOf(full, s, mesh, r)));
  EXPECT_EQ(blocks[1].type().str(), "f32[2,3]");
  EXPECT_EQ(blocks[1].get(0),
            12.0); // rank 1: tp=1 -> rows 2..3, dp=0 -> cols 0..2
  EXPECT_EQ(blocks[2].get(0), 3.0); // rank 2: tp=0, dp=1 -> cols 3..5
  auto back = gatherFull(blocks, s, mesh);
  ASSERT_TRUE(bool(back));
  for (int64_t i = 0; i < full.numElements(); ++i)
    EXPECT_EQ(back->get(i), full.get(i));

  Sharding partial = Sharding::replicated(2);
  partial.partial = {"dp"};
  std::vector<HostTensor> parts;
  for (int64_t r = 0; r < 4; ++r)
    parts.push_back(std::move(*shardOf(full, partial, mesh, r)));
  EXPECT_EQ(parts[2].get(5), 0.0); // dp coordinate 1 holds zeros
  auto sum = gatherFull(parts, partial, mesh);
  ASSERT_TRUE(bool(sum));
  EXPECT_EQ(sum->get(5), 5.0);

  auto bad = shardOf(HostTensor(TensorType{DType::F32, {3, 6}}), s, mesh, 0);
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("does not split 2 ways"),
            std::string::npos);
}

TEST(DistEnv, ReadsTorchrunVariablesAndRejectsBadOnes) {
  unsetenv("WORLD_SIZE");
  auto none = DistEnv::fromEnvironment();
  ASSERT_TRUE(bool(none));
  EXPECT_FALSE(none->has_value());

  setenv("WORLD_SIZE", "4", 1);
  unsetenv("RANK");
  auto noRank = DistEnv::fromEnvironment();
  ASSERT_FALSE(bool(noRank));
  EXPECT_NE(llvm::toString(noRank.takeError()).find("RANK is not"),
            std::string::npos);

  setenv("RANK", "3", 1);
  setenv("MASTER_ADDR", "10.0.0.7", 1);
  setenv("MASTER_PORT", "1234", 1);
  auto env = DistEnv::fromEnvironment();
  ASSERT_TRUE(bool(env) && env->has_value());
  EXPECT_EQ((*env)->rank, 3);
  EXPECT_EQ((*env)->localWorldSize, 4);
  EXPECT_EQ((*env)->masterAddr, "10.0.0.7");
  EXPECT_EQ((*env)->masterPort, 1234);

  setenv("RANK", "4", 1);
  auto big = DistEnv::fromEnvironment();
  ASSERT_FALSE(bool(big));
  EXPECT_NE(llvm::toString(big.takeError()).find("not below WORLD_SIZE=4"),
            std::string::npos);

  Mesh mesh;
  mesh.axes = {{"dp", 2}, {"tp", 2}};
  DistEnv three;
  three.worldSize = 3;
  auto g = DeviceGroup::multiProcess(mesh, three);
  ASSERT_FALSE(bool(g));
  EXPECT_NE(
      llvm::toString(g.takeError())
          .find("WORLD_SIZE=3 processes for mesh<dp=2,tp=2> of 4 devices"),
      std::string::npos);
  for (const char *v : {"WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT"})
    unsetenv(v);
}

} // namespace
} // namespace strata
