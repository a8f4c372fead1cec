//===- CollectivesTest.cpp - Collective, placement and GEMM time models ---===//
//
// The alpha-beta formulas of Collectives.h on a made-up link, checked
// against the textbook terms written out here (Thakur et al. 2005's ring
// all-reduce: 2(n-1) steps moving 2(n-1)/n of the bytes), where groups of a
// pp x dp x tp mesh sit on nodes, and the GEMM model's wave quantization.
//
//===----------------------------------------------------------------------===//
#include "perf/Collectives.h"
#include "perf/OpTime.h"

#include "ir/Builder.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

pb::Hardware testCluster() {
  pb::Hardware hw;
  hw.set_name("test");
  pb::Accelerator *a = hw.mutable_accelerator();
  a->set_peak_f32_flops(100e12);
  a->set_memory_bandwidth(1e12);
  a->set_memory_bytes(int64_t(1) << 34);
  a->set_kernel_launch_s(5e-6);
  a->set_multiprocessors(100);
  a->set_gemm_tile_m(128);
  a->set_gemm_tile_n(64);
  hw.set_devices_per_node(8);
  hw.mutable_intra_node()->set_bandwidth(200e9);
  hw.mutable_intra_node()->set_latency_s(2e-6);
  hw.set_nics_per_node(4);
  hw.mutable_nic()->set_bandwidth(20e9);
  hw.mutable_nic()->set_latency_s(10e-6);
  hw.set_collective_launch_s(7e-6);
  return hw;
}

TEST(CollectivesTest, RingAllReduceIsTextbook) {
  pb::Hardware hw = testCluster();
  LinkModel link{100e9, 3e-6};
  double bytes = double(int64_t(1) << 30);
  for (int64_t n : {2, 4, 8, 64}) {
    double expect = 7e-6 + 2.0 * double(n - 1) * 3e-6 +
                    2.0 * double(n - 1) / double(n) * bytes / 100e9;
    EXPECT_DOUBLE_EQ(collectiveSeconds(OpKind::AllReduce, bytes, n, link, hw,
                                       CollectiveAlgorithm::Ring),
                     expect)
        << n;
    // All-gather and reduce-scatter: half the steps and the traffic.
    double half =
        7e-6 + double(n - 1) * 3e-6 + double(n - 1) / double(n) * bytes / 100e9;
    EXPECT_DOUBLE_EQ(collectiveSeconds(OpKind::AllGather, bytes, n, link, hw,
                                       CollectiveAlgorithm::Auto),
                     half);
    EXPECT_DOUBLE_EQ(collectiveSeconds(OpKind::ReduceScatter, bytes, n, link,
                                       hw, CollectiveAlgorithm::Auto),
                     half);
  }
  EXPECT_EQ(collectiveSeconds(OpKind::AllReduce, bytes, 1, link, hw,
                              CollectiveAlgorithm::Ring),
            0);
}

TEST(CollectivesTest, AutoPicksTreeForSmallMessagesOnManyDevices) {
  pb::Hardware hw = testCluster();
  LinkModel link{100e9, 3e-6};
  // 64 devices, 4 bytes: ring 126 steps, tree 2 * 6 = 12.
  double tree = 7e-6 + 12 * 3e-6 + 2 * 4 / 100e9;
  EXPECT_DOUBLE_EQ(collectiveSeconds(OpKind::AllReduce, 4, 64, link, hw,
                                     CollectiveAlgorithm::Auto),
                   tree);
  // 1 GiB over 8: the ring's 2(n-1)/n < 2 wins.
  double bytes = double(int64_t(1) << 30);
  EXPECT_DOUBLE_EQ(collectiveSeconds(OpKind::AllReduce, bytes, 8, link, hw,
                                     CollectiveAlgorithm::Auto),
                   collectiveSeconds(OpKind::AllReduce, bytes, 8, link, hw,
                                     CollectiveAlgorithm::Ring));
}

