//===- Language.h - What the C++ and CUDA targets render differently ------===//
//
// The renderer (Renderer.cpp) writes everything shared: kernel comments, the
// per-element loads, op rules and stores. A Language writes the rest. The
// C++ language is the base; CUDA overrides only what differs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/KernelPlan.h"
#include "codegen/Renderer.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace strata::codegen {

class Language {
public:
  virtual ~Language() = default;
  /// Includes / typedefs, helpers and the STRATA_FN qualifier of helper
  /// functions.
  virtual void prelude(llvm::raw_ostream &os) const;
  /// Comment lines after a kernel's header saying how it must be launched
  /// (nothing on the CPU: the runtime calls it on element ranges).
  virtual void launchComment(llvm::raw_ostream &os, const KernelPlan &p) const {
  }
  /// The signature and whatever binds the in<k> / out<k> pointers, up to and
  /// including the function's opening brace.
  virtual void signature(llvm::raw_ostream &os, const KernelPlan &p) const;
  /// Opens the loop nest of an elementwise kernel; inside, `i` is the
  /// element's flat index. `stores` are the stores its body writes. Returns
  /// the indentation of the loop body.
  virtual std::string loopBegin(llvm::raw_ostream &os, const KernelPlan &p,
                                llvm::ArrayRef<size_t> stores) const;
  /// Closes the loop nest and the function.
  virtual void loopEnd(llvm::raw_ostream &os, const KernelPlan &p,
                       llvm::ArrayRef<size_t> stores) const;
  /// The statement adding the current element's `v` into column sum `store`.
  virtual std::string accumulate(const KernelPlan &p, size_t store,
                                 const std::string &v) const;
  /// The value of load `k` at the current element, as stored (a 16-bit
  /// pattern for bf16 / f16: the writer widens it with `widen`).
  virtual std::string load(const KernelPlan &p, size_t k) const;
  /// The statement storing `v` (already in the storage type: the writer
  /// rounds 16-bit stores with `narrow`) as the current element of store `k`.
  virtual std::string store(const KernelPlan &p, size_t k,
                            const std::string &v) const;
  /// The f32 value of the bf16 / f16 pattern `v` (exact), and the pattern
  /// of the f32 `v` rounded to nearest even: runtime/kernels/Float16.h's
  /// conversions on the CPU, their CUDA counterparts on the GPU.
  virtual std::string widen(DType t, const std::string &v) const;
  virtual std::string narrow(DType t, const std::string &v) const;
  /// A math function for element type `t`: exp, log, sqrt, erf (libm's) or
  /// kexp, ktanh (runtime/kernels/FastMath.h's).
  virtual std::string math(llvm::StringRef fn, DType t) const;

  // Row kernels (RowKernel.cpp): a loop over rows `r`, inside it loops over
  // the columns `c` of row r (with `i` the element's flat index).
  /// Helpers that row kernels use, once per translation unit.
  virtual void rowPrelude(llvm::raw_ostream &os) const {}
  /// Opens the loop over rows; returns its body's indentation.
  virtual std::string rowLoopBegin(llvm::raw_ostream &os,
                                   const KernelPlan &p) const;
  /// Closes it and the function (and writes what the target adds after).
  virtual void rowLoopEnd(llvm::raw_ostream &os, const KernelPlan &p) const;
  /// Opens a loop over the row's columns at `indent`, adding into (or taking
  /// the max into, with `max`) the variables `sums`, writing `stores`;
  /// returns the body's indentation.
  virtual std::string colLoopBegin(llvm::raw_ostream &os, const KernelPlan &p,
                                   const std::string &indent,
                                   llvm::ArrayRef<std::string> sums,
                                   bool max = false,
                                   llvm::ArrayRef<size_t> stores = {}) const;
  virtual void colLoopEnd(llvm::raw_ostream &os, const KernelPlan &p,
                          const std::string &indent,
                          llvm::ArrayRef<size_t> stores = {}) const;
  /// After a column loop: combines the partial `var` of each thread of the
  /// row into the row's value (nothing on the CPU, one thread per row).
  virtual void rowCombine(llvm::raw_ostream &os, const std::string &indent,
                          const std::string &var, bool max) const {}
  /// The declaration of a scratch row and its element at column c.
  virtual std::string scratchDecl(const KernelPlan &p, const std::string &type,
                                  const std::string &name) const;
  virtual std::string scratchAt(const std::string &name) const;
  virtual std::string negInfinity(DType t) const;
};

