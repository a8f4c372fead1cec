//===- KernelWriter.h - Writes one kernel's text (private to codegen) -----===//
//
// Shared by Renderer.cpp (comments, elementwise loops, the per-op rules) and
// RowKernel.cpp (row kernels: the prologue pass, the row op, the epilogue
// pass). The target's differences come from the Language (Language.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/Language.h"

#include "llvm/ADT/DenseMap.h"

#include <string>

namespace strata::codegen {

class KernelWriter {
public:
  /// Without `annotate`, no comments: the text that decides whether two
  /// plans share code.
  KernelWriter(llvm::raw_ostream &os, const Language &lang, const KernelPlan &p,
               bool annotate)
      : os_(os), lang_(lang), p_(p), g_(*p.body), annotate_(annotate) {}
  void write(llvm::ArrayRef<std::string> sharers = {});

private:
  /// Which nodes a column loop computes: every one (elementwise kernels),
  /// or a row kernel's prologue (the row op's ancestors) or epilogue.
  enum class Pass { All, Prologue, Epilogue };

  void header();
  void element(const std::string &indent, Pass pass = Pass::All);
  bool inPass(size_t node, Pass pass) const;
  /// The pass that computes `v` (row kernels): loads and the row op's
  /// result belong to the epilogue.
  Pass passOf(ValueId v) const;
  /// The elementwise (not column-sum) stores that pass `pass` writes.
  llvm::SmallVector<size_t, 4> storesOf(Pass pass) const;

  // Row kernels (RowKernel.cpp).
  void writeRowLoops();
  /// The row op: reads its rows, writes result 0 into its scratch row.
  void rowOp(const std::string &indent);
  /// The row op's operand `v` at column c: a scratch row or a load.
  std::string rowIn(ValueId v) const;
  std::string scratchName(ValueId v) const;

  /// The expression of node `n`'s result; may first emit temporaries.
  std::string rule(const Node &n);
  /// A literal of the current element type (rounded to it, so the kernel
  /// uses the constant the reference kernel does).
  std::string lit(double v) const;
  /// Emits `const T tN = expr;` and returns tN.
  std::string temp(const std::string &expr);
  std::string call(llvm::StringRef fn, const std::string &arg) const {
    return lang_.math(fn, dtype_) + "(" + arg + ")";
  }
  /// sigmoid(x) as the reference computes it: one exp of -|x|, never of a
  /// positive number.
  std::string sigmoid(const std::string &x);
  std::string dropout(const Node &n, const std::string &x);
  std::string loadExpr(size_t load) const;

  llvm::raw_ostream &os_;
  const Language &lang_;
  const KernelPlan &p_;
  const Graph &g_;
  bool annotate_;
  llvm::DenseMap<ValueId, std::string> var_;
  std::string indent_;
  DType dtype_ = DType::F32;
  int temps_ = 0;
};

} // namespace strata::codegen
