//===- RowKernel.cpp - Row kernels: prologue, row op, epilogue ------------===//
//
// A row kernel (KernelPlan.h) walks whole rows of C elements. Per row: the
// prologue pass computes the row op's ancestors into scratch rows, the row
// op reads its rows and writes result 0 into its scratch row, and the
// epilogue pass computes the other members and the stores. The row ops
// compute what runtime/kernels (Softmax.cpp, Norms.cpp) computes: the same
// f64 statistics and the same element expressions, in the same types; only
// the order of the row sums differs (vector lanes on the CPU, warp lanes on
// CUDA), within f64 rounding.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelWriter.h"

#include "llvm/Support/Format.h"

namespace strata::codegen {

std::string KernelWriter::scratchName(ValueId v) const {
  return "s" + std::to_string(llvm::find(p_.scratch, v) - p_.scratch.begin());
}

std::string KernelWriter::rowIn(ValueId v) const {
  if (p_.inScratch(v))
    return lang_.scratchAt(scratchName(v));
  for (size_t k = 0; k < p_.loads.size(); ++k)
    if (p_.loads[k].value == v)
      return loadExpr(k);
  llvm_unreachable("planKernel loads every row operand it does not compute");
}

void KernelWriter::writeRowLoops() {
  std::string in = lang_.rowLoopBegin(os_, p_);
  for (ValueId v : p_.scratch)
    os_ << in << lang_.scratchDecl(p_, computeCType(p_, v), scratchName(v))
        << "\n";
  if (llvm::is_contained(p_.inPrologue, true)) {
    if (annotate_)
      os_ << in << "// prologue\n";
    llvm::SmallVector<size_t, 4> stores = storesOf(Pass::Prologue);
    element(lang_.colLoopBegin(os_, p_, in, {}, false, stores), Pass::Prologue);
    lang_.colLoopEnd(os_, p_, in, stores);
  }
  rowOp(in);
  if (annotate_)
    os_ << in << "// epilogue\n";
  llvm::SmallVector<size_t, 4> stores = storesOf(Pass::Epilogue);
  element(lang_.colLoopBegin(os_, p_, in, {}, false, stores), Pass::Epilogue);
  lang_.colLoopEnd(os_, p_, in, stores);
  lang_.rowLoopEnd(os_, p_);
}

void KernelWriter::rowOp(const std::string &in) {
  const Node &n = g_.node(p_.row);
  const DType dt = computeType(g_.type(n.results[0]).dtype);
  const std::string T = cTypeName(dt);
  const std::string C = std::to_string(p_.inner());
  const std::string Y = lang_.scratchAt(scratchName(n.results[0]));
  const std::string sqrt = lang_.math("sqrt", DType::F64);
  std::string eps;
  {
    llvm::raw_string_ostream os(eps);
    os << llvm::format("%.17g", n.attrs.getFloat("eps", 1e-5));
  }
  llvm::SmallVector<std::string, 4> x;
  for (ValueId v : n.operands)
    x.push_back(rowIn(v));
  // One column loop: the statements (each on its line), the f64 sums it
  // adds into (or the max it takes), then their combination across the row.
  auto loop = [&](llvm::ArrayRef<std::string> body,
                  llvm::ArrayRef<std::string> sums = {}, bool max = false) {
    std::string b = lang_.colLoopBegin(os_, p_, in, sums, max);
    for (const std::string &line : body)
      if (!line.empty())
        os_ << b << line << "\n";
    lang_.colLoopEnd(os_, p_, in);
    for (const std::string &s : sums)
      lang_.rowCombine(os_, in, s, max);
  };
  auto line = [&](const std::string &text) { os_ << in << text << "\n"; };
  // The column-sum store of result k (dw, db), if the body returns it.
  auto sumOf = [&](size_t k, const std::string &v) -> std::string {
    for (const KernelSum &s : p_.sums)
      if (s.byRowOp && s.value == n.results[k])
        return lang_.accumulate(p_, s.store, v);
    return "";
  };
  // mean and rstd of row `v` (layer norm statistics).
  auto meanRstd = [&](const std::string &v) {
    line("double sum = 0.0;");
    loop({"sum += " + v + ";"}, {"sum"});
    line("const double mean = sum / " + C + ";");
    line("double var = 0.0;");
    loop({"const double d = " + v + " - mean;", "var += d * d;"}, {"var"});
    line("const double rstd = 1.0 / " + sqrt + "(var / " + C + " + " + eps +
         ");");
  };
  if (annotate_)
    os_ << in << "// %" << g_.value(n.results[0]).name << " = " << opName(n.op)
        << " (" << n.scope << ")\n";
  switch (n.op) {
  case OpKind::Softmax:
    line(T + " m = " + lang_.negInfinity(dt) + ";");
    loop({"m = " + x[0] + " > m ? " + x[0] + " : m;"}, {"m"}, /*max=*/true);
    line("double sum = 0.0;");
    loop(
        {"const " + T + " e = " + lang_.math("exp", dt) + "(" + x[0] + " - m);",
         Y + " = e;", "sum += e;"},
        {"sum"});
    line("const " + T + " inv = (" + T + ")(1.0 / sum);");
    loop({Y + " *= inv;"});
    break;
  case OpKind::SoftmaxGrad: // (dy, y)
    line("double dot = 0.0;");
    loop({"dot += (double)" + x[0] + " * " + x[1] + ";"}, {"dot"});
    line("const " + T + " d = (" + T + ")dot;");
    loop({Y + " = " + x[1] + " * (" + x[0] + " - d);"});
    break;
  case OpKind::LayerNorm: // (x, w, b)
    meanRstd(x[0]);
    line("const " + T + " meanT = (" + T + ")mean, rstdT = (" + T + ")rstd;");
    loop({Y + " = (" + x[0] + " - meanT) * rstdT * " + x[1] + " + " + x[2] +
          ";"});
    break;
  case OpKind::RmsNorm: // (x, w)
    line("double ss = 0.0;");
    loop({"ss += (double)" + x[0] + " * " + x[0] + ";"}, {"ss"});
    line("const " + T + " rstdT = (" + T + ")(1.0 / " + sqrt + "(ss / " + C +
         " + " + eps + "));");
    loop({Y + " = " + x[0] + " * rstdT * " + x[1] + ";"});
    break;
  case OpKind::LayerNormGrad: { // (dy, x, w, b) -> (dx, dw, db)
    // g = dy * w, xhat = (x - mean) * rstd:
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
    meanRstd(x[1]);
    line("double sumG = 0.0, sumGX = 0.0;");
    loop({"const double g = (double)" + x[0] + " * " + x[2] + ";", "sumG += g;",
          "sumGX += g * ((" + x[1] + " - mean) * rstd);"},
         {"sumG", "sumGX"});
    line("const double meanG = sumG / " + C + ", meanGX = sumGX / " + C + ";");
    loop({"const double xhat = (" + x[1] + " - mean) * rstd;",
          "const double g = (double)" + x[0] + " * " + x[2] + ";",
          Y + " = (" + T + ")(rstd * (g - meanG - xhat * meanGX));",
          sumOf(1, x[0] + " * xhat"), sumOf(2, x[0])});
    break;
  }
  case OpKind::RmsNormGrad: // (dy, x, w) -> (dx, dw)
    // dx = rstd * (g - x * rstd^2 * mean(g * x)).
    line("double ss = 0.0;");
    loop({"ss += (double)" + x[1] + " * " + x[1] + ";"}, {"ss"});
    line("const double rstd = 1.0 / " + sqrt + "(ss / " + C + " + " + eps +
         ");");
    line("double sumGX = 0.0;");
    loop({"sumGX += (double)" + x[0] + " * " + x[2] + " * " + x[1] + ";"},
         {"sumGX"});
    line("const double k = rstd * rstd * rstd * sumGX / " + C + ";");
    loop({Y + " = (" + T + ")(rstd * (double)" + x[0] + " * " + x[2] +
              " - k * " + x[1] + ");",
          sumOf(1, x[0] + " * ((double)" + x[1] + " * rstd)")});
    break;
  default:
    llvm_unreachable("planKernel admits only row ops");
  }
}

} // namespace strata::codegen
