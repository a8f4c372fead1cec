//===- Language.cpp - The C++ target: loops for the host compiler ---------===//
//
// A kernel runs the elements [begin, end) of its domain; the runtime splits
// the elements over threads (kernels::parallelFor), so the split does not
// depend on the shape. The elements are walked as rows of the innermost
// coalesced dim (the first and last row partial); the inner loop is unit
// stride and carries `#pragma omp simd` (honoured with -fopenmp-simd), so a
// broadcast operand costs one row offset and a unit-stride or invariant load.
// A column sum's out[k] is an f64 row of partial sums the kernel adds its
// rows into (the runtime calls it on whole rows and combines the calls).
//
//===----------------------------------------------------------------------===//
#include "codegen/Language.h"

#include "llvm/ADT/StringExtras.h"

namespace {
// runtime/kernels/FastMath.h and Float16.h as text (codegen/CMakeLists.txt
// embeds them).
constexpr const char *kFastMathText =
#include "codegen/FastMathText.inc"
    ;
constexpr const char *kFloat16Text =
#include "codegen/Float16Text.inc"
    ;
} // namespace

namespace strata::codegen {

std::string valueCType(const KernelPlan &p, ValueId v) {
  DType t = p.storageOf(v);
  if (isFloat16(t))
    return "unsigned short"; // a 16-bit pattern
  return cTypeName(t);
}

std::string computeCType(const KernelPlan &p, ValueId v) {
  return cTypeName(computeType(p.body->type(v).dtype));
}

std::string stridedIndex(llvm::StringRef var, llvm::ArrayRef<int64_t> dims,
                         llvm::ArrayRef<int64_t> strides) {
  int64_t contiguous = 1;
  bool isContiguous = true;
  for (size_t d = dims.size(); d-- > 0;) {
    isContiguous &= strides[d] == contiguous;
    contiguous *= dims[d];
  }
  if (isContiguous)
    return var.str();
  std::string sum;
  int64_t inner = contiguous; // product of dims[d+1..]
  for (size_t d = 0; d < dims.size(); ++d) {
    inner /= dims[d];
    if (!strides[d])
      continue;
    std::string coord = var.str();
    if (inner != 1)
      coord = "(" + coord + " / " + std::to_string(inner) + ")";
    if (d != 0)
      coord = "(" + coord + " % " + std::to_string(dims[d]) + ")";
    if (strides[d] != 1)
      coord += " * " + std::to_string(strides[d]);
    sum += (sum.empty() ? "" : " + ") + coord;
  }
  return sum.empty() ? "0" : sum;
}

void Language::prelude(llvm::raw_ostream &os) const {
  os << "#include <cmath>\n#include <cstdint>\n\n"
     << "// runtime/kernels/FastMath.h, the CPU kernels' exp and tanh:\n"
     << kFastMathText
     << "\n// runtime/kernels/Float16.h, the CPU's bf16 / f16 conversions:\n"
     << kFloat16Text << "\n#define STRATA_FN static inline\n";
}

void Language::signature(llvm::raw_ostream &os, const KernelPlan &p) const {
  os << "extern \"C\" void " << p.name
     << "(const void *const *in, void *const *out, int64_t begin,\n"
     << "    int64_t end, uint64_t seed, uint64_t step) {\n";
  for (size_t k = 0; k < p.loads.size(); ++k) {
    std::string t = valueCType(p, p.loads[k].value);
    os << "  const " << t << " *in" << k << " = static_cast<const " << t
       << " *>(in[" << k << "]);\n";
  }
  for (size_t k = 0; k < p.stores.size(); ++k) {
    std::string t = p.sumOf(k) ? "double" : valueCType(p, p.stores[k]);
    os << "  " << t << " *out" << k << " = static_cast<" << t << " *>(out[" << k
       << "]);\n";
  }
}

std::string Language::loopBegin(llvm::raw_ostream &os, const KernelPlan &p,
                                llvm::ArrayRef<size_t>) const {
  int64_t inner = p.inner();
  os << "  for (int64_t r = begin / " << inner << "; r * " << inner
     << " < end; ++r) {\n"
     << "    const int64_t c_begin = r * " << inner << " < begin ? begin - r * "
     << inner << " : 0;\n"
     << "    const int64_t c_end = end - r * " << inner << " < " << inner
     << " ? end - r * " << inner << " : " << inner << ";\n"
     << "#pragma omp simd\n"
     << "    for (int64_t c = c_begin; c < c_end; ++c) {\n"
     << "      const int64_t i = r * " << inner << " + c;\n";
  return "      ";
}

void Language::loopEnd(llvm::raw_ostream &os, const KernelPlan &,
                       llvm::ArrayRef<size_t>) const {
  os << "    }\n  }\n}\n";
}

std::string Language::accumulate(const KernelPlan &, size_t store,
                                 const std::string &v) const {
  return "out" + std::to_string(store) + "[c] += (double)" + v + ";";
}

std::string Language::load(const KernelPlan &p, size_t k) const {
  const KernelLoad &l = p.loads[k];
  std::string in = "in" + std::to_string(k);
  if (stridedIndex("i", p.dims, l.strides) == "i")
    return in + "[i]";
  llvm::ArrayRef<int64_t> dims(p.dims), strides(l.strides);
  std::string row = stridedIndex("r", dims.drop_back(), strides.drop_back());
  int64_t s = strides.back();
  std::string col = s == 0 ? "0" : s == 1 ? "c" : "c * " + std::to_string(s);
  if (row == "0")
    return in + "[" + col + "]";
  return in + "[" + (col == "0" ? row : row + " + " + col) + "]";
}

std::string Language::store(const KernelPlan &, size_t k,
                            const std::string &v) const {
  return "out" + std::to_string(k) + "[i] = " + v + ";";
}

std::string Language::widen(DType t, const std::string &v) const {
  return std::string(t == DType::BF16 ? "strata::kernels::bf16ToFloat("
                                      : "strata::kernels::halfToFloat(") +
         v + ")";
}

std::string Language::narrow(DType t, const std::string &v) const {
  return std::string(t == DType::BF16 ? "strata::kernels::floatToBf16("
                                      : "strata::kernels::floatToHalf(") +
         v + ")";
}

std::string Language::rowLoopBegin(llvm::raw_ostream &os,
                                   const KernelPlan &p) const {
  // The runtime calls a row kernel on whole rows.
  std::string C = std::to_string(p.inner());
  os << "  for (int64_t r = begin / " << C << "; r < end / " << C
     << "; ++r) {\n";
  return "    ";
}

void Language::rowLoopEnd(llvm::raw_ostream &os, const KernelPlan &) const {
  os << "  }\n}\n";
}

std::string Language::colLoopBegin(llvm::raw_ostream &os, const KernelPlan &p,
                                   const std::string &indent,
                                   llvm::ArrayRef<std::string> sums, bool max,
                                   llvm::ArrayRef<size_t>) const {
  std::string C = std::to_string(p.inner());
  os << "#pragma omp simd";
  if (!sums.empty())
    os << " reduction(" << (max ? "max" : "+") << " : "
       << llvm::join(sums, ", ") << ")";
  os << "\n"
     << indent << "for (int64_t c = 0; c < " << C << "; ++c) {\n"
     << indent << "  const int64_t i = r * " << C << " + c;\n";
  return indent + "  ";
}

void Language::colLoopEnd(llvm::raw_ostream &os, const KernelPlan &,
                          const std::string &indent,
                          llvm::ArrayRef<size_t>) const {
  os << indent << "}\n";
}

std::string Language::scratchDecl(const KernelPlan &p, const std::string &type,
                                  const std::string &name) const {
  return "alignas(64) " + type + " " + name + "[" + std::to_string(p.inner()) +
         "];";
}

std::string Language::scratchAt(const std::string &name) const {
  return name + "[c]";
}

std::string Language::negInfinity(DType t) const {
  return t == DType::F32 ? "-HUGE_VALF" : "-HUGE_VAL";
}

std::string Language::math(llvm::StringRef fn, DType) const {
  if (fn == "kexp" || fn == "ktanh")
    return "strata::kernels::" + fn.str();
  return "std::" + fn.str();
}

} // namespace strata::codegen
