//===- OpTableTest.cpp - Memory-bound kernels' measured compute floors ----===//
//
// A CPU calibration carries an op table (proto/hardware.proto: OpSample,
// perf/Calibrate.h): seconds per element by op, or by a fused node's body
// ops. OpTime.h reads it: a memory-bound kernel takes the larger of its
// bytes over the bandwidth and its elements (largest operand or result)
// times its key's rate; a fused GEMM adds its epilogue's entry to the
// GEMM; a fused node the table lacks sums its body's entries. The expected
// values are written out by hand from those rules.
//
//===----------------------------------------------------------------------===//
#include "perf/OpTime.h"

#include "ir/Builder.h"
#include "ir/Op.h"

#include <gtest/gtest.h>

#include <memory>

namespace strata {
namespace {

constexpr double kLaunch = 1e-6, kBandwidth = 100e9;

pb::Hardware
withOps(std::initializer_list<std::pair<const char *, double>> perElement) {
  pb::Hardware hw;
  hw.set_name("cpu");
  pb::Accelerator *a = hw.mutable_accelerator();
  a->set_peak_f32_flops(100e9);
  a->set_memory_bandwidth(kBandwidth);
  a->set_memory_bytes(int64_t(1) << 33);
  a->set_kernel_launch_s(kLaunch);
  a->set_multiprocessors(1);
  a->set_gemm_tile_m(32);
  a->set_gemm_tile_n(32);
  // One GEMM sample: (768, 512, 128) NN in 1 ms.
  pb::GemmSample *g = a->add_gemm_table();
  g->set_m(768), g->set_n(512), g->set_k(128), g->set_seconds(1e-3);
  for (auto [op, s] : perElement) {
    pb::OpSample *x = a->add_op_table();
    // 1000 elements in 1000 * s seconds: s per element.
    x->set_op(op), x->set_elements(1000), x->set_seconds(1000 * s);
  }
  hw.set_devices_per_node(1);
  return hw;
}

TEST(OpTableTest, AKernelTakesTheLargerOfBytesAndItsComputeFloor) {
  Graph g;
  TensorType x{DType::F32, {768, 128}}, v{DType::F32, {128}};
  ValueId in = g.addInput("x", x), gamma = g.addInput("g", v),
          beta = g.addInput("b", v);
  ValueId y =
      Builder(g).create1(OpKind::LayerNorm, {in, gamma, beta}, {{"eps", 1e-5}});
  g.addOutput(y);
  const Node &n = g.nodes().back();
  // Bytes: x and y (393216 each) and gamma, beta (512 each).
  double moved = 2 * 393216.0 + 2 * 512.0;
  // Without a table entry: the bandwidth alone (7.9 us).
  pb::Hardware none = withOps({{"gelu", 1e-9}});
  OpTimeModel bw(none, Precision::F32, 100e9);
  EXPECT_DOUBLE_EQ(bw.nodeSeconds(g, n, false), moved / kBandwidth + kLaunch);
  // 2 ns per element of x (98304): 197 us, over the bytes' 7.9 us.
  pb::Hardware slow = withOps({{"layer_norm", 2e-9}});
  OpTimeModel m(slow, Precision::F32, 100e9);
  EXPECT_DOUBLE_EQ(m.nodeSeconds(g, n, false), 98304 * 2e-9 + kLaunch);
  // 0.01 ns per element: the bytes take longer.
  pb::Hardware fast = withOps({{"layer_norm", 1e-11}});
  OpTimeModel f(fast, Precision::F32, 100e9);
  EXPECT_DOUBLE_EQ(f.nodeSeconds(g, n, false), moved / kBandwidth + kLaunch);
}

/// A graph of one fused node: gelu(a @ w + bias), a [768, 128],
/// w [128, 512].
struct FusedGemm {
  Graph g;
  const Node *node = nullptr;
  FusedGemm() {
    TensorType at{DType::F32, {768, 128}}, wt{DType::F32, {128, 512}},
        bt{DType::F32, {768, 512}};
    auto body = std::make_shared<Graph>();
    {
      ValueId a = body->addInput("a", at), w = body->addInput("w", wt),
              b = body->addInput("b", bt);
      Builder bb(*body);
      body->addOutput(bb.create1(OpKind::Gelu, {bb.add(bb.matmul(a, w), b)}));
    }
    ValueId a = g.addInput("a", at), w = g.addInput("w", wt),
            b = g.addInput("b", bt);
    int32_t i = g.addNode(OpKind::Fused, {a, w, b}, {bt}, Attrs(), "");
    g.node(i).body = body;
    g.addOutput(g.node(i).results[0]);
    node = &g.nodes().back();
  }
};

TEST(OpTableTest, AFusedGemmAddsItsEpilogue) {
  FusedGemm f;
  // The GEMM: its sample, 1 ms, plus a launch. The epilogue's entry, 0.5
  // ns per element of the largest tensor (768 x 512 = 393216): 197 us.
  pb::Hardware hw = withOps(
      {{"fused(matmul,add,gelu)", 0.5e-9}, {"gelu", 1e-9}, {"add", 1e-9}});
  OpTimeModel m(hw, Precision::F32, 100e9);
  EXPECT_NEAR(m.nodeSeconds(f.g, *f.node, false),
              1e-3 + kLaunch + 393216 * 0.5e-9, 1e-12);
  // Without the fused entry: the body's gelu and add (1 ns per element of
  // 393216 each; the body's matmul has none).
  pb::Hardware body = withOps({{"gelu", 1e-9}, {"add", 1e-9}});
  OpTimeModel b(body, Precision::F32, 100e9);
  EXPECT_NEAR(b.nodeSeconds(f.g, *f.node, false),
              1e-3 + kLaunch + 2 * 393216 * 1e-9, 1e-12);
  EXPECT_EQ(opTableKey(*f.node), "fused(matmul,add,gelu)");
}

} // namespace
} // namespace strata
