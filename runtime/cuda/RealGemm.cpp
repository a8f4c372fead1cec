//===- RealGemm.cpp - GEMMs through cuBLASLt, loaded with dlopen ----------===//
//
// libcublasLt is opened at first use (by soname, newest first) and its
// entry points looked up by symbol; types are declared by their ABI
// (opaque handles, an int status, the 64-byte algorithm and the heuristic
// result of cublasLt.h), so no CUDA header is needed to build. Each GEMM
// describes its operation (compute 32F for f32 and for bf16 / f16 inputs,
// so no TF32 unless asked; 64F for f64) and epilogue (bias, GELU with its
// auxiliary output, GELU's and the bias' gradients), its three layouts with
// their types, batch count and strides, asks the heuristics for the best
// algorithm within the workspace, and runs.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/RealGemm.h"

#include <dlfcn.h>

#include <cstring>

namespace strata::cuda {

namespace {

using Status = int;
using Handle = void *;
using Desc = void *;
using Layout = void *;
using Pref = void *;
struct Algo {
  uint64_t data[8];
};
struct Heuristic {
  Algo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

// Enum values of cublasLt.h / cublas_api.h / library_types.h.
constexpr int kCompute32F = 68, kCompute64F = 70;
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14;
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7,
              kDescBiasPointer = 8, kDescAuxPointer = 11, kDescAuxLd = 12,
              kDescAuxBatchStride = 13;
// cublasLtEpilogue_t
constexpr int32_t kEpilogueDefault = 1, kEpilogueBias = 4,
                  kEpilogueGeluAuxBias = 164, kEpilogueDGelu = 192,
                  kEpilogueDGeluBGrad = 208;
constexpr int kLayoutBatchCount = 5, kLayoutBatchStride = 6;
constexpr int kPrefMaxWorkspace = 1;
constexpr int kOpN = 0, kOpT = 1;

struct Api {
  Status (*create)(Handle *);
  Status (*descCreate)(Desc *, int, int);
  Status (*descDestroy)(Desc);
  Status (*descSet)(Desc, int, const void *, size_t);
  Status (*layoutCreate)(Layout *, int, uint64_t, uint64_t, int64_t);
  Status (*layoutDestroy)(Layout);
  Status (*layoutSet)(Layout, int, const void *, size_t);
  Status (*prefCreate)(Pref *);
  Status (*prefDestroy)(Pref);
  Status (*prefSet)(Pref, int, const void *, size_t);
  Status (*heuristic)(Handle, Desc, Layout, Layout, Layout, Layout, Pref, int,
                      Heuristic *, int *);
  Status (*matmul)(Handle, Desc, const void *, const void *, Layout,
                   const void *, Layout, const void *, const void *, Layout,
                   void *, Layout, const Algo *, void *, size_t, void *);
  const char *(*statusString)(Status);
};

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

int dataType(DType t) {
  switch (t) {
  case DType::F64:
    return kR64F;
  case DType::BF16:
    return kR16BF;
  case DType::F16:
    return kR16F;
  default:
    return kR32F;
  }
}

int32_t epilogueOf(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return kEpilogueDefault;
  case Epilogue::Bias:
    return kEpilogueBias;
  case Epilogue::GeluAuxBias:
    return kEpilogueGeluAuxBias;
  case Epilogue::DGelu:
    return kEpilogueDGelu;
  case Epilogue::DGeluBGrad:
    return kEpilogueDGeluBGrad;
  }
  return kEpilogueDefault;
}

class CublasLt : public GemmEngine {
public:
  CublasLt(const Api &api, Handle handle) : api_(api), handle_(handle) {}

