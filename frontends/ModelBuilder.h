//===- ModelBuilder.h - Shared pieces of the model frontends --------------===//
//
// Wraps the IR builder with what both families need: parameter inputs with
// their init attributes, results named after their scope
// (`layers.0.attn.q.matmul`), dropout sites with unique streams, the token
// inputs, the attention core and the loss.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "ir/Builder.h"

namespace strata {

class ModelBuilder {
public:
  ModelBuilder(Graph &g, const ModelConfig &c);

  const ModelConfig &config() const { return c_; }
  /// Sets the scope of the nodes built next (`layers.3.mlp.fc1`).
  void setScope(const llvm::Twine &scope) { b_.setScope(scope.str()); }

  /// Parameter inputs: `{param, init="normal", std}`, `init="ones"`,
  /// `init="zeros"`.
  ValueId normal(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                 double std);
  ValueId ones(llvm::StringRef name, llvm::ArrayRef<int64_t> shape);
  ValueId zeros(llvm::StringRef name, llvm::ArrayRef<int64_t> shape);
  /// The std of weights feeding the residual stream: init_std / sqrt(2L).
  double scaledStd() const;

  /// Appends a one-result op named `<scope>.<op>`.
  ValueId op(OpKind k, llvm::ArrayRef<ValueId> operands, Attrs attrs = {});
  ValueId matmul(ValueId a, ValueId b, bool transposeB = false);
  ValueId reshape(ValueId x, llvm::ArrayRef<int64_t> shape);
  /// Dropout with the spec's p and the next stream; `x` itself when p == 0.
  ValueId dropout(ValueId x);
  /// Causal attention of q[B,S,nh,D] over k, v [B,S,nkv,D], scale 1/sqrt(D),
  /// back to [B,S,nh*D].
  ValueId attention(ValueId q, ValueId k, ValueId v);
  /// Rotate-half RoPE of x[B,S,n,D] with the spec's theta and, when set,
  /// its Llama-3.1 frequency scaling (docs/models.md).
  ValueId rope(ValueId x);
  /// Mean cross-entropy of logits[B,S,Vp] against `labels`, in scope `loss`;
  /// marks it as the graph output.
  void loss(ValueId logits);
  /// The LM head on the final hidden states x[B,S,H] (x wte^T when the
  /// embeddings are tied, else x `lm_head.w` [H,Vp]) and its loss.
  void lmHeadLoss(ValueId x, ValueId wte);

  /// The data inputs `tokens` and `labels`, i32[B,S] with `{vocab=V}` (the
  /// real vocabulary; ids are below it).
  ValueId tokens() const { return tokens_; }

private:
  ValueId param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                Attrs attrs);

  Graph &g_;
  Builder b_;
  const ModelConfig &c_;
  ValueId tokens_, labels_;
  int64_t nextStream_ = 0;
};

} // namespace strata
