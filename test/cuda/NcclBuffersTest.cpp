//===- NcclBuffersTest.cpp - Staging and packing buffers are reused -------===//
//
// A communicator's own buffers (runtime/cuda/nccl/NcclCommunicator.h) on
// interpret mode's driver, whose free memory is the reference for what was
// allocated: a send's staging copy is reused by the next send once the
// first is done, and a packing buffer given back on a stream is reused by
// that stream's next collective at once but not by another stream's.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/GlooCommunicator.h"
#include "runtime/cuda/interpret/InterpretDriver.h"
#include "runtime/cuda/nccl/InterpretNccl.h"
#include "runtime/cuda/nccl/NcclCommunicator.h"
#include "runtime/cuda/nccl/NcclWatchdog.h"

#include <gtest/gtest.h>

#include <thread>

namespace strata {
namespace {

using namespace cuda;

/// One emulated GPU with a communicator of `size` ranks, this one `rank`.
struct Rank {
  std::unique_ptr<Driver> driver = makeInterpretDriver();
  std::unique_ptr<Nccl> nccl;
  std::unique_ptr<NcclWatchdog> dog;
  std::unique_ptr<NcclCommunicator> comm;
  StreamHandle compute = nullptr, commStream = nullptr;

  Rank(std::shared_ptr<GlooRendezvous> rdv, const NcclUniqueId &id, int rank,
       int size) {
    nccl = makeInterpretNccl(*driver, rdv);
    NcclComm c = nullptr;
    EXPECT_EQ(nccl->commInitRankConfig(&c, size, id, rank, nullptr),
              ncclSuccess);
    dog = std::make_unique<NcclWatchdog>(*nccl, rank, std::chrono::seconds(60));
    dog->watch(c, "[pp] (ranks 0,1)");
    compute = *driver->createStream();
    commStream = *driver->createStream();
    comm = std::make_unique<NcclCommunicator>(
        *nccl, *driver, *dog, c, commStream, rank, size, "[pp] (ranks 0,1)",
        std::vector<int64_t>{0, 1});
    comm->orderWith(compute);
  }
  int64_t freeBytes() { return driver->memoryInfo()->first; }
};

NcclUniqueId uniqueId(std::shared_ptr<GlooRendezvous> rdv) {
  std::unique_ptr<Driver> driver = makeInterpretDriver();
  NcclUniqueId id;
  EXPECT_EQ(makeInterpretNccl(*driver, rdv)->getUniqueId(&id), ncclSuccess);
  return id;
}

TEST(NcclBuffers, AStagingCopyIsReusedOnceItsSendIsDone) {
  auto rdv = GlooRendezvous::inProcess(std::chrono::seconds(60));
  NcclUniqueId id = uniqueId(rdv);
  constexpr int64_t kCount = 1 << 16; // 256 KiB per message
  constexpr int kSends = 3;
  int64_t staged[kSends] = {};
  auto sender = [&] {
    Rank r(rdv, id, 0, 2);
    DevicePtr buf = *r.driver->allocate(kCount * 4);
    for (int i = 0; i < kSends; ++i) {
      int64_t before = r.freeBytes();
      ASSERT_FALSE(bool(r.comm->postSend(reinterpret_cast<void *>(buf), kCount,
                                         DType::F32, 1, 0)));
      staged[i] = before - r.freeBytes();
      // The send is done once the communication stream is past it.
      ASSERT_FALSE(bool(r.driver->synchronize(r.commStream)));
    }
    ASSERT_FALSE(bool(r.comm->release()));
  };
  auto receiver = [&] {
    Rank r(rdv, id, 1, 2);
    DevicePtr buf = *r.driver->allocate(kCount * 4);
    for (int i = 0; i < kSends; ++i)
      ASSERT_FALSE(bool(r.comm->recv(reinterpret_cast<void *>(buf), kCount,
                                     DType::F32, 0, 0)));
    ASSERT_FALSE(bool(r.driver->synchronize(r.compute)));
  };
  std::thread peer(receiver);
  sender();
  peer.join();
  // The first send allocates its staging copy; the later ones reuse it
  // (before, every send of a step held a copy until the device
  // synchronized).
  EXPECT_GE(staged[0], kCount * 4);
  EXPECT_EQ(staged[1], 0);
  EXPECT_EQ(staged[2], 0);
}

TEST(NcclBuffers, APackingBufferIsReusedInStreamOrder) {
  auto rdv = GlooRendezvous::inProcess(std::chrono::seconds(60));
  NcclUniqueId id = uniqueId(rdv);
  Rank r(rdv, id, 0, 1);
  StreamHandle other = *r.driver->createStream();
  auto a = r.comm->scratch(4096, r.compute);
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
  r.comm->recycle(*a, r.compute);
  // The same stream's next collective takes it back at once.
  int64_t before = r.freeBytes();
  auto b = r.comm->scratch(4096, r.compute);
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
  EXPECT_EQ(*b, *a);
  EXPECT_EQ(r.freeBytes(), before);
  r.comm->recycle(*b, r.compute);
  // Another stream may still run before the first one's use: a new buffer.
  auto c = r.comm->scratch(4096, other);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_NE(*c, *a);
  EXPECT_LE(r.freeBytes(), before - 4096);
  r.comm->recycle(*c, other);
  // Once the device synchronized, any stream takes any free buffer.
  ASSERT_FALSE(bool(r.driver->synchronize(r.compute)));
  ASSERT_FALSE(bool(r.driver->synchronize(other)));
  ASSERT_FALSE(bool(r.comm->release()));
  before = r.freeBytes();
  auto d = r.comm->scratch(4096, other);
  auto e = r.comm->scratch(4096, other);
  ASSERT_TRUE(d && e);
  EXPECT_NE(*d, *e);
  EXPECT_EQ(r.freeBytes(), before);
}

} // namespace
} // namespace strata