  llvm::Error run(const Gemm &g, void *stream, DevicePtr workspace,
                  size_t workspaceBytes) override {
    bool f64 = g.c == DType::F64;
    int typeAB = dataType(g.ab), typeC = dataType(g.c);
    Desc desc = nullptr;
    Layout a = nullptr, b = nullptr, c = nullptr;
    Pref pref = nullptr;
    auto cleanup = [&] {
      if (pref)
        api_.prefDestroy(pref);
      for (Layout l : {a, b, c})
        if (l)
          api_.layoutDestroy(l);
      if (desc)
        api_.descDestroy(desc);
    };
    llvm::Error e = [&]() -> llvm::Error {
      if (auto e = check(
              api_.descCreate(&desc, f64 ? kCompute64F : kCompute32F,
                              f64 ? kR64F : kR32F),
              "cublasLtMatmulDescCreate"))
        return e;
      int ta = g.transA ? kOpT : kOpN, tb = g.transB ? kOpT : kOpN;
      if (auto e =
              check(api_.descSet(desc, kDescTransA, &ta, sizeof ta), "transa"))
        return e;
      if (auto e =
              check(api_.descSet(desc, kDescTransB, &tb, sizeof tb), "transb"))
        return e;
      if (auto e = setEpilogue(desc, g))
        return e;
      struct Spec {
        Layout *l;
        int type;
        int64_t rows, cols, ld, stride;
      } specs[] = {{&a, typeAB, g.transA ? g.k : g.m, g.transA ? g.m : g.k,
                    g.lda, g.strideA},
                   {&b, typeAB, g.transB ? g.n : g.k, g.transB ? g.k : g.n,
                    g.ldb, g.strideB},
                   {&c, typeC, g.m, g.n, g.ldc, g.strideC}};
      for (const Spec &s : specs) {
        if (auto e = check(api_.layoutCreate(s.l, s.type, uint64_t(s.rows),
                                             uint64_t(s.cols), s.ld),
                           "cublasLtMatrixLayoutCreate"))
          return e;
        int32_t count = int32_t(g.batch);
        int64_t stride = s.stride;
        if (auto e = check(
                api_.layoutSet(*s.l, kLayoutBatchCount, &count, sizeof count),
                "batch count"))
          return e;
        if (auto e = check(api_.layoutSet(*s.l, kLayoutBatchStride, &stride,
                                          sizeof stride),
                           "batch stride"))
          return e;
      }
      if (auto e = check(api_.prefCreate(&pref), "preference"))
        return e;
      uint64_t ws = workspaceBytes;
      if (auto e = check(api_.prefSet(pref, kPrefMaxWorkspace, &ws, sizeof ws),
                         "workspace preference"))
        return e;
      Heuristic h;
      int found = 0;
      if (auto e = check(
              api_.heuristic(handle_, desc, a, b, c, c, pref, 1, &h, &found),
              "cublasLtMatmulAlgoGetHeuristic"))
        return e;
      if (!found)
        return err("cublasLt has no algorithm for this GEMM (m " +
                   llvm::Twine(g.m) + ", n " + llvm::Twine(g.n) + ", k " +
                   llvm::Twine(g.k) + ")");
      float alpha32 = float(g.alpha), beta32 = float(g.beta);
      const void *alpha = f64 ? static_cast<const void *>(&g.alpha)
                              : static_cast<const void *>(&alpha32);
      const void *beta = f64 ? static_cast<const void *>(&g.beta)
                             : static_cast<const void *>(&beta32);
      return check(api_.matmul(handle_, desc, alpha,
                               reinterpret_cast<void *>(g.A), a,
                               reinterpret_cast<void *>(g.B), b, beta,
                               reinterpret_cast<void *>(g.C), c,
                               reinterpret_cast<void *>(g.C), c, &h.algo,
                               reinterpret_cast<void *>(workspace),
                               workspaceBytes, stream),
                   "cublasLtMatmul");
    }();
    cleanup();
    return e;
  }

private:
  /// The epilogue and its vectors (Driver.h's Epilogue).
  llvm::Error setEpilogue(Desc desc, const Gemm &g) {
    int32_t epilogue = epilogueOf(g.epilogue);
    if (auto e = check(api_.descSet(desc, kDescEpilogue, &epilogue,
                                    sizeof epilogue),
                       "epilogue"))
      return e;
    if (g.bias) {
      void *bias = reinterpret_cast<void *>(g.bias);
      if (auto e = check(api_.descSet(desc, kDescBiasPointer, &bias,
                                      sizeof bias),
                         "bias pointer"))
        return e;
    }
    if (!g.aux)
      return llvm::Error::success();
    void *aux = reinterpret_cast<void *>(g.aux);
    int64_t ld = g.ldAux, stride = g.strideAux;
    if (auto e = check(api_.descSet(desc, kDescAuxPointer, &aux, sizeof aux),
                       "aux pointer"))
      return e;
    if (auto e = check(api_.descSet(desc, kDescAuxLd, &ld, sizeof ld),
                       "aux leading dimension"))
      return e;
    return check(
        api_.descSet(desc, kDescAuxBatchStride, &stride, sizeof stride),
        "aux batch stride");
  }

  llvm::Error check(Status s, const char *what) const {
    if (s == 0)
      return llvm::Error::success();
    return err(llvm::Twine("cublasLt: ") + what + ": " +
               (api_.statusString ? api_.statusString(s) : "error") + " (" +
               llvm::Twine(s) + ")");
  }

  Api api_;
  Handle handle_;
};

} // namespace

llvm::Expected<std::unique_ptr<GemmEngine>> openCublasLt() {
  void *lib = nullptr;
  for (const char *name :
       {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})
    if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
      break;
  if (!lib)
    return err("cuBLASLt cannot be loaded (libcublasLt.so.13 or .12; add its "
               "directory, e.g. /usr/local/cuda/lib64 or the venv's "
               "nvidia/cublas/lib, to LD_LIBRARY_PATH)");
  Api a;
  std::pair<void *, const char *> symbols[] = {
      {&a.create, "cublasLtCreate"},
      {&a.descCreate, "cublasLtMatmulDescCreate"},
      {&a.descDestroy, "cublasLtMatmulDescDestroy"},
      {&a.descSet, "cublasLtMatmulDescSetAttribute"},
      {&a.layoutCreate, "cublasLtMatrixLayoutCreate"},
      {&a.layoutDestroy, "cublasLtMatrixLayoutDestroy"},
      {&a.layoutSet, "cublasLtMatrixLayoutSetAttribute"},
      {&a.prefCreate, "cublasLtMatmulPreferenceCreate"},
      {&a.prefDestroy, "cublasLtMatmulPreferenceDestroy"},
      {&a.prefSet, "cublasLtMatmulPreferenceSetAttribute"},
      {&a.heuristic, "cublasLtMatmulAlgoGetHeuristic"},
      {&a.matmul, "cublasLtMatmul"},
      {&a.statusString, "cublasLtGetStatusString"},
  };
  for (auto [slot, name] : symbols) {
    void *fn = dlsym(lib, name);
    if (!fn)
      return err(llvm::Twine("libcublasLt has no ") + name);
    std::memcpy(slot, &fn, sizeof fn);
  }
  Handle h = nullptr;
  if (Status s = a.create(&h))
    return err("cublasLtCreate failed (" + llvm::Twine(s) + ")");
  return std::unique_ptr<GemmEngine>(std::make_unique<CublasLt>(a, h));
}

} // namespace strata::cuda
