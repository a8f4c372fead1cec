//===- DeviceBuffer.h - A tensor's storage in a device's memory
//------------===//
//
// Owns `type().bytes()` of a device's memory (Device::allocate) and frees it
// when destroyed; or, made by view(), refers to memory another buffer owns. Host code never reads it: values move by the device's
// copies (toHost / fromHost enqueue them; synchronize before using a host
// copy).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"
#include "runtime/HostTensor.h"

#include <utility>

namespace strata {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(Device &device, const TensorType &type)
      : dev_(&device), type_(type),
        ptr_(device.allocate(std::max<int64_t>(type.bytes(), 1))) {}
  /// `type` at `ptr`, inside a buffer that owns it and outlives this one (a
  /// gradient in its bucket's buffer, runtime/parallel/GradReducer.h).
  static DeviceBuffer view(Device &device, const TensorType &type,
                           void *ptr) {
    DeviceBuffer b;
    b.dev_ = &device;
    b.type_ = type;
    b.ptr_ = ptr;
    b.owned_ = false;
    return b;
  }
  DeviceBuffer(DeviceBuffer &&o) noexcept { *this = std::move(o); }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
    std::swap(dev_, o.dev_);
    std::swap(type_, o.type_);
    std::swap(ptr_, o.ptr_);
    std::swap(owned_, o.owned_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_ && owned_)
      dev_->deallocate(ptr_);
  }

  void *data() const { return ptr_; }
  const TensorType &type() const { return type_; }
  int64_t bytes() const { return type_.bytes(); }
  Device &device() const { return *dev_; }

  /// Enqueues the copy of `host` (of this type) into the buffer.
  void fromHost(const HostTensor &host) {
    dev_->copyFromHost(ptr_, host.raw(), bytes());
  }
  /// Enqueues the copy of the buffer into `host` (of this type).
  void toHost(HostTensor &host) const {
    dev_->copyToHost(host.raw(), ptr_, bytes());
  }

private:
  Device *dev_ = nullptr;
  TensorType type_;
  void *ptr_ = nullptr;
  bool owned_ = true;
};

} // namespace strata
