//===- Renderer.cpp - Shared kernel text and the per-op rendering rules ---===//
//
// The rules compute what runtime/kernels computes (Elementwise.cpp, Philox.cpp)
// with the same operations in the same order, the same constants rounded to
// the element type and the same functions: libm's (exp, log, sqrt, erf) and
// the kernels' own exp and tanh (`kexp`, `ktanh`: runtime/kernels/FastMath.h,
// whose text the C++ target embeds; CUDA uses its own expf/tanhf). A fused
// CPU kernel differs from the unfused graph only where the host compiler
// contracts a*b+c into one FMA differently in the two builds.
//
//===----------------------------------------------------------------------===//
#include "codegen/Renderer.h"

#include "codegen/KernelWriter.h"
#include "codegen/Language.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <cmath>

namespace strata::codegen {

namespace {

constexpr double kSqrt2OverPi = 0.79788456080286535588; // sqrt(2/pi)
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794; // 1/sqrt(2 pi)
constexpr double kGeluCoeff = 0.044715;

// Philox4x32-10, word 0 of the block: the dropout draw of one element
// (runtime/kernels/Philox.h gives the contract).
constexpr const char *kPhilox = R"(
// Philox4x32-10 (Random123): word 0 of the block at counter (index, step),
// key (seed, stream). Dropout keeps an element iff word >= ceil(p * 2^32).
STRATA_FN uint32_t strata_philox(uint64_t index, uint64_t step, uint32_t seed,
                                 uint32_t stream) {
  uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32);
  uint32_t c2 = (uint32_t)step, c3 = (uint32_t)(step >> 32);
  uint32_t k0 = seed, k1 = stream;
  for (int round = 0; round < 10; ++round) {
    if (round) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
  }
  return c0;
}
)";

} // namespace

llvm::StringRef philoxSource() { return kPhilox; }

void KernelWriter::header() {
  size_t rowSums =
      llvm::count_if(p_.sums, [](const KernelSum &s) { return s.byRowOp; });
  os_ << "\n// " << p_.name << ": "
      << g_.nodes().size() - (p_.anchor >= 0) - p_.isRowKernel() -
             (p_.sums.size() - rowSums)
      << " elementwise op(s)";
  if (p_.isRowKernel())
    os_ << " around " << opName(g_.node(p_.row).op) << " ("
        << g_.node(p_.row).scope << ")";
  if (p_.sums.size() > rowSums)
    os_ << " and " << p_.sums.size() - rowSums << " column sum(s)";
  os_ << " over " << dtypeName(g_.type(p_.stores.front()).dtype) << "[";
  for (size_t d = 0; d < p_.domain.size(); ++d)
    os_ << (d ? "," : "") << p_.domain[d];
  os_ << "] as loop [";
  for (size_t d = 0; d < p_.dims.size(); ++d)
    os_ << (d ? ", " : "") << p_.dims[d];
  os_ << "]\n";
  if (p_.anchor >= 0) {
    const Node &a = g_.node(p_.anchor);
    os_ << "//   after %" << g_.value(a.results[0]).name << " = matmul ("
        << a.scope << "), which the runtime runs into out" << p_.anchorResult
        << " first\n";
  }
  for (size_t k = 0; k < p_.loads.size(); ++k)
    os_ << "//   in" << k << " = %" << g_.value(p_.loads[k].value).name << " : "
        << g_.type(p_.loads[k].value) << "\n";
  for (size_t k = 0; k < p_.stores.size(); ++k) {
    os_ << "//   out" << k << " = %" << g_.value(p_.stores[k]).name << " : "
        << g_.type(p_.stores[k]);
    if (const KernelSum *s = p_.sumOf(k); s && !s->byRowOp)
      os_ << ", column sums of %" << g_.value(s->value).name;
    os_ << "\n";
  }
  if (p_.isRowKernel()) {
    os_ << "//   rows of " << p_.inner() << ": prologue pass, "
        << opName(g_.node(p_.row).op) << ", epilogue pass; scratch rows";
    for (ValueId v : p_.scratch)
      os_ << " %" << g_.value(v).name;
    os_ << "\n";
  }
  lang_.launchComment(os_, p_);
}

