//===- MeasuredTablesTest.cpp - OpTime on a calibrated description --------===//
//
// A description from `strata calibrate` carries tables (proto/hardware.proto:
// gemm_table, attention_table, bandwidth_table); OpTime.h says how they are
// read: the GEMM rate of the same transposes interpolated in log shape inside
// the grid, else the nearest sample's rate scaled by FLOPs, the nearest
// attention sample scaled by heads and causal FLOPs, and seconds per byte
// linear in log(bytes) between bandwidth samples. The expected values are
// written out by hand from those rules.
//
//===----------------------------------------------------------------------===//
#include "perf/OpTime.h"

#include "ir/Builder.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata {
namespace {

pb::Hardware measuredCpu() {
  pb::Hardware hw;
  hw.set_name("cpu");
  pb::Accelerator *a = hw.mutable_accelerator();
  a->set_peak_f32_flops(50e9);
  a->set_memory_bandwidth(10e9);
  a->set_memory_bytes(int64_t(1) << 33);
  a->set_kernel_launch_s(2e-6);
  a->set_multiprocessors(1);
  a->set_gemm_tile_m(32);
  a->set_gemm_tile_n(32);
  auto gemm = [&](int64_t m, int64_t n, int64_t k, bool ta, double s) {
    pb::GemmSample *g = a->add_gemm_table();
    g->set_m(m), g->set_n(n), g->set_k(k), g->set_transpose_a(ta);
    g->set_seconds(s);
  };
  gemm(256, 128, 128, false, 1e-4);
  gemm(1024, 512, 512, false, 2e-3);
  gemm(256, 128, 128, true, 3e-4);
  pb::BandwidthSample *b = a->add_bandwidth_table();
  b->set_bytes(1e4), b->set_seconds(1e4 / 100e9); // in cache: 100 GB/s
  b = a->add_bandwidth_table();
  b->set_bytes(1e8), b->set_seconds(1e8 / 10e9); // DRAM: 10 GB/s
  pb::AttentionSample *at = a->add_attention_table();
  at->set_batch_heads(16), at->set_seq(64), at->set_head_dim(32);
  at->set_seconds(1e-3);
  hw.set_devices_per_node(1);
  hw.mutable_intra_node()->set_bandwidth(1e9);
  hw.set_nics_per_node(1);
  hw.mutable_nic()->set_bandwidth(1e9);
  return hw;
}

TEST(MeasuredTablesTest, GemmOutsideTheGridTakesTheNearestRate) {
  pb::Hardware hw = measuredCpu();
  OpTimeModel m(hw, Precision::F32, 50e9);
  // (300, 128, 128) is nearest (256, 128, 128): 300/256 of its time.
  EXPECT_DOUBLE_EQ(m.gemmSeconds(1, 300, 128, 128, 0),
                   1e-4 * 300.0 / 256.0 + 2e-6);
  // (1024, 512, 400) is nearest the big one.
  EXPECT_DOUBLE_EQ(m.gemmSeconds(2, 1024, 512, 400, 0),
                   2 * 2e-3 * 400.0 / 512.0 + 2e-6);
  // A transposed A is its own kernel.
  EXPECT_DOUBLE_EQ(m.gemmSeconds(1, 256, 128, 128, 0, /*transA=*/true),
                   3e-4 + 2e-6);
  // No sample with a transposed B: the nearest shape of any transpose (its
  // rate through exp(log): relative 1e-12).
  EXPECT_NEAR(m.gemmSeconds(1, 256, 128, 128, 0, false, true), 1e-4 + 2e-6,
              1e-16);
}

TEST(MeasuredTablesTest, GemmRateIsInterpolatedInsideTheGrid) {
  // A 2 x 2 x 2 grid, every sample at 10 GFLOP/s but (400, 400, 400) at
  // 80: halfway in log m, log n and log k each corner weighs 1/8 in log
  // rate, so the rate is 10e9 * 8^(1/8).
  pb::Hardware hw = measuredCpu();
  hw.mutable_accelerator()->clear_gemm_table();
  for (int64_t m : {100, 400})
    for (int64_t n : {100, 400})
      for (int64_t k : {100, 400}) {
        pb::GemmSample *g = hw.mutable_accelerator()->add_gemm_table();
        g->set_m(m), g->set_n(n), g->set_k(k);
        double rate = m == 400 && n == 400 && k == 400 ? 80e9 : 10e9;
        g->set_seconds(2.0 * double(m * n * k) / rate);
      }
  OpTimeModel model(hw, Precision::F32, 80e9);
  double rate = 10e9 * std::pow(8.0, 1.0 / 8.0);
  // Relative 1e-12: exp and log round.
  double expected = 2.0 * 200 * 200 * 200 / rate + 2e-6;
  EXPECT_NEAR(model.gemmSeconds(1, 200, 200, 200, 0), expected,
              1e-12 * expected);
  // On a sample: its own time; beyond the grid: the edge's rate.
  EXPECT_NEAR(model.gemmSeconds(1, 400, 400, 400, 0),
              2.0 * 400 * 400 * 400 / 80e9 + 2e-6, 1e-15);
  EXPECT_NEAR(model.gemmSeconds(3, 1600, 400, 400, 0),
              3 * 2.0 * 1600 * 400 * 400 / 80e9 + 2e-6, 1e-12);
}

TEST(MeasuredTablesTest, BandwidthFollowsTheWorkingSet) {
  pb::Hardware hw = measuredCpu();
  OpTimeModel m(hw, Precision::F32, 50e9);
  // At and beyond the samples: their own rate.
  EXPECT_DOUBLE_EQ(m.memorySeconds(1e4), 1e4 / 100e9 + 2e-6);
  EXPECT_DOUBLE_EQ(m.memorySeconds(1e3), 1e3 / 100e9 + 2e-6);
  EXPECT_DOUBLE_EQ(m.memorySeconds(1e9), 1e9 / 10e9 + 2e-6);
  // 1e6 is halfway in log(bytes): seconds per byte halfway between.
  double perByte = 0.5 * (1 / 100e9 + 1 / 10e9);
  EXPECT_NEAR(m.memorySeconds(1e6), 1e6 * perByte + 2e-6, 1e-12);
}

TEST(MeasuredTablesTest, AttentionScalesByHeadsAndCausalWork) {
  pb::Hardware hw = measuredCpu();
  OpTimeModel m(hw, Precision::F32, 50e9);
  Graph g;
  TensorType t{DType::F32, {4, 64, 8, 32}}; // [B, S, H, D]: 32 heads
  ValueId q = g.addInput("q", t), k = g.addInput("k", t),
          v = g.addInput("v", t);
  Attrs causal;
  causal.set("causal", true);
  g.addNode(OpKind::Attention, {q, k, v}, {t}, causal, "");
  Attrs full;
  g.addNode(OpKind::Attention, {q, k, v}, {t}, full, "");
  // 32 heads of the sample's (64, 32): twice its 16; a full (non-causal)
  // attention twice again.
  EXPECT_DOUBLE_EQ(m.nodeSeconds(g, g.nodes()[0], false), 2 * 1e-3 + 2e-6);
  EXPECT_DOUBLE_EQ(m.nodeSeconds(g, g.nodes()[1], false), 4 * 1e-3 + 2e-6);
}

TEST(MeasuredTablesTest, TablesApplyToTheirPrecision) {
  pb::Hardware hw = measuredCpu();
  hw.mutable_accelerator()->set_peak_bf16_flops(100e9);
  OpTimeModel m(hw, Precision::BF16, 100e9);
  // bf16 without bf16 samples: the tile model (32 x 32 tiles, one "SM"),
  // not the f32 table.
  double tiles = std::ceil(300 / 32.0) * 4;
  double tile = 2.0 * 32 * 32 * (128 + OpTimeModel::kFill) / 100e9;
  EXPECT_DOUBLE_EQ(m.gemmSeconds(1, 300, 128, 128, 0), tiles * tile + 2e-6);

  // A bf16 (`half`) sample, as calibrate of a GPU writes them, is what a
  // bf16 GEMM takes, at its rate scaled by FLOPs; f32 keeps the f32 samples.
  pb::GemmSample *g = hw.mutable_accelerator()->add_gemm_table();
  g->set_m(256), g->set_n(128), g->set_k(128), g->set_half(true);
  g->set_seconds(1e-5);
  OpTimeModel bf16(hw, Precision::BF16, 100e9), f32(hw, Precision::F32, 50e9);
  // (Within 1e-12 relative: the rate goes through log and exp.)
  EXPECT_NEAR(bf16.gemmSeconds(1, 512, 128, 128, 0), 2 * 1e-5 + 2e-6,
              1e-12 * 2.2e-5);
  EXPECT_NEAR(f32.gemmSeconds(1, 256, 128, 128, 0), 1e-4 + 2e-6, 1e-12 * 1e-4);
  // tf32 is never measured: the tile model at its peak.
  OpTimeModel tf32(hw, Precision::TF32, 100e9);
  EXPECT_DOUBLE_EQ(tf32.gemmSeconds(1, 300, 128, 128, 0), tiles * tile + 2e-6);

  // Attention likewise: the bf16 sample for bf16, the f32 one for f32.
  pb::AttentionSample *at = hw.mutable_accelerator()->add_attention_table();
  at->set_batch_heads(16), at->set_seq(64), at->set_head_dim(32);
  at->set_half(true), at->set_seconds(4e-4);
  Graph ag;
  TensorType t{DType::F32, {2, 64, 8, 32}}; // 16 heads: the samples' count
  ValueId q = ag.addInput("q", t), k = ag.addInput("k", t),
          v = ag.addInput("v", t);
  Attrs causal;
  causal.set("causal", true);
  ag.addNode(OpKind::Attention, {q, k, v}, {t}, causal, "");
  EXPECT_DOUBLE_EQ(bf16.nodeSeconds(ag, ag.nodes()[0], true), 4e-4 + 2e-6);
  EXPECT_DOUBLE_EQ(f32.nodeSeconds(ag, ag.nodes()[0], false), 1e-3 + 2e-6);
}

} // namespace
} // namespace strata