class CudaLanguage : public Language {
public:
  void prelude(llvm::raw_ostream &os) const override;
  void launchComment(llvm::raw_ostream &os, const KernelPlan &p) const override;
  void signature(llvm::raw_ostream &os, const KernelPlan &p) const override;
  std::string loopBegin(llvm::raw_ostream &os, const KernelPlan &p,
                        llvm::ArrayRef<size_t> stores) const override;
  void loopEnd(llvm::raw_ostream &os, const KernelPlan &p,
               llvm::ArrayRef<size_t> stores) const override;
  std::string accumulate(const KernelPlan &p, size_t store,
                         const std::string &v) const override;
  std::string load(const KernelPlan &p, size_t k) const override;
  std::string store(const KernelPlan &p, size_t k,
                    const std::string &v) const override;
  std::string widen(DType t, const std::string &v) const override;
  std::string narrow(DType t, const std::string &v) const override;
  std::string math(llvm::StringRef fn, DType t) const override;
  void rowPrelude(llvm::raw_ostream &os) const override;
  std::string rowLoopBegin(llvm::raw_ostream &os,
                           const KernelPlan &p) const override;
  void rowLoopEnd(llvm::raw_ostream &os, const KernelPlan &p) const override;
  std::string colLoopBegin(llvm::raw_ostream &os, const KernelPlan &p,
                           const std::string &indent,
                           llvm::ArrayRef<std::string> sums, bool max,
                           llvm::ArrayRef<size_t> stores) const override;
  void colLoopEnd(llvm::raw_ostream &os, const KernelPlan &p,
                  const std::string &indent,
                  llvm::ArrayRef<size_t> stores) const override;
  void rowCombine(llvm::raw_ostream &os, const std::string &indent,
                  const std::string &var, bool max) const override;
  std::string scratchDecl(const KernelPlan &p, const std::string &type,
                          const std::string &name) const override;
  std::string scratchAt(const std::string &name) const override;
  std::string negInfinity(DType t) const override;

private:
  /// The element loop of one group of vector-width elements at `indent`
  /// (`i0` its first flat index, `c0` its first column in wholeRows
  /// kernels): the group's vector loads, then a loop over its elements.
  std::string groupBegin(llvm::raw_ostream &os, const KernelPlan &p,
                         const std::string &indent,
                         llvm::ArrayRef<size_t> stores) const;
  void groupEnd(llvm::raw_ostream &os, const KernelPlan &p,
                const std::string &indent, llvm::ArrayRef<size_t> stores) const;
};

/// Whether the CUDA kernel of `p` (launched as `l`) reads load `k` a group
/// of l.vector elements at a time (a float operand whose innermost stride
/// is 1 and whose other strides keep a group aligned), rather than element
/// by element.
bool cudaVectorLoad(const KernelPlan &p, const CudaLaunch &l, size_t k);

/// The C type body value `v` of plan `p` is held in memory as ("unsigned
/// short" for a 16-bit pattern).
std::string valueCType(const KernelPlan &p, ValueId v);

/// The C type a kernel computes `v` in (computeType: "float" for bf16 /
/// f16 values and for those stored as such).
std::string computeCType(const KernelPlan &p, ValueId v);

/// The offset of the element at flat index `var` of a row-major loop over
/// `dims`, for a value with `strides` along them: the sum of
/// coordinate(d) * stride(d), without the terms and operations that vanish
/// ("0" if all strides are 0).
std::string stridedIndex(llvm::StringRef var, llvm::ArrayRef<int64_t> dims,
                         llvm::ArrayRef<int64_t> strides);

} // namespace strata::codegen