std::string KernelWriter::lit(double v) const {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (dtype_ == DType::F32)
    os << llvm::format("%.9g", double(float(v)));
  else
    os << llvm::format("%.17g", v);
  os.flush();
  if (s.find_first_of(".en") == std::string::npos)
    s += ".0";
  return dtype_ == DType::F32 ? s + "f" : s;
}

std::string KernelWriter::temp(const std::string &expr) {
  std::string name = "t" + std::to_string(temps_++);
  os_ << indent_ << "const " << cTypeName(dtype_) << " " << name << " = "
      << expr << ";\n";
  return name;
}

std::string KernelWriter::sigmoid(const std::string &x) {
  std::string e = temp(
      call("kexp", "(" + x + " >= " + lit(0) + " ? -" + x + " : " + x + ")"));
  return "(" + x + " >= " + lit(0) + " ? " + lit(1) + " / (" + lit(1) + " + " +
         e + ") : " + e + " / (" + lit(1) + " + " + e + "))";
}

std::string KernelWriter::dropout(const Node &n, const std::string &x) {
  // u = word * 2^-32 >= p  <=>  word >= ceil(p * 2^32) (exact: a power of 2).
  double p = n.attrs.getFloat("p");
  auto threshold = uint64_t(std::ceil(std::ldexp(p, 32)));
  return "(strata_philox((uint64_t)i, step, (uint32_t)seed, " +
         std::to_string(uint32_t(n.attrs.getInt("stream"))) +
         "u) >= " + std::to_string(threshold) + "ull ? " + x + " * " +
         lit(1.0 / (1.0 - p)) + " : " + lit(0) + ")";
}

std::string KernelWriter::rule(const Node &n) {
  llvm::SmallVector<std::string, 2> a;
  for (ValueId v : n.operands)
    a.push_back(var_.lookup(v));
  const std::string &x = a[0];
  bool tanhGelu = n.attrs.getString("approx", "tanh") != "none";
  switch (n.op) {
  case OpKind::Neg:
    return "-" + x;
  case OpKind::Exp:
    return call("exp", x);
  case OpKind::Log:
    return call("log", x);
  case OpKind::Sqrt:
    return call("sqrt", x);
  case OpKind::Rsqrt:
    return lit(1) + " / " + call("sqrt", x);
  case OpKind::Tanh:
    return call("ktanh", x);
  case OpKind::Sigmoid:
    return sigmoid(x);
  case OpKind::Relu:
    return "(" + x + " > " + lit(0) + " ? " + x + " : " + lit(0) + ")";
  case OpKind::Gelu:
    if (!tanhGelu)
      return lit(0.5) + " * " + x + " * (" + lit(1) + " + " +
             call("erf", x + " * " + lit(kInvSqrt2)) + ")";
    // x sigmoid(2u), as runtime/kernels/Elementwise.cpp.
    return x + " / (" + lit(1) + " + " +
           call("kexp", "-" + temp(lit(2 * kSqrt2OverPi) + " * (" + x + " + " +
                                   lit(kGeluCoeff) + " * " + x + " * " + x +
                                   " * " + x + ")")) +
           ")";
  case OpKind::Silu:
    return x + " * " + temp(sigmoid(x));
  case OpKind::Square:
    return x + " * " + x;
  case OpKind::Scale:
    return lit(n.attrs.getFloat("value", 1.0)) + " * " + x;
  case OpKind::Cast: {
    // A cast to bf16 / f16 rounds, as its unfused kernel does; other 16-bit
    // results stay f32 until stored.
    std::string c = "(" + std::string(cTypeName(dtype_)) + ")(double)" + x;
    DType to = g_.type(n.results[0]).dtype;
    return isFloat16(to) ? lang_.widen(to, lang_.narrow(to, c)) : c;
  }
  // Gradients: dx = dy * f'(x), operands (dy, x).
  case OpKind::GeluGrad: {
    const std::string &v = a[1];
    if (!tanhGelu)
      return x + " * (" + lit(0.5) + " * (" + lit(1) + " + " +
             call("erf", v + " * " + lit(kInvSqrt2)) + ") + " + v + " * " +
             lit(kInvSqrt2Pi) + " * " +
             call("exp", lit(-0.5) + " * " + v + " * " + v) + ")";
    std::string c2 = lit(2 * kSqrt2OverPi), k = lit(kGeluCoeff);
    std::string s =
        temp(lit(1) + " / (" + lit(1) + " + " +
             call("kexp", "-(" + c2 + " * (" + v + " + " + k + " * " + v +
                              " * " + v + " * " + v + "))") +
             ")");
    return x + " * (" + s + " + " + v + " * " + s + " * (" + lit(1) + " - " +
           s + ") * " + c2 + " * (" + lit(1) + " + " + lit(3) + " * " + k +
           " * " + v + " * " + v + "))";
  }
  case OpKind::SiluGrad: {
    std::string s = temp(sigmoid(a[1]));
    return x + " * (" + s + " * (" + lit(1) + " + " + a[1] + " * (" + lit(1) +
           " - " + s + ")))";
  }
  case OpKind::ReluGrad:
    return x + " * (" + a[1] + " > " + lit(0) + " ? " + lit(1) + " : " +
           lit(0) + ")";
  case OpKind::Add:
    return x + " + " + a[1];
  case OpKind::Sub:
    return x + " - " + a[1];
  case OpKind::Mul:
    return x + " * " + a[1];
  case OpKind::Div:
    return x + " / " + a[1];
  case OpKind::Maximum: // NaN-propagating, like torch.maximum
    return "(" + x + " > " + a[1] + " || " + x + " != " + x + ") ? " + x +
           " : " + a[1];
  case OpKind::Minimum:
    return "(" + x + " < " + a[1] + " || " + x + " != " + x + ") ? " + x +
           " : " + a[1];
  case OpKind::Dropout:
  case OpKind::DropoutGrad:
    return dropout(n, x);
  default:
    llvm_unreachable("planKernel admits only ops with a rendering rule");
  }
}

