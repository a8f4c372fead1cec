//===- ModelBuilder.cpp - Shared pieces of the model frontends ------------===//
#include "frontends/ModelBuilder.h"

#include <cmath>

namespace strata {

ModelBuilder::ModelBuilder(Graph &g, const ModelConfig &c)
    : g_(g), b_(g), c_(c) {
  TensorType ids{DType::I32, {c.microBatch, c.seq}};
  tokens_ = g.addInput("tokens", ids, {{"vocab", c.vocab}});
  labels_ = g.addInput("labels", ids, {{"vocab", c.vocab}});
}

ValueId ModelBuilder::param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                            Attrs attrs) {
  attrs.set("param", true);
  return g_.addInput(name,
                     TensorType{DType::F32, Shape(shape.begin(), shape.end())},
                     std::move(attrs));
}

ValueId ModelBuilder::normal(llvm::StringRef name,
                             llvm::ArrayRef<int64_t> shape, double std) {
  return param(name, shape, {{"init", std::string("normal")}, {"std", std}});
}
ValueId ModelBuilder::ones(llvm::StringRef name,
                           llvm::ArrayRef<int64_t> shape) {
  return param(name, shape, {{"init", std::string("ones")}});
}
ValueId ModelBuilder::zeros(llvm::StringRef name,
                            llvm::ArrayRef<int64_t> shape) {
  return param(name, shape, {{"init", std::string("zeros")}});
}

double ModelBuilder::scaledStd() const {
  return c_.initStd / std::sqrt(2.0 * double(c_.layers));
}

ValueId ModelBuilder::op(OpKind k, llvm::ArrayRef<ValueId> operands,
                         Attrs attrs) {
  std::string name = b_.scope() + "." + opName(k).str();
  if (g_.lookup(name) != kNoValue)
    name = g_.freshName(name);
  return b_.create1(k, operands, std::move(attrs), name);
}

ValueId ModelBuilder::matmul(ValueId a, ValueId b, bool transposeB) {
  Attrs attrs;
  if (transposeB)
    attrs.set("transpose_b", true);
  return op(OpKind::MatMul, {a, b}, std::move(attrs));
}

ValueId ModelBuilder::reshape(ValueId x, llvm::ArrayRef<int64_t> shape) {
  return op(OpKind::Reshape, {x},
            {{"shape", IntList(shape.begin(), shape.end())}});
}

ValueId ModelBuilder::dropout(ValueId x) {
  if (c_.dropout == 0)
    return x;
  return op(OpKind::Dropout, {x},
            {{"p", c_.dropout}, {"stream", nextStream_++}});
}

ValueId ModelBuilder::attention(ValueId q, ValueId k, ValueId v) {
  double scale = 1.0 / std::sqrt(double(c_.headDim));
  Attrs attrs{{"causal", true}, {"scale", scale}};
  if (c_.slidingWindow > 0)
    attrs.set("window", c_.slidingWindow);
  ValueId a = op(OpKind::Attention, {q, k, v}, std::move(attrs));
  return reshape(a, {c_.microBatch, c_.seq, c_.heads * c_.headDim});
}

ValueId ModelBuilder::rope(ValueId x) {
  Attrs attrs{{"theta", c_.ropeTheta}};
  if (const RopeScaling &r = c_.ropeScaling; r.factor > 0) {
    attrs.set("scaling", std::string("llama3"));
    attrs.set("factor", r.factor);
    attrs.set("low_freq_factor", r.lowFreqFactor);
    attrs.set("high_freq_factor", r.highFreqFactor);
    attrs.set("original_max_positions", r.originalMaxPositions);
  }
  return op(OpKind::Rope, {x}, std::move(attrs));
}

void ModelBuilder::loss(ValueId logits) {
  setScope("loss");
  g_.addOutput(op(OpKind::CrossEntropy, {logits, labels_}));
}

void ModelBuilder::lmHeadLoss(ValueId x, ValueId wte) {
  setScope("lm_head");
  loss(c_.tieEmbeddings
           ? matmul(x, wte, /*transposeB=*/true)
           : matmul(x, normal("lm_head.w", {c_.hidden, c_.paddedVocab},
                              c_.initStd)));
}

} // namespace strata
