//===- LayoutTest.cpp - transpose, broadcastTo, slice, concat, reduce -----===//
#include "runtime/kernels/Layout.h"
#include "runtime/kernels/Reduce.h"

#include "TestUtil.h"

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// Multi-index of flat index f in shape s.
Shape unflatten(int64_t f, const Shape &s) {
  Shape idx(s.size());
  for (int d = int(s.size()) - 1; d >= 0; --d) {
    idx[d] = f % s[d];
    f /= s[d];
  }
  return idx;
}

int64_t flatten(const Shape &idx, const Shape &s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d)
    f = f * s[d] + idx[d];
  return f;
}

TEST(Layout, TransposeMatchesNaive) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3}, {1, 0}},
      {{2, 3, 4}, {0, 2, 1}},
      {{2, 3, 4}, {2, 0, 1}},
      {{2, 3, 4, 5}, {0, 2, 1, 3}}, // [B,S,H,D] -> [B,H,S,D]
      {{2, 1, 3, 2}, {3, 1, 0, 2}},
      {{3, 4}, {0, 1}},
      {{2, 3, 4}, {-1, 0, 1}}};
  Rng rng;
  for (auto &[shape, perm] : cases) {
    std::vector<double> x = rng.normal(numel(shape)), y(x.size()),
                        ref(x.size());
    Shape yShape(shape.size());
    for (size_t i = 0; i < perm.size(); ++i)
      yShape[i] = shape[perm[i] < 0 ? perm[i] + shape.size() : perm[i]];
    for (int64_t f = 0; f < numel(yShape); ++f) {
      Shape yi = unflatten(f, yShape), xi(shape.size());
      for (size_t i = 0; i < perm.size(); ++i)
        xi[perm[i] < 0 ? perm[i] + shape.size() : perm[i]] = yi[i];
      ref[f] = x[flatten(xi, shape)];
    }
    transpose(x.data(), shape, perm, y.data());
    EXPECT_TRUE(allClose("transpose", y, ref, 0, 0, yShape));
  }
}

TEST(Layout, BroadcastToMatchesNaive) {
  const std::vector<std::pair<Shape, Shape>> cases = {{{4}, {2, 3, 4}},
                                                      {{3, 1}, {2, 3, 4}},
                                                      {{}, {2, 2}},
                                                      {{1, 3, 1}, {2, 3, 5}}};
  Rng rng;
  for (auto &[xs, ys] : cases) {
    std::vector<double> x = rng.normal(numel(xs)), y(numel(ys)), ref(y.size());
    for (int64_t f = 0; f < numel(ys); ++f) {
      Shape yi = unflatten(f, ys), xi(xs.size());
      for (size_t d = 0; d < xs.size(); ++d)
        xi[d] = xs[d] == 1 ? 0 : yi[ys.size() - xs.size() + d];
      ref[f] = x[flatten(xi, xs)];
    }
    broadcastTo(x.data(), xs, y.data(), ys);
    EXPECT_TRUE(allClose("broadcastTo", y, ref, 0, 0, ys));
  }
}

TEST(Layout, SliceAndConcatMatchNaive) {
  Shape xs = {3, 5, 4};
  Rng rng;
  std::vector<double> x = rng.normal(numel(xs));
  for (int dim = 0; dim < 3; ++dim) {
    // Split along dim into [0, 1) [1, 3) [3, n), then concat back.
    int64_t n = xs[dim];
    std::vector<int64_t> starts = {0, 1, 2}, sizes = {1, 1, n - 2};
    std::vector<std::vector<double>> parts;
    for (size_t p = 0; p < starts.size(); ++p) {
      Shape ps = xs;
      ps[dim] = sizes[p];
      std::vector<double> part(numel(ps)), ref(part.size());
      for (int64_t f = 0; f < numel(ps); ++f) {
        Shape idx = unflatten(f, ps);
        idx[dim] += starts[p];
        ref[f] = x[flatten(idx, xs)];
      }
      slice(x.data(), xs, dim, starts[p], sizes[p], part.data());
      EXPECT_TRUE(allClose("slice", part, ref, 0, 0, ps)) << "dim " << dim;
      parts.push_back(part);
    }
    std::vector<const double *> ptrs = {parts[0].data(), parts[1].data(),
                                        parts[2].data()};
    std::vector<double> y(x.size());
    concat<double>(ptrs, sizes, xs, dim - 3 /* negative dim */, y.data());
    EXPECT_TRUE(allClose("concat", y, x, 0, 0, xs)) << "dim " << dim;
  }
}

