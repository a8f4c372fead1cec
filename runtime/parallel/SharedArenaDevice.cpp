//===- SharedArenaDevice.cpp - One workspace for a rank's programs --------===//
#include "runtime/parallel/SharedArenaDevice.h"

#include <algorithm>

namespace strata {

SharedArenaDevice::SharedArenaDevice(Device &inner, int64_t capacity)
    : inner_(inner), capacity_(capacity) {
  if (capacity_ > 0)
    shared_ = inner_.allocate(capacity_);
}

SharedArenaDevice::~SharedArenaDevice() {
  if (shared_)
    inner_.deallocate(shared_);
}

void *SharedArenaDevice::allocate(int64_t bytes) {
  largest_ = std::max(largest_, bytes);
  if (shared_ && bytes <= capacity_)
    return shared_;
  return inner_.allocate(bytes);
}

void SharedArenaDevice::deallocate(void *ptr) {
  if (ptr != shared_)
    inner_.deallocate(ptr);
}

} // namespace strata