bool KernelWriter::inPass(size_t node, Pass pass) const {
  if (pass == Pass::All)
    return int32_t(node) != p_.anchor;
  return int32_t(node) != p_.row &&
         p_.inPrologue[node] == (pass == Pass::Prologue);
}

KernelWriter::Pass KernelWriter::passOf(ValueId v) const {
  int32_t d = g_.value(v).defNode;
  return d >= 0 && d != p_.row && p_.inPrologue[d] ? Pass::Prologue
                                                   : Pass::Epilogue;
}

std::string KernelWriter::loadExpr(size_t k) const {
  DType t = p_.storageOf(p_.loads[k].value);
  return isFloat16(t) ? lang_.widen(t, lang_.load(p_, k)) : lang_.load(p_, k);
}

llvm::SmallVector<size_t, 4> KernelWriter::storesOf(Pass pass) const {
  llvm::SmallVector<size_t, 4> stores;
  for (size_t k = 0; k < p_.stores.size(); ++k)
    if (!p_.sumOf(k) && (pass == Pass::All || passOf(p_.stores[k]) == pass))
      stores.push_back(k);
  return stores;
}

void KernelWriter::element(const std::string &indent, Pass pass) {
  indent_ = indent;
  var_.clear();
  int values = 0;
  auto define = [&](ValueId v) {
    return var_[v] = "v" + std::to_string(values++);
  };
  // What this pass reads: operands of its nodes, and the values it stores.
  llvm::SmallVector<bool, 16> read(g_.numValues(), pass == Pass::All);
  for (size_t n = 0; n < g_.nodes().size(); ++n)
    if (inPass(n, pass))
      for (ValueId v : g_.node(n).operands)
        read[v] = true;
  for (size_t k = 0; k < p_.stores.size(); ++k) {
    const KernelSum *s = p_.sumOf(k);
    ValueId v = s ? s->value : p_.stores[k];
    if (!(s && s->byRowOp) && (pass == Pass::All || passOf(v) == pass))
      read[v] = true;
  }
  for (size_t k = 0; k < p_.loads.size(); ++k) {
    const KernelLoad &l = p_.loads[k];
    if (!read[l.value])
      continue;
    std::string name = define(l.value);
    os_ << indent_ << "const " << computeCType(p_, l.value) << " " << name
        << " = " << loadExpr(k) << ";";
    if (annotate_)
      os_ << "  // %" << g_.value(l.value).name;
    os_ << "\n";
  }
  if (pass == Pass::Epilogue) // scratch: the row op's result, prologue values
    for (ValueId v : p_.scratch)
      if (read[v])
        os_ << indent_ << "const " << computeCType(p_, v) << " " << define(v)
            << " = " << lang_.scratchAt(scratchName(v)) << ";\n";
  std::string scope;
  for (size_t n = 0; n < g_.nodes().size(); ++n) {
    const Node &node = g_.node(n);
    if (!inPass(n, pass) || node.op == OpKind::ReduceSum)
      continue; // a column sum: accumulated with the stores
    if (annotate_ && node.scope != scope && !node.scope.empty())
      os_ << indent_ << "// " << node.scope << "\n";
    scope = node.scope;
    ValueId r = node.results[0];
    dtype_ = computeType(g_.type(r).dtype);
    std::string expr = rule(node);
    os_ << indent_ << "const " << cTypeName(dtype_) << " " << define(r) << " = "
        << expr << ";";
    if (annotate_)
      os_ << "  // %" << g_.value(r).name << " = " << opName(node.op);
    os_ << "\n";
    if (pass == Pass::Prologue && p_.inScratch(r))
      os_ << indent_ << lang_.scratchAt(scratchName(r)) << " = " << var_[r]
          << ";\n";
  }
  for (size_t k = 0; k < p_.stores.size(); ++k) {
    const KernelSum *s = p_.sumOf(k);
    if (s && s->byRowOp)
      continue; // the row op adds its own
    ValueId v = s ? s->value : p_.stores[k];
    if (pass != Pass::All && passOf(v) != pass)
      continue;
    std::string x = var_.lookup(v);
    if (DType t = p_.storageOf(p_.stores[k]); !s && isFloat16(t))
      x = lang_.narrow(t, x);
    os_ << indent_ << (s ? lang_.accumulate(p_, k, x) : lang_.store(p_, k, x))
        << "\n";
  }
}

