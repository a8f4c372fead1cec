//===- Driver.h - The CUDA driver calls the CUDA backend makes ------------===//
//
// The CUDA device (CudaDevice.h) talks to the GPU only through this
// interface, a thin mirror of the CUDA driver API: memory, streams, events,
// modules of kernels, launches and host callbacks, all asynchronous on
// streams. Two drivers implement it:
//   - the real one (RealDriver.cpp): libcuda.so.1 loaded with dlopen, kernel
//     sources compiled by NVRTC to a cubin for the device's sm_XX, GEMMs by
//     cuBLASLt (RealGemm.cpp, also by dlopen);
//   - interpret mode (interpret/InterpretDriver.h): host memory with guard
//     bytes and poison, the same kernel sources compiled by the host
//     compiler with a SIMT header, streams as queues on host threads.
// So every line of CudaDevice runs, and is tested, on machines without a
// GPU.
//
// Kernel sources are CUDA C in one dialect (see interpret/Simt.h): each
// kernel is `extern "C" __global__ void [__launch_bounds__(N)] name(...)`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace strata::cuda {

using DevicePtr = uint64_t;

/// The cuBLASLt workspace a GPU's driver allocates at its first GEMM.
constexpr int64_t kGemmWorkspaceBytes = int64_t(32) << 20;

/// A loaded module of kernels, and one kernel of it.
class Module {
public:
  virtual ~Module() = default;
};
using Function = const void *;

/// A stream: work on it runs in order.
using StreamHandle = void *;
/// A point in a stream's work.
using EventHandle = void *;

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// What cuBLASLt does to a GEMM's product before it stores C (cublasLt.h's
/// cublasLtEpilogue_t); t = alpha * op(A) op(B) + beta * C below, bias an
/// m-vector, aux an m x n matrix (leading dimension ldAux, a multiple of 8).
enum class Epilogue {
  None,        ///< C = t
  Bias,        ///< C = t + bias[i] (CUBLASLT_EPILOGUE_BIAS)
  GeluAuxBias, ///< aux = t + bias[i]; C = gelu_tanh(aux) (GELU_AUX_BIAS)
  DGelu,       ///< C = t * gelu_tanh'(aux) (DGELU)
  DGeluBGrad,  ///< DGelu, and bias[i] = sum over j of C (DGELU_BGRAD;
               ///< batch 1)
};

/// One (strided-batched) GEMM as cuBLASLt takes it, column-major:
/// C = alpha * op(A) * op(B) + beta * C, op(A) m x k, op(B) k x n, C m x n,
/// for each of `batch` matrices (a stride of 0 repeats a matrix), then the
/// epilogue. A and B are of type `ab`, C and the epilogue's vectors of `c`:
/// f32 runs with f32 compute (CUBLAS_COMPUTE_32F: no TF32), f64 with f64,
/// and bf16 / f16 inputs with f32 compute and a C of f32 or of their type.
struct Gemm {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideC = 0;
  DType ab = DType::F32, c = DType::F32;
  double alpha = 1, beta = 0;
  DevicePtr A = 0, B = 0, C = 0;
  Epilogue epilogue = Epilogue::None;
  DevicePtr bias = 0, aux = 0;
  int64_t ldAux = 0, strideAux = 0;
};

struct DeviceInfo {
  std::string name;
  int major = 0, minor = 0; // compute capability: sm_<major><minor>
  int multiprocessors = 0;
  int64_t totalBytes = 0;
};

class Driver {
public:
  virtual ~Driver() = default;
  /// "cuda" or "cuda-interpret".
  virtual llvm::StringRef kind() const = 0;
  /// Whether device pointers are host addresses (interpret mode), so host
  /// code on a stream (Gloo collectives) may use them.
  virtual bool hostAddressable() const = 0;
  virtual const DeviceInfo &info() const = 0;
  /// Free and total device memory in bytes.
  virtual llvm::Expected<std::pair<int64_t, int64_t>> memoryInfo() = 0;

  virtual llvm::Expected<DevicePtr> allocate(int64_t bytes) = 0;
  virtual llvm::Error free(DevicePtr ptr) = 0;
  /// Page-locked host memory (cuMemHostAlloc): copies from it are truly
  /// asynchronous, so it must stay unchanged until they have run.
  virtual llvm::Expected<void *> allocateHost(int64_t bytes) = 0;
  virtual llvm::Error freeHost(void *ptr) = 0;

  virtual llvm::Expected<StreamHandle> createStream() = 0;
  virtual llvm::Error destroyStream(StreamHandle s) = 0;
  virtual llvm::Expected<EventHandle> createEvent() = 0;
  virtual llvm::Error destroyEvent(EventHandle e) = 0;
  virtual llvm::Error record(EventHandle e, StreamHandle s) = 0;
  /// Later work on `s` waits for `e`'s latest record.
  virtual llvm::Error wait(StreamHandle s, EventHandle e) = 0;
  /// Blocks until `s` has run all its work; returns the first error of an
  /// asynchronous operation on it (a fault, a failed host callback).
  virtual llvm::Error synchronize(StreamHandle s) = 0;

  virtual llvm::Error copyToDevice(DevicePtr dst, const void *src,
                                   int64_t bytes, StreamHandle s) = 0;
  virtual llvm::Error copyToHost(void *dst, DevicePtr src, int64_t bytes,
                                 StreamHandle s) = 0;
  virtual llvm::Error copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes,
                                   StreamHandle s) = 0;
  virtual llvm::Error fill(DevicePtr dst, uint8_t value, int64_t bytes,
                           StreamHandle s) = 0;
  /// Runs `fn` on a host thread once `s` reaches it (cuLaunchHostFunc); an
  /// error it returns is the stream's error.
  virtual llvm::Error launchHost(std::function<llvm::Error()> fn,
                                 StreamHandle s) = 0;

  /// Compiles `source` (CUDA C; `name` names it in errors) and loads it.
  virtual llvm::Expected<std::unique_ptr<Module>>
  loadModule(llvm::StringRef source, llvm::StringRef name) = 0;
  virtual llvm::Expected<Function> function(Module &m,
                                            llvm::StringRef kernel) = 0;
  /// Enqueues a GEMM (cuBLASLt with its heuristics and a 32 MiB workspace;
  /// in interpret mode a CPU GEMM that honours every field).
  virtual llvm::Error gemm(const Gemm &g, StreamHandle s) = 0;

  /// cuLaunchKernel: params[i] points to the value of the kernel's
  /// parameter i.
  virtual llvm::Error launch(Function f, Dim3 grid, Dim3 block,
                             unsigned sharedBytes, StreamHandle s,
                             void **params) = 0;
};

/// The real driver on GPU `ordinal`, or why there is none: libcuda.so.1
/// missing, no device, or a driver too old. Nothing else is touched before
/// these checks pass.
llvm::Expected<std::unique_ptr<Driver>> openRealDriver(int ordinal);

} // namespace strata::cuda
