//===- DeviceStreamTest.cpp - Streams and events of the CPU device --------===//
//
// The asynchronous device interface (runtime/Device.h) on CpuDevice: work on
// one stream runs in order; an event recorded on one stream orders another
// stream's later work after it (a copy waits for a slow writer); a wait
// refers to the records made before it; device copies, fill, accumulate and
// scale compute what they say; an error poisons the device without leaving
// an event waiter hanging.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuDevice.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace strata {
namespace {

using namespace std::chrono_literals;

TEST(DeviceStreams, WorkOnOneStreamRunsInOrder) {
  CpuDevice dev;
  std::vector<int> order;
  for (int i = 0; i < 100; ++i)
    dev.enqueueHost([&order, i] {
      order.push_back(i);
      return llvm::Error::success();
    });
  ASSERT_FALSE(bool(dev.synchronize()));
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(order[i], i);
}

// Once synchronize returns the caller may free what queued work pointed to
// (interpret mode's kernel modules, host buffers): the work's captures are
// released before it counts as done. Here a capture whose release takes
// 50 ms; before, synchronize returned while it was still being released
// (ASan heap-use-after-free in `strata calibrate` under cuda-interpret).
TEST(DeviceStreams, AWorksCapturesAreReleasedBeforeItCountsAsDone) {
  struct SlowRelease {
    explicit SlowRelease(std::atomic<bool> &r) : released(r) {}
    std::atomic<bool> &released;
    ~SlowRelease() {
      std::this_thread::sleep_for(50ms);
      released = true;
    }
  };
  CpuDevice dev;
  std::atomic<bool> released{false};
  auto capture = std::make_shared<SlowRelease>(released);
  dev.enqueueHost([capture] { return llvm::Error::success(); });
  capture.reset();
  ASSERT_FALSE(bool(dev.synchronize()));
  EXPECT_TRUE(released);
}

// Stream 0 writes slowly; stream 1 copies the value after waiting for an
// event recorded behind the write: it must see the written value.
TEST(DeviceStreams, AnEventOrdersAnotherStreamsWork) {
  CpuDevice dev;
  StreamId copies = dev.createStream();
  EXPECT_EQ(copies, 1);
  float src = 0, dst = -1;
  auto done = dev.createEvent();
  dev.enqueueHost([&src] {
    std::this_thread::sleep_for(50ms);
    src = 42;
    return llvm::Error::success();
  });
  dev.record(*done, kDefaultStream);
  dev.wait(copies, *done);
  dev.copy(&dst, &src, sizeof(float), copies);
  ASSERT_FALSE(bool(dev.synchronize()));
  EXPECT_EQ(dst, 42);
}

// Streams run concurrently: stream 0's task waits for a flag that only
// stream 1's task sets (one thread for both would time out).
TEST(DeviceStreams, StreamsRunConcurrently) {
  CpuDevice dev;
  StreamId other = dev.createStream();
  std::atomic<bool> flag{false}, seen{false};
  dev.enqueueHost([&] {
    auto until = std::chrono::steady_clock::now() + 10s;
    while (!flag && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
    seen = bool(flag);
    return llvm::Error::success();
  });
  dev.enqueueHost(
      [&] {
        flag = true;
        return llvm::Error::success();
      },
      other);
  ASSERT_FALSE(bool(dev.synchronize()));
  EXPECT_TRUE(seen);
}

TEST(DeviceStreams, CopiesFillScale) {
  CpuDevice dev;
  std::vector<float> a = {11, 22, 33, 44}, c(4, -1);
  dev.scale(a.data(), 4, 0.5f);
  dev.copyToHost(c.data(), a.data(), 4 * sizeof(float));
  ASSERT_FALSE(bool(dev.synchronize()));
  EXPECT_EQ(c, (std::vector<float>{5.5f, 11, 16.5f, 22}));
  dev.fill(c.data(), 4 * sizeof(float), 0);
  ASSERT_FALSE(bool(dev.synchronize()));
  EXPECT_EQ(c, (std::vector<float>(4, 0.0f)));
}

// A kernel error poisons the device; an event behind it is still recorded,
// so a stream waiting for it does not hang, and synchronize reports the
// first error once.
TEST(DeviceStreams, AnErrorDoesNotHangEventWaiters) {
  CpuDevice dev;
  StreamId other = dev.createStream();
  auto after = dev.createEvent();
  bool ran = false;
  dev.enqueueHost([] {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "boom");
  });
  dev.enqueueHost([&ran] {
    ran = true;
    return llvm::Error::success();
  });
  dev.record(*after, kDefaultStream);
  dev.wait(other, *after);
  llvm::Error e = dev.synchronize();
  ASSERT_TRUE(bool(e));
  EXPECT_EQ(llvm::toString(std::move(e)), "boom");
  EXPECT_FALSE(ran) << "work after the error is skipped";
  EXPECT_FALSE(bool(dev.synchronize()));
}

} // namespace
} // namespace strata
