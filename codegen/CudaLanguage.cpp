//===- CudaLanguage.cpp - The CUDA target: what differs from C++ ----------===//
//
// The prelude and the row reductions are in CudaPrelude.cpp. Kernels take typed
// pointer parameters (what cuLaunchKernel passes) and follow the launch
// contract of Renderer.h, with the geometry of CudaLaunch.cpp compiled in as
// constants. A thread works on groups of `vector` consecutive elements of the
// innermost dim: the group's operands are read with one 128-bit load each
// (float4 / double2) when every vector operand is aligned (one check per
// kernel), else element by element, then an unrolled loop computes the group's
// elements (index `i`, column `c`) into registers that are stored the same way.
// Broadcast operands index by the row and column, or by div/mod of the flat
// index. Math functions take their C names with the f suffix for float, the CPU
// kernels' kexp/ktanh becoming CUDA's exp/tanh.
//
// Row kernels run a block per row; thread t owns the column groups t,
// t + threads, ... (CudaLaunch::groupsPerThread of them), so scratch rows and
// column-sum accumulators are per-thread arrays of groupsPerThread * vector
// elements (at most 8), indexed by constants once the loops are unrolled:
// registers, never local memory. Row sums are f64: butterfly shuffles within
// a warp (every lane gets the same bits), then the warps' sums added in warp
// order through shared memory. Column sums (dw, db, bias gradients) cut the
// rows into the fixed chunks of CudaLaunch; each chunk's sums go to the
// workspace `partial` and SYMBOL_sums adds the chunks in order, so the bits
// depend on the shapes only, not on the grid (no atomics).
//
//===----------------------------------------------------------------------===//
#include "codegen/Language.h"