TEST(CollectivesTest, GroupsSitOnNodesInMeshOrder) {
  pb::Hardware hw = testCluster(); // 8 devices per node
  Mesh mesh;
  mesh.axes = {{"pp", 2}, {"dp", 4}, {"tp", 2}}; // 16 devices, 2 nodes
  GroupPlacement tp = placeGroup(mesh, {"tp"}, 0, 8);
  EXPECT_EQ(tp.size, 2);
  EXPECT_EQ(tp.nodes, 1);
  GroupPlacement dp = placeGroup(mesh, {"dp"}, 9, 8); // pp 1, dp 0, tp 1
  EXPECT_EQ(dp.size, 4);
  EXPECT_EQ(dp.nodes, 1);
  GroupPlacement pp = placeGroup(mesh, {"pp"}, 3, 8);
  EXPECT_EQ(pp.size, 2);
  EXPECT_EQ(pp.nodes, 2);
  EXPECT_EQ(pp.perNode, 1);
  // Inside a node: the intra-node link.
  LinkModel in = groupLink(hw, tp);
  EXPECT_EQ(in.bandwidth, 200e9);
  EXPECT_EQ(in.latency, 2e-6);
  // Across nodes with 1 of the node's 8 devices: 1/8 of its 4 NICs.
  LinkModel out = groupLink(hw, pp);
  EXPECT_DOUBLE_EQ(out.bandwidth, 4 * 20e9 / 8);
  EXPECT_EQ(out.latency, 10e-6);
  // dp x tp over 32 devices in 4 nodes: 8 per node get all 4 NICs.
  Mesh wide;
  wide.axes = {{"dp", 16}, {"tp", 2}};
  GroupPlacement all = placeGroup(wide, {"dp", "tp"}, 0, 8);
  EXPECT_EQ(all.size, 32);
  EXPECT_EQ(all.nodes, 4);
  EXPECT_DOUBLE_EQ(groupLink(hw, all).bandwidth, 4 * 20e9);
  // Point to point between nodes: a device's share of the NICs.
  EXPECT_DOUBLE_EQ(pairLink(hw, 0, 8).bandwidth, 4 * 20e9 / 8);
  EXPECT_EQ(pairLink(hw, 0, 7).bandwidth, 200e9);
}

TEST(OpTimeTest, GemmWavesQuantize) {
  pb::Hardware hw = testCluster(); // 100 SMs, 128 x 64 tiles
  OpTimeModel model(hw, Precision::F32, 100e12);
  // One tile of depth k on one SM runs at peak / 100.
  double tile = 2.0 * 128 * 64 * (1024 + OpTimeModel::kFill) / 1e12;
  // 100 tiles (10 x 10): one wave; 101 tiles: two.
  EXPECT_DOUBLE_EQ(model.gemmComputeSeconds(1, 1280, 640, 1024), tile);
  EXPECT_DOUBLE_EQ(model.gemmComputeSeconds(1, 1280 + 1, 640, 1024) /
                       (model.gemmComputeSeconds(1, 1280, 640, 1024)),
                   2.0); // 11 x 10 = 110 tiles: two waves
  // A ragged edge pays a whole tile: 129 rows are two tile rows.
  EXPECT_DOUBLE_EQ(model.gemmComputeSeconds(1, 129, 64, 1024),
                   model.gemmComputeSeconds(1, 256, 64, 1024));
  // A batch of 50 two-tile GEMMs is one wave.
  EXPECT_DOUBLE_EQ(model.gemmComputeSeconds(50, 256, 64, 1024), tile);
  // Memory-bound: depth 16 (one wave of 100 tiles, 1.3 us) moving 4.1 MB
  // (4.1 us).
  double bytes = 4.0 * (12800 * 16 + 16 * 64 + 12800 * 64);
  EXPECT_DOUBLE_EQ(model.gemmSeconds(1, 12800, 64, 16, bytes),
                   bytes / 1e12 + 5e-6);
}

TEST(OpTimeTest, MatmulNodesAreTheirGemms) {
  pb::Hardware hw = testCluster();
  OpTimeModel model(hw, Precision::F32, 100e12);
  Graph g;
  ValueId x = g.addInput("x", {DType::F32, {4, 512, 1024}});
  ValueId w = g.addInput("w", {DType::F32, {1024, 640}});
  ValueId y = g.addInput("y", {DType::F32, {4, 1024, 640}});
  Builder b(g);
  // A weight (rank-2 B): the batch dims are rows of one 2048 x 640 GEMM.
  ValueId xw = b.create1(OpKind::MatMul, {x, w});
  // A batched B: 4 GEMMs of 512 x 640.
  ValueId xy = b.create1(OpKind::MatMul, {x, y});
  double bytesXw = 4.0 * (4 * 512 * 1024 + 1024 * 640 + 4 * 512 * 640);
  double bytesXy = 4.0 * (4 * 512 * 1024 + 4 * 1024 * 640 + 4 * 512 * 640);
  EXPECT_DOUBLE_EQ(model.nodeSeconds(g, g.node(g.value(xw).defNode), false),
                   model.gemmSeconds(1, 2048, 640, 1024, bytesXw));
  EXPECT_DOUBLE_EQ(model.nodeSeconds(g, g.node(g.value(xy).defNode), false),
                   model.gemmSeconds(4, 512, 640, 1024, bytesXy));
  // bf16 halves the f32 bytes (the compute is the peak's business).
  EXPECT_DOUBLE_EQ(model.nodeSeconds(g, g.node(g.value(xw).defNode), true),
                   model.gemmSeconds(1, 2048, 640, 1024, bytesXw / 2));
}

} // namespace
} // namespace strata