TEST(Layout, SliceBwdFiniteDifference) {
  Shape xs = {2, 5, 3};
  Rng rng;
  std::vector<double> x = rng.normal(numel(xs)), r = rng.normal(2 * 2 * 3);
  std::vector<double> y(r.size()),
      dx(x.size(), 7.0 /* garbage: must be overwritten */);
  sliceBwd(r.data(), xs, 1, 2, 2, dx.data());
  auto loss = [&] {
    slice(x.data(), xs, 1, 2, 2, y.data());
    return dot(r, y);
  };
  EXPECT_TRUE(gradCheck("sliceBwd", x, dx, loss, 1e-6, xs));
}

// ---- reduce ---------------------------------------------------------------

std::vector<double> reduceRef(ReduceOp op, const std::vector<double> &x,
                              const Shape &xs, const Shape &axes) {
  std::vector<bool> red(xs.size());
  for (int64_t a : axes)
    red[a < 0 ? a + xs.size() : a] = true;
  Shape ys;
  for (size_t d = 0; d < xs.size(); ++d)
    if (!red[d])
      ys.push_back(xs[d]);
  int64_t count = numel(xs) / numel(ys);
  std::vector<double> y(numel(ys), op == ReduceOp::Max ? -INFINITY : 0.0);
  for (int64_t f = 0; f < numel(xs); ++f) {
    Shape xi = unflatten(f, xs), yi;
    for (size_t d = 0; d < xs.size(); ++d)
      if (!red[d])
        yi.push_back(xi[d]);
    double &o = y[flatten(yi, ys)];
    o = op == ReduceOp::Max ? std::max(o, x[f]) : o + x[f];
  }
  if (op == ReduceOp::Mean)
    for (double &v : y)
      v /= count;
  return y;
}

TEST(Reduce, MatchesNaiveOverAxisSets) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4, 5, 6}, {}},
      {{4, 5, 6}, {0}},
      {{4, 5, 6}, {1}},
      {{4, 5, 6}, {2}},
      {{4, 5, 6}, {-1}},
      {{4, 5, 6}, {0, 1}}, // bias grad
      {{4, 5, 6}, {0, 2}},
      {{4, 5, 6}, {2, 0, 1}},
      {{3, 4, 2, 5}, {1, 3}},
      {{3, 1, 4, 1}, {1, 2}},
      {{7}, {0}},
      {{2, 300}, {0}}};
  Rng rng;
  for (size_t ci = 0; ci < cases.size(); ++ci)
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Mean}) {
      const auto &[xs, axes] = cases[ci];
      std::vector<double> x = rng.normal(numel(xs));
      std::vector<double> ref = reduceRef(op, x, xs, axes), y(ref.size());
      reduce(op, x.data(), xs, axes, y.data());
      EXPECT_TRUE(allClose("reduce", y, ref, 1e-13, 1e-13))
          << "op " << int(op) << " case " << ci;
      std::vector<float> xf = cast<float>(x), yf(ref.size());
      reduce(op, xf.data(), xs, axes, yf.data());
      // float: inputs rounded (6e-8 rel) then double accumulation; sums of
      // O(1) normals over <= 120 terms stay within 1e-6 abs.
      EXPECT_TRUE(allClose("reduce f32", yf, ref, 1e-6, 1e-6));
    }
}

TEST(Reduce, MaxPropagatesNaN) {
  Shape xs = {2, 3};
  std::vector<double> x = {1, NAN, 2, 3, 4, 5}, y(2);
  Shape axes = {1};
  reduceMax(x.data(), xs, axes, y.data());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 5.0);
}

} // namespace