namespace strata::codegen {

namespace {

using Kind = CudaLaunch::Kind;

std::string num(int64_t v) { return std::to_string(v); }

// bf16 / f16 <-> f32 (cudaFloat16Helpers, runtime/kernels/Float16.h's
// conversions bit for bit).
std::string cudaWiden(DType t, const std::string &v) {
  return (t == DType::BF16 ? "strata_bf16_to_float("
                           : "strata_half_to_float(") +
         v + ")";
}
std::string cudaNarrow(DType t, const std::string &v) {
  return (t == DType::BF16 ? "strata_float_to_bf16("
                           : "strata_float_to_half(") +
         v + ")";
}
std::string idxType(const CudaLaunch &l) {
  return l.index32 ? "int" : "int64_t";
}
bool isRowKind(const CudaLaunch &l) {
  return l.kind == Kind::Row || l.kind == Kind::RowSums;
}

// The element index of load `l` at row `r` and column `c` (kernels over
// whole rows) or at flat index `i`.
std::string elementIndex(const KernelPlan &p, const KernelLoad &l,
                         llvm::StringRef i, llvm::StringRef r,
                         llvm::StringRef c) {
  if (!p.wholeRows())
    return stridedIndex(i, p.dims, l.strides);
  llvm::ArrayRef<int64_t> dims(p.dims), strides(l.strides);
  std::string row = stridedIndex(r, dims.drop_back(), strides.drop_back());
  int64_t s = strides.back();
  std::string col = s == 0 ? "0" : s == 1 ? c.str() : c.str() + " * " + num(s);
  if (row == "0")
    return col;
  return col == "0" ? row : row + " + " + col;
}

// The index of the current element within a thread's per-row arrays
// (scratch rows, column-sum accumulators).
std::string slot(const CudaLaunch &l) {
  std::string e = l.vector > 1 ? "el" : "0";
  if (l.groupsPerThread <= 1)
    return e;
  std::string k = l.vector > 1 ? "kg * " + num(l.vector) : "kg";
  return e == "0" ? k : k + " + " + e;
}

// `const bool vec`: whether every vector operand is aligned to its group.
void vectorCheck(llvm::raw_ostream &os, const KernelPlan &p,
                 const CudaLaunch &l) {
  if (l.vector == 1)
    return;
  std::vector<std::string> checks;
  auto bytes = [&](ValueId v) {
    return num(l.vector * (p.body->type(v).dtype == DType::F64 ? 8 : 4));
  };
  for (size_t k = 0; k < p.loads.size(); ++k)
    if (cudaVectorLoad(p, l, k))
      checks.push_back("strata_aligned(in" + num(k) + ", " +
                       bytes(p.loads[k].value) + ")");
  for (size_t k = 0; k < p.stores.size(); ++k)
    if (!p.sumOf(k))
      checks.push_back("strata_aligned(out" + num(k) + ", " +
                       bytes(p.stores[k]) + ")");
  os << "  const bool vec = "
     << (checks.empty() ? "false" : llvm::join(checks, " &&\n      ")) << ";\n";
}

// `double acc<store>[n] = {};` for each column sum.
void declareSums(llvm::raw_ostream &os, const KernelPlan &p, int64_t n,
                 const std::string &indent) {
  for (const KernelSum &s : p.sums)
    os << indent << "double acc" << s.store << "[" << n << "] = {};\n";
}

// The rows of the current chunk: `for (r ...) {` at `indent`.
void chunkRows(llvm::raw_ostream &os, const KernelPlan &p, const CudaLaunch &l,
               const std::string &indent) {
  const std::string I = idxType(l), R = num(l.rowsPerChunk);
  int64_t rows = p.numElements() / p.inner();
  os << indent << "const " << I << " rEnd = chunk == " << l.chunks - 1 << " ? "
     << rows << " : (chunk + 1) * " << R << ";\n"
     << indent << "for (" << I << " r = chunk * " << R
     << "; r < rEnd; ++r) {\n";
}

// The chunk's column sums of the group at c0 into the workspace.
void writePartials(llvm::raw_ostream &os, const KernelPlan &p,
                   const CudaLaunch &l, const std::string &indent) {
  std::string in = indent;
  if (l.vector > 1) {
    os << indent << "#pragma unroll\n"
       << indent << "for (int el = 0; el < " << l.vector << "; ++el) {\n";
    in += "  ";
  }
  for (size_t s = 0; s < p.sums.size(); ++s)
    os << in << "partial[(" << num(int64_t(s) * l.chunks) << " + chunk) * "
       << p.inner() << " + c0" << (l.vector > 1 ? " + el" : "") << "] = acc"
       << p.sums[s].store << "[" << slot(l) << "];\n";
  if (l.vector > 1)
    os << indent << "}\n";
}

// Row kernels: opens the walk over the thread's column groups (c0 the
// group's first column); returns the indentation inside.
std::string ownedGroupsBegin(llvm::raw_ostream &os, const KernelPlan &p,
                             const CudaLaunch &l, const std::string &indent) {
  const std::string I = idxType(l);
  std::string in = indent, g = "(" + I + ")threadIdx.x";
  if (l.groupsPerThread > 1) {
    os << in << "#pragma unroll\n"
       << in << "for (int kg = 0; kg < " << l.groupsPerThread << "; ++kg) {\n"
       << in << "  const " << I << " grp = (" << I << ")threadIdx.x + "
       << l.threads << " * kg;\n";
    in += "  ";
    g = "grp";
  }
  os << in << "if (" << g << " < " << p.inner() / l.vector << ") {\n"
     << in << "  const " << I << " c0 = " << g
     << (l.vector > 1 ? " * " + num(l.vector) : "") << ";\n";
  return in + "  ";
}

void ownedGroupsEnd(llvm::raw_ostream &os, const CudaLaunch &l,
                    const std::string &indent) {
  if (l.groupsPerThread > 1)
    os << indent << "  }\n";
  os << indent << "}\n";
}

// SYMBOL_sums: each column's chunks, in chunk order.
void writeSumsKernel(llvm::raw_ostream &os, const KernelPlan &p,
                     const CudaLaunch &l) {
  const std::string I = idxType(l), C = num(p.inner());
  os << "\nextern \"C\" __global__ void __launch_bounds__(" << l.sumThreads
     << ") " << p.name << "_sums(const double *partial";
  for (const KernelSum &s : p.sums)
    os << ", " << valueCType(p, p.stores[s.store]) << " *out" << s.store;
  os << ") {\n"
     << "  for (int64_t cc = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; "
        "cc < "
     << C << ";\n"
     << "       cc += (int64_t)blockDim.x * gridDim.x) {\n"
     << "    const " << I << " c = (" << I << ")cc;\n";
  for (size_t s = 0; s < p.sums.size(); ++s) {
    int32_t k = p.sums[s].store;
    os << "    double sum" << k << " = 0.0;\n"
       << "    for (" << I << " chunk = 0; chunk < " << l.chunks
       << "; ++chunk)\n"
       << "      sum" << k << " += partial[(" << num(int64_t(s) * l.chunks)
       << " + chunk) * " << C << " + c];\n"
       << "    out" << k << "[c] = ";
    if (DType t = p.storageOf(p.stores[k]); isFloat16(t))
      os << cudaNarrow(t, "(float)sum" + num(k)) << ";\n";
    else
      os << "(" << valueCType(p, p.stores[k]) << ")sum" << k << ";\n";
  }
  os << "  }\n}\n";
}

const char *kindName(Kind k) {
  switch (k) {
  case Kind::Elementwise:
    return "elementwise";
  case Kind::ColumnSums:
    return "elementwise with column sums";
  case Kind::Row:
    return "row kernel";
  case Kind::RowSums:
    return "row kernel with column sums";
  }
  llvm_unreachable("every kind");
}

} // namespace

void CudaLanguage::launchComment(llvm::raw_ostream &os,
                                 const KernelPlan &p) const {
  CudaLaunch l = cudaLaunchOf(p);
  os << "//   " << kindName(l.kind) << ": blocks of exactly " << l.threads
     << " threads (1-D), any grid (" << l.blocks << " fill a GPU); groups of "
     << l.vector << ", " << (l.index32 ? "32" : "64") << "-bit indices\n";
  if (isRowKind(l))
    os << "//   a block per row, " << l.groupsPerThread
       << " group(s) per thread\n";
  if (l.partialDoubles)
    os << "//   column sums: " << l.chunks << " chunks of " << l.rowsPerChunk
       << " rows into partial (" << l.partialDoubles << " doubles), then "
       << p.name << "_sums on blocks of " << l.sumThreads << "\n";
}

void CudaLanguage::signature(llvm::raw_ostream &os, const KernelPlan &p) const {
  os << "extern \"C\" __global__ void __launch_bounds__("
     << cudaLaunchOf(p).threads << ") " << p.name << "(";
  for (size_t k = 0; k < p.loads.size(); ++k)
    os << "const " << valueCType(p, p.loads[k].value) << " *in" << k << ", ";
  for (size_t k = 0; k < p.stores.size(); ++k)
    os << valueCType(p, p.stores[k]) << " *out" << k << ", ";
  if (!p.sums.empty())
    os << "double *partial, ";
  os << "int64_t n,\n    uint64_t seed, uint64_t step) {\n";
}

std::string CudaLanguage::groupBegin(llvm::raw_ostream &os, const KernelPlan &p,
                                     const std::string &indent,
                                     llvm::ArrayRef<size_t> stores) const {
  CudaLaunch l = cudaLaunchOf(p);
  const std::string I = idxType(l), G = num(l.vector);
  if (l.vector > 1) {
    for (size_t k = 0; k < p.loads.size(); ++k) {
      if (!cudaVectorLoad(p, l, k))
        continue;
      os << indent << valueCType(p, p.loads[k].value) << " a" << k << "[" << G
         << "];\n"
         << indent << "strata_load(a" << k << ", in" << k << " + "
         << elementIndex(p, p.loads[k], "i0", "r", "c0") << ", vec);\n";
    }
    for (size_t k : stores)
      os << indent << valueCType(p, p.stores[k]) << " b" << k << "[" << G
         << "];\n";
    os << indent << "#pragma unroll\n"
       << indent << "for (int el = 0; el < " << G << "; ++el) {\n"
       << indent << "  const " << I << " i = i0 + el;\n";
  } else {
    os << indent << "{\n" << indent << "  const " << I << " i = i0;\n";
  }
  if (p.wholeRows())
    os << indent << "  const " << I << " c = c0"
       << (l.vector > 1 ? " + el" : "") << ";\n";
  if (l.kind != Kind::Elementwise)
    os << indent << "  const int j = " << slot(l) << ";\n";
  return indent + "  ";
}

void CudaLanguage::groupEnd(llvm::raw_ostream &os, const KernelPlan &p,
                            const std::string &indent,
                            llvm::ArrayRef<size_t> stores) const {
  os << indent << "}\n";
  if (cudaLaunchOf(p).vector > 1)
    for (size_t k : stores)
      os << indent << "strata_store(out" << k << " + i0, b" << k << ", vec);\n";
}

std::string CudaLanguage::loopBegin(llvm::raw_ostream &os, const KernelPlan &p,
                                    llvm::ArrayRef<size_t> stores) const {
  CudaLaunch l = cudaLaunchOf(p);
  const std::string I = idxType(l), G = num(l.vector);
  vectorCheck(os, p, l);
  if (l.kind == Kind::Elementwise) {
    os << "  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; "
          "g < "
       << p.numElements() / l.vector << ";\n"
       << "       g += (int64_t)blockDim.x * gridDim.x) {\n"
       << "    const " << I << " i0 = (" << I << ")g"
       << (l.vector > 1 ? " * " + G : "") << ";\n";
    return groupBegin(os, p, "    ", stores);
  }
  int64_t groups = p.inner() / l.vector;
  os << "  for (int64_t w = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; "
        "w < "
     << l.chunks * groups << ";\n"
     << "       w += (int64_t)blockDim.x * gridDim.x) {\n"
     << "    const " << I << " chunk = (" << I << ")(w / " << groups
     << "), c0 = (" << I << ")(w % " << groups << ")"
     << (l.vector > 1 ? " * " + G : "") << ";\n";
  declareSums(os, p, l.vector, "    ");
  chunkRows(os, p, l, "    ");
  os << "      const " << I << " i0 = r * " << p.inner() << " + c0;\n";
  return groupBegin(os, p, "      ", stores);
}

void CudaLanguage::loopEnd(llvm::raw_ostream &os, const KernelPlan &p,
                           llvm::ArrayRef<size_t> stores) const {
  CudaLaunch l = cudaLaunchOf(p);
  if (l.kind == Kind::Elementwise) {
    groupEnd(os, p, "    ", stores);
    os << "  }\n}\n";
    return;
  }
  groupEnd(os, p, "      ", stores);
  os << "    }\n";
  writePartials(os, p, l, "    ");
  os << "  }\n}\n";
  writeSumsKernel(os, p, l);
}

std::string CudaLanguage::accumulate(const KernelPlan &, size_t store,
                                     const std::string &v) const {
  return "acc" + std::to_string(store) + "[j] += (double)" + v + ";";
}

std::string CudaLanguage::load(const KernelPlan &p, size_t k) const {
  if (cudaVectorLoad(p, cudaLaunchOf(p), k))
    return "a" + num(k) + "[el]";
  std::string at =
      "in" + num(k) + "[" + elementIndex(p, p.loads[k], "i", "r", "c") + "]";
  return at;
}

std::string CudaLanguage::store(const KernelPlan &p, size_t k,
                                const std::string &v) const {
  if (cudaLaunchOf(p).vector > 1)
    return "b" + num(k) + "[el] = " + v + ";";
  return "out" + num(k) + "[i] = " + v + ";";
}

std::string CudaLanguage::widen(DType t, const std::string &v) const {
  return cudaWiden(t, v);
}

std::string CudaLanguage::narrow(DType t, const std::string &v) const {
  return cudaNarrow(t, v);
}

std::string CudaLanguage::math(llvm::StringRef fn, DType t) const {
  std::string name = fn.str();
  if (fn == "kexp" || fn == "ktanh")
    name = fn.drop_front().str(); // CUDA's own
  return t == DType::F32 ? name + "f" : name;
}

std::string CudaLanguage::rowLoopBegin(llvm::raw_ostream &os,
                                       const KernelPlan &p) const {
  CudaLaunch l = cudaLaunchOf(p);
  const std::string I = idxType(l);
  // A block of another shape would leave columns out: fail the launch.
  os << "  if (blockDim.x != " << l.threads
     << " || blockDim.y != 1 || blockDim.z != 1)\n"
     << "    __trap(); // the launch contract: 1-D blocks of " << l.threads
     << "\n"
     << "  constexpr int NW = " << l.threads / 32 << "; // warps per block\n"
     << "  __shared__ double strata_red[NW];\n";
  vectorCheck(os, p, l);
  if (l.kind == Kind::Row) {
    os << "  for (int64_t row = blockIdx.x; row < "
       << p.numElements() / p.inner() << "; row += gridDim.x) {\n"
       << "    const " << I << " r = (" << I << ")row;\n";
    return "    ";
  }
  os << "  for (int64_t ch = blockIdx.x; ch < " << l.chunks
     << "; ch += gridDim.x) {\n"
     << "    const " << I << " chunk = (" << I << ")ch;\n";
  declareSums(os, p, l.groupsPerThread * l.vector, "    ");
  chunkRows(os, p, l, "    ");
  return "      ";
}

void CudaLanguage::rowLoopEnd(llvm::raw_ostream &os,
                              const KernelPlan &p) const {
  CudaLaunch l = cudaLaunchOf(p);
  if (l.kind == Kind::Row) {
    os << "  }\n}\n";
    return;
  }
  os << "    }\n";
  writePartials(os, p, l, ownedGroupsBegin(os, p, l, "    "));
  ownedGroupsEnd(os, l, "    ");
  os << "  }\n}\n";
  writeSumsKernel(os, p, l);
}

std::string CudaLanguage::colLoopBegin(llvm::raw_ostream &os,
                                       const KernelPlan &p,
                                       const std::string &indent,
                                       llvm::ArrayRef<std::string>, bool,
                                       llvm::ArrayRef<size_t> stores) const {
  CudaLaunch l = cudaLaunchOf(p);
  std::string in = ownedGroupsBegin(os, p, l, indent);
  os << in << "const " << idxType(l) << " i0 = r * " << p.inner() << " + c0;\n";
  return groupBegin(os, p, in, stores);
}

void CudaLanguage::colLoopEnd(llvm::raw_ostream &os, const KernelPlan &p,
                              const std::string &indent,
                              llvm::ArrayRef<size_t> stores) const {
  CudaLaunch l = cudaLaunchOf(p);
  groupEnd(os, p, indent + (l.groupsPerThread > 1 ? "    " : "  "), stores);
  ownedGroupsEnd(os, l, indent);
}

void CudaLanguage::rowCombine(llvm::raw_ostream &os, const std::string &indent,
                              const std::string &var, bool max) const {
  os << indent << var << " = "
     << (max ? "strata_block_max<NW>" : "strata_block_sum<NW>") << "(" << var
     << ", strata_red);\n";
}

std::string CudaLanguage::scratchDecl(const KernelPlan &p,
                                      const std::string &type,
                                      const std::string &name) const {
  CudaLaunch l = cudaLaunchOf(p);
  return type + " " + name + "[" + num(l.groupsPerThread * l.vector) + "];";
}

std::string CudaLanguage::scratchAt(const std::string &name) const {
  return name + "[j]";
}

std::string CudaLanguage::negInfinity(DType t) const {
  // -inf as a float bit pattern (widened exactly for f64): one intrinsic
  // that the interpret mode's SIMT header has too.
  return t == DType::F32 ? "-__int_as_float(0x7f800000)"
                         : "(double)-__int_as_float(0x7f800000)";
}

} // namespace strata::codegen
