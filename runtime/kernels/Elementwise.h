//===- Elementwise.h - Unary and broadcasting binary elementwise kernels --===//
//
// Unary ops (forward and dx = dy * f'(x)) and numpy-broadcasting binary ops.
// The op lists are X-macro tables; the .cpp switches cover them exhaustively.
// All kernels overwrite their output and allow it to alias an input of the
// same shape (y == x, out == a when aShape == outShape).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>

namespace strata::kernels {

/// X(Enum, name): unary elementwise ops. gelu_tanh / gelu_erf are the
/// approximate="tanh" / "none" forms of torch.nn.functional.gelu.
#define STRATA_UNARY_OPS(X)                                                    \
  X(Neg, neg)                                                                  \
  X(Exp, exp)                                                                  \
  X(Log, log)                                                                  \
  X(Sqrt, sqrt)                                                                \
  X(Rsqrt, rsqrt)                                                              \
  X(Tanh, tanh)                                                                \
  X(Sigmoid, sigmoid)                                                          \
  X(Relu, relu)                                                                \
  X(GeluTanh, gelu_tanh)                                                       \
  X(GeluErf, gelu_erf)                                                         \
  X(Silu, silu)                                                                \
  X(Square, square)

/// X(Enum, name): broadcasting binary elementwise ops.
#define STRATA_BINARY_OPS(X)                                                   \
  X(Add, add)                                                                  \
  X(Sub, sub)                                                                  \
  X(Mul, mul)                                                                  \
  X(Div, div)                                                                  \
  X(Max, maximum)                                                              \
  X(Min, minimum)

#define STRATA_ENUM_ENTRY(E, name) E,
/// A unary elementwise op.
enum class UnaryOp { STRATA_UNARY_OPS(STRATA_ENUM_ENTRY) };
/// A binary elementwise op.
enum class BinaryOp { STRATA_BINARY_OPS(STRATA_ENUM_ENTRY) };
#undef STRATA_ENUM_ENTRY

#define STRATA_COUNT_ENTRY(E, name) +1
/// Number of UnaryOp / BinaryOp values (for static_asserts in per-op tables).
constexpr int kNumUnaryOps = 0 STRATA_UNARY_OPS(STRATA_COUNT_ENTRY);
constexpr int kNumBinaryOps = 0 STRATA_BINARY_OPS(STRATA_COUNT_ENTRY);
#undef STRATA_COUNT_ENTRY

/// The lower-case name of an op ("gelu_tanh", "maximum").
const char *unaryOpName(UnaryOp op);
const char *binaryOpName(BinaryOp op);

/// y = f(x) elementwise. x, y are (n).
template <typename T> void unaryFwd(UnaryOp op, const T *x, T *y, int64_t n);

/// dx = dy * f'(x) elementwise (overwrites dx). dy, x, dx are (n).
/// relu'(0) is taken as 0, as in PyTorch.
template <typename T>
void unaryBwd(UnaryOp op, const T *dy, const T *x, T *dx, int64_t n);

/// y = alpha * x. x, y are (n).
template <typename T> void scale(const T *x, T *y, int64_t n, double alpha);

/// Which GELU: tanh approximation (GPT-2) or the exact erf form.
enum class GeluApprox { Tanh, None };

/// dx = dy * gelu'(x).
template <typename T>
void geluGrad(const T *dy, const T *x, T *dx, int64_t n,
              GeluApprox approx = GeluApprox::Tanh) {
  unaryBwd(approx == GeluApprox::Tanh ? UnaryOp::GeluTanh : UnaryOp::GeluErf,
           dy, x, dx, n);
}
/// dx = dy * silu'(x), silu(x) = x * sigmoid(x).
template <typename T> void siluGrad(const T *dy, const T *x, T *dx, int64_t n) {
  unaryBwd(UnaryOp::Silu, dy, x, dx, n);
}
/// dx = dy * (x > 0).
template <typename T> void reluGrad(const T *dy, const T *x, T *dx, int64_t n) {
  unaryBwd(UnaryOp::Relu, dy, x, dx, n);
}

/// out = a op b with numpy broadcasting: shapes are right-aligned and each
/// input dim equals the output dim or is 1. Ranks <= kMaxRank (8).
/// a is aShape, b is bShape, out is outShape (row-major, contiguous).
template <typename T>
void binaryFwd(BinaryOp op, const T *a, std::span<const int64_t> aShape,
               const T *b, std::span<const int64_t> bShape, T *out,
               std::span<const int64_t> outShape);

} // namespace strata::kernels
