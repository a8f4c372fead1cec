//===- Language.h - What the C++ and CUDA targets render differently ------===//
//
// The renderer (Renderer.cpp) writes everything shared: kernel comments, the
// per-element loads, op rules and stores. A Language writes the rest. The
// C++ language is the base; CUDA overrides only what differs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/KernelPlan.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace strata::codegen {

class Language {
public:
  virtual ~Language() = default;
  /// Includes / typedefs and the STRATA_FN qualifier of helper functions.
  virtual void prelude(llvm::raw_ostream &os) const;
  /// The signature and whatever binds the in<k> / out<k> pointers, up to and
  /// including the function's opening brace.
  virtual void signature(llvm::raw_ostream &os, const KernelPlan &p) const;
  /// Opens the loop nest; inside, `i` is the element's flat index. Returns
  /// the indentation of the loop body.
  virtual std::string loopBegin(llvm::raw_ostream &os,
                                const KernelPlan &p) const;
  /// Closes the loop nest and the function.
  virtual void loopEnd(llvm::raw_ostream &os, const KernelPlan &p) const;
  /// The statement adding the current element's `v` into column sum `store`.
  virtual std::string accumulate(const KernelPlan &p, size_t store,
                                 const std::string &v) const;
  /// The element index of load `l` at the current element.
  virtual std::string loadIndex(const KernelPlan &p, const KernelLoad &l) const;
  /// A math function for element type `t`: exp, log, sqrt, erf (libm's) or
  /// kexp, ktanh (runtime/kernels/FastMath.h's).
  virtual std::string math(llvm::StringRef fn, DType t) const;
};

class CudaLanguage : public Language {
public:
  void prelude(llvm::raw_ostream &os) const override;
  void signature(llvm::raw_ostream &os, const KernelPlan &p) const override;
  std::string loopBegin(llvm::raw_ostream &os,
                        const KernelPlan &p) const override;
  void loopEnd(llvm::raw_ostream &os, const KernelPlan &p) const override;
  std::string accumulate(const KernelPlan &p, size_t store,
                         const std::string &v) const override;
  std::string loadIndex(const KernelPlan &p,
                        const KernelLoad &l) const override;
  std::string math(llvm::StringRef fn, DType t) const override;
};

/// The C type of body value `v` of plan `p`.
std::string valueCType(const KernelPlan &p, ValueId v);

/// The offset of the element at flat index `var` of a row-major loop over
/// `dims`, for a value with `strides` along them: the sum of
/// coordinate(d) * stride(d), without the terms and operations that vanish
/// ("0" if all strides are 0).
std::string stridedIndex(llvm::StringRef var, llvm::ArrayRef<int64_t> dims,
                         llvm::ArrayRef<int64_t> strides);

} // namespace strata::codegen
