//===- RealNccl.cpp - NCCL through dlopen ---------------------------------===//
//
// libnccl.so.2 is opened at run time and each entry point looked up by its
// name, so strata builds and runs where NCCL is not installed and reports
// its absence when a multi-GPU run needs it. The types are declared by
// their ABI in Nccl.h. ncclCommSplit (2.18) is the newest entry point used.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/nccl/Nccl.h"

#include <dlfcn.h>

#include <string>

namespace strata::cuda {

namespace {

using R = NcclResult;
using Dt = NcclDataType;

struct Api {
  R (*getVersion)(int *);
  const char *(*getErrorString)(R);
  const char *(*getLastError)(NcclComm);
  R (*getUniqueId)(NcclUniqueId *);
  R (*commInitRankConfig)(NcclComm *, int, NcclUniqueId, int, NcclConfig *);
  R (*commSplit)(NcclComm, int, int, NcclComm *, NcclConfig *);
  R (*commGetAsyncError)(NcclComm, R *);
  R (*commAbort)(NcclComm);
  R (*commDestroy)(NcclComm);
  R (*allReduce)
  (const void *, void *, size_t, Dt, NcclRedOp, NcclComm, StreamHandle);
  R (*reduceScatter)
  (const void *, void *, size_t, Dt, NcclRedOp, NcclComm, StreamHandle);
  R (*allGather)(const void *, void *, size_t, Dt, NcclComm, StreamHandle);
  R (*broadcast)(const void *, void *, size_t, Dt, int, NcclComm, StreamHandle);
  R (*send)(const void *, size_t, Dt, int, NcclComm, StreamHandle);
  R (*recv)(void *, size_t, Dt, int, NcclComm, StreamHandle);
  R (*groupStart)();
  R (*groupEnd)();
};

class RealNccl : public Nccl {
public:
  RealNccl(void *lib, Api api, int version)
      : lib_(lib), api_(api), version_(version) {}
  ~RealNccl() override { dlclose(lib_); }

  std::string version() const override {
    return "nccl " + std::to_string(version_ / 10000) + "." +
           std::to_string(version_ / 100 % 100) + "." +
           std::to_string(version_ % 100);
  }
  const char *errorString(R r) override { return api_.getErrorString(r); }
  const char *lastError(NcclComm c) override { return api_.getLastError(c); }
  R getUniqueId(NcclUniqueId *id) override { return api_.getUniqueId(id); }
  R commInitRankConfig(NcclComm *c, int n, NcclUniqueId id, int rank,
                       NcclConfig *cfg) override {
    return api_.commInitRankConfig(c, n, id, rank, cfg);
  }
  R commSplit(NcclComm c, int color, int key, NcclComm *out,
              NcclConfig *cfg) override {
    return api_.commSplit(c, color, key, out, cfg);
  }
  R commGetAsyncError(NcclComm c, R *e) override {
    return api_.commGetAsyncError(c, e);
  }
  R commAbort(NcclComm c) override { return api_.commAbort(c); }
  R commDestroy(NcclComm c) override { return api_.commDestroy(c); }
  R allReduce(const void *s, void *r, size_t n, Dt dt, NcclRedOp op, NcclComm c,
              StreamHandle st) override {
    return api_.allReduce(s, r, n, dt, op, c, st);
  }
  R reduceScatter(const void *s, void *r, size_t n, Dt dt, NcclRedOp op,
                  NcclComm c, StreamHandle st) override {
    return api_.reduceScatter(s, r, n, dt, op, c, st);
  }
  R allGather(const void *s, void *r, size_t n, Dt dt, NcclComm c,
              StreamHandle st) override {
    return api_.allGather(s, r, n, dt, c, st);
  }
  R broadcast(const void *s, void *r, size_t n, Dt dt, int root, NcclComm c,
              StreamHandle st) override {
    return api_.broadcast(s, r, n, dt, root, c, st);
  }
  R send(const void *b, size_t n, Dt dt, int peer, NcclComm c,
         StreamHandle st) override {
    return api_.send(b, n, dt, peer, c, st);
  }
  R recv(void *b, size_t n, Dt dt, int peer, NcclComm c,
         StreamHandle st) override {
    return api_.recv(b, n, dt, peer, c, st);
  }
  R groupStart() override { return api_.groupStart(); }
  R groupEnd() override { return api_.groupEnd(); }

private:
  void *lib_;
  Api api_;
  int version_;
};

} // namespace

llvm::Expected<std::unique_ptr<Nccl>> openRealNccl() {
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::Twine("no NCCL: libnccl.so.2 cannot be loaded (") + dlerror() +
            "); multi-GPU runs need NCCL 2.18 or newer (Debian's "
            "libnccl2, or NVIDIA's nvidia-nccl-cu12 with its lib/ on "
            "LD_LIBRARY_PATH)");
  Api api{};
  std::string missing;
  auto sym = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(lib, name));
    if (!fn)
      missing += missing.empty() ? name : std::string(", ") + name;
  };
  sym(api.getVersion, "ncclGetVersion");
  sym(api.getErrorString, "ncclGetErrorString");
  sym(api.getLastError, "ncclGetLastError");
  sym(api.getUniqueId, "ncclGetUniqueId");
  sym(api.commInitRankConfig, "ncclCommInitRankConfig");
  sym(api.commSplit, "ncclCommSplit");
  sym(api.commGetAsyncError, "ncclCommGetAsyncError");
  sym(api.commAbort, "ncclCommAbort");
  sym(api.commDestroy, "ncclCommDestroy");
  sym(api.allReduce, "ncclAllReduce");
  sym(api.reduceScatter, "ncclReduceScatter");
  sym(api.allGather, "ncclAllGather");
  sym(api.broadcast, "ncclBroadcast");
  sym(api.send, "ncclSend");
  sym(api.recv, "ncclRecv");
  sym(api.groupStart, "ncclGroupStart");
  sym(api.groupEnd, "ncclGroupEnd");
  int version = 0;
  if (missing.empty() && api.getVersion(&version) != ncclSuccess)
    missing = "ncclGetVersion failed";
  if (!missing.empty() || version < 21800) {
    dlclose(lib);
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "libnccl.so.2 is too old (" +
            (missing.empty() ? "version " + std::to_string(version)
                             : "missing " + missing) +
            "); strata needs NCCL 2.18 or newer (ncclCommSplit)");
  }
  return std::unique_ptr<Nccl>(new RealNccl(lib, api, version));
}

} // namespace strata::cuda
