//===- RecordingDriver.h - A driver that records the GEMMs it is given ----===//
//
// Forwards every call to another cuda::Driver (interpret mode's) and keeps
// each GEMM descriptor and the name of each launched kernel, so tests can
// read what the CUDA device asked cuBLASLt and the kernels to do.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/Driver.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace strata::test {

class RecordingDriver : public cuda::Driver {
public:
  explicit RecordingDriver(std::unique_ptr<cuda::Driver> d)
      : d_(std::move(d)) {}
  std::vector<cuda::Gemm> gemms;
  std::vector<std::string> launches;

  llvm::StringRef kind() const override { return d_->kind(); }
  bool hostAddressable() const override { return d_->hostAddressable(); }
  const cuda::DeviceInfo &info() const override { return d_->info(); }
  llvm::Expected<std::pair<int64_t, int64_t>> memoryInfo() override {
    return d_->memoryInfo();
  }
  llvm::Expected<cuda::DevicePtr> allocate(int64_t bytes) override {
    return d_->allocate(bytes);
  }
  llvm::Error free(cuda::DevicePtr p) override { return d_->free(p); }
  llvm::Expected<void *> allocateHost(int64_t bytes) override {
    return d_->allocateHost(bytes);
  }
  llvm::Error freeHost(void *p) override { return d_->freeHost(p); }
  llvm::Expected<cuda::StreamHandle> createStream() override {
    return d_->createStream();
  }
  llvm::Error destroyStream(cuda::StreamHandle s) override {
    return d_->destroyStream(s);
  }
  llvm::Expected<cuda::EventHandle> createEvent() override {
    return d_->createEvent();
  }
  llvm::Error destroyEvent(cuda::EventHandle e) override {
    return d_->destroyEvent(e);
  }
  llvm::Error record(cuda::EventHandle e, cuda::StreamHandle s) override {
    return d_->record(e, s);
  }
  llvm::Error wait(cuda::StreamHandle s, cuda::EventHandle e) override {
    return d_->wait(s, e);
  }
  llvm::Error synchronize(cuda::StreamHandle s) override {
    return d_->synchronize(s);
  }
  llvm::Error copyToDevice(cuda::DevicePtr dst, const void *src, int64_t bytes,
                           cuda::StreamHandle s) override {
    return d_->copyToDevice(dst, src, bytes, s);
  }
  llvm::Error copyToHost(void *dst, cuda::DevicePtr src, int64_t bytes,
                         cuda::StreamHandle s) override {
    return d_->copyToHost(dst, src, bytes, s);
  }
  llvm::Error copyOnDevice(cuda::DevicePtr dst, cuda::DevicePtr src,
                           int64_t bytes, cuda::StreamHandle s) override {
    return d_->copyOnDevice(dst, src, bytes, s);
  }
  llvm::Error fill(cuda::DevicePtr dst, uint8_t value, int64_t bytes,
                   cuda::StreamHandle s) override {
    return d_->fill(dst, value, bytes, s);
  }
  llvm::Error launchHost(std::function<llvm::Error()> fn,
                         cuda::StreamHandle s) override {
    return d_->launchHost(std::move(fn), s);
  }
  llvm::Expected<std::unique_ptr<cuda::Module>>
  loadModule(llvm::StringRef source, llvm::StringRef name) override {
    return d_->loadModule(source, name);
  }
  llvm::Expected<cuda::Function> function(cuda::Module &m,
                                          llvm::StringRef kernel) override {
    auto f = d_->function(m, kernel);
    if (f) {
      std::lock_guard<std::mutex> lock(mu_);
      names_[*f] = kernel.str();
    }
    return f;
  }
  llvm::Error gemm(const cuda::Gemm &g, cuda::StreamHandle s) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      gemms.push_back(g);
    }
    return d_->gemm(g, s);
  }
  llvm::Error launch(cuda::Function f, cuda::Dim3 grid, cuda::Dim3 block,
                     unsigned sharedBytes, cuda::StreamHandle s,
                     void **params) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      launches.push_back(names_[f]);
    }
    return d_->launch(f, grid, block, sharedBytes, s, params);
  }

private:
  std::unique_ptr<cuda::Driver> d_;
  std::mutex mu_;
  std::map<cuda::Function, std::string> names_;
};

} // namespace strata::test