void KernelWriter::write(llvm::ArrayRef<std::string> sharers) {
  if (annotate_)
    header();
  if (!sharers.empty()) {
    os_ << "//   also runs";
    for (const std::string &name : sharers)
      os_ << " " << name;
    os_ << " (the same code)\n";
  }
  lang_.signature(os_, p_);
  if (p_.isRowKernel()) {
    writeRowLoops();
    return;
  }
  llvm::SmallVector<size_t, 4> stores = storesOf(Pass::All);
  element(lang_.loopBegin(os_, p_, stores));
  lang_.loopEnd(os_, p_, stores);
}

KernelSource renderKernels(llvm::ArrayRef<KernelPlan> plans, Target target) {
  std::unique_ptr<Language> lang = target == Target::Cuda
                                       ? std::make_unique<CudaLanguage>()
                                       : std::make_unique<Language>();
  // Plans with the same unannotated code (under one name) share a kernel.
  KernelSource src;
  llvm::StringMap<size_t> byCode;
  std::vector<std::vector<std::string>> sharers(plans.size());
  std::vector<bool> first(plans.size(), false);
  for (size_t k = 0; k < plans.size(); ++k) {
    KernelPlan anonymous = plans[k];
    anonymous.name = "kernel";
    std::string code;
    llvm::raw_string_ostream os(code);
    KernelWriter(os, *lang, anonymous, /*annotate=*/false).write();
    auto [it, inserted] = byCode.try_emplace(os.str(), k);
    first[k] = inserted;
    src.symbols.push_back(plans[it->second].name);
    if (!inserted)
      sharers[it->second].push_back(plans[k].name);
  }
  llvm::raw_string_ostream os(src.text);
  os << "// Fused kernels generated by strata codegen ("
     << (target == Target::Cuda ? "CUDA C for NVRTC"
                                : "C++ for the host compiler")
     << ").\n";
  lang->prelude(os);
  if (llvm::any_of(plans, [](const KernelPlan &p) { return p.usesRng; }))
    os << kPhilox;
  if (llvm::any_of(plans, [](const KernelPlan &p) { return p.isRowKernel(); }))
    lang->rowPrelude(os);
  for (size_t k = 0; k < plans.size(); ++k)
    if (first[k])
      KernelWriter(os, *lang, plans[k], /*annotate=*/true).write(sharers[k]);
  os.flush();
  return src;
}

} // namespace strata::codegen
