//===- DeviceGroup.cpp - The devices and communicators of this process ----===//
#include "runtime/parallel/DeviceGroup.h"

#include "runtime/comm/GlooCommunicator.h"
#include "runtime/comm/SlurmEnv.h"
#include "runtime/kernels/Parallel.h"

#include "llvm/ADT/StringExtras.h"

#include <gloo/rendezvous/store.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// An integer environment variable: nullopt if unset.
llvm::Expected<std::optional<int64_t>> envInt(const char *name, int64_t min) {
  const char *v = std::getenv(name);
  if (!v)
    return std::nullopt;
  int64_t x;
  if (llvm::StringRef(v).getAsInteger(10, x) || x < min)
    return err(llvm::Twine(name) + "='" + v +
               "' is not an integer >= " + llvm::Twine(min));
  return x;
}

bool isLoopback(llvm::StringRef host) {
  return host == "localhost" || host.startswith("127.") || host == "::1";
}

/// `mesh<dp=2,tp=2>`.
std::string meshText(const Mesh &mesh) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printMesh(os, mesh);
  return os.str();
}

/// Every process must run the same mesh on the same backend: rank 0
/// publishes its own and the others compare, so processes started with
/// different layouts are told at once, not after waiting for each other's
/// groups until the timeout. (A rank that returns this error exits; its
/// will ends rank 0's waits.)
llvm::Error checkSameLayout(gloo::rendezvous::Store &store, int64_t rank,
                            const Mesh &mesh, Backend backend) {
  std::string mine = meshText(mesh) + " on " + backendName(backend).str();
  const std::string key = "strata/layout";
  try {
    if (rank == 0) {
      store.set(key, std::vector<char>(mine.begin(), mine.end()));
      return llvm::Error::success();
    }
    std::vector<char> bytes = store.get(key);
    std::string first(bytes.begin(), bytes.end());
    if (first == mine)
      return llvm::Error::success();
    return err("rank " + llvm::Twine(rank) + " runs " + mine +
               " but rank 0 runs " + first +
               " (every process of a job needs the same --tp, --dp, --pp "
               "and --device)");
  } catch (const std::exception &e) {
    return err(
        "rank " + llvm::Twine(rank) +
        " cannot read rank 0's layout from the rendezvous store: " + e.what());
  }
}
} // namespace

llvm::Expected<std::optional<DistEnv>> DistEnv::fromEnvironment() {
  if (auto e = adoptSlurmEnvironment()) // srun: Slurm's variables
    return std::move(e);
  auto world = envInt("WORLD_SIZE", 1);
  if (!world)
    return world.takeError();
  if (!*world)
    return std::nullopt;
  DistEnv e;
  e.worldSize = **world;
  auto rank = envInt("RANK", 0);
  if (!rank)
    return rank.takeError();
  if (!*rank)
    return err("WORLD_SIZE is set but RANK is not (start every process with "
               "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT, e.g. through "
               "`strata launch`)");
  e.rank = **rank;
  if (e.rank >= e.worldSize)
    return err("RANK=" + llvm::Twine(e.rank) +
               " is not below WORLD_SIZE=" + llvm::Twine(e.worldSize));
  auto local = envInt("LOCAL_RANK", 0);
  if (!local)
    return local.takeError();
  e.localRank = local->value_or(e.rank);
  auto localWorld = envInt("LOCAL_WORLD_SIZE", 1);
  if (!localWorld)
    return localWorld.takeError();
  e.localWorldSize = localWorld->value_or(e.worldSize);
  if (const char *addr = std::getenv("MASTER_ADDR"))
    e.masterAddr = addr;
  auto port = envInt("MASTER_PORT", 1);
  if (!port)
    return port.takeError();
  if (*port) {
    if (**port > 65535)
      return err("MASTER_PORT=" + llvm::Twine(**port) + " is not a port");
    e.masterPort = int(**port);
  }
  return e;
}

std::chrono::milliseconds DeviceGroupOptions::defaultTimeout() {
  int64_t secs = 300;
  if (const char *v = std::getenv("STRATA_COMM_TIMEOUT"))
    if (llvm::StringRef(v).getAsInteger(10, secs) || secs <= 0)
      secs = 300;
  return std::chrono::seconds(secs);
}

void shareKernelThreads(int64_t devicesOnMachine) {
  int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (const char *v = std::getenv("STRATA_NUM_THREADS")) {
    int64_t n;
    if (!llvm::StringRef(v).getAsInteger(10, n) && n > 0)
      cores = n;
  }
  kernels::setNumThreads(int(std::max<int64_t>(1, cores / devicesOnMachine)));
}

llvm::Error checkInProcessDevices(int64_t devices) {
  int64_t limit =
      std::max<int64_t>(64, 16 * int64_t(std::thread::hardware_concurrency()));
  if (devices <= limit)
    return llvm::Error::success();
  return err(llvm::Twine(devices) +
             " devices in one process (tp x dp x pp) exceed the " +
             llvm::Twine(limit) +
             " this machine can run (16 per hardware thread); use a smaller "
             "layout, or spread the ranks over processes and machines with "
             "strata launch");
}

llvm::Expected<std::unique_ptr<DeviceGroup>>
DeviceGroup::inProcess(const Mesh &mesh, const DeviceGroupOptions &options) {
  if (auto e = checkInProcessDevices(mesh.numDevices()))
    return std::move(e);
  std::unique_ptr<DeviceGroup> g(new DeviceGroup());
  g->mesh_ = mesh;
  g->rendezvous_ = GlooRendezvous::inProcess(options.timeout);
  for (int64_t r = 0; r < mesh.numDevices(); ++r) {
    auto device = makeDevice(options.backend, r, r);
    if (!device)
      return device.takeError();
    g->ranks_.push_back({r, std::move(*device),
                         createGlooCommunicators(mesh, r, g->rendezvous_)});
  }
  shareKernelThreads(mesh.numDevices());
  if (auto e = g->connect())
    return e;
  return g;
}

llvm::Expected<std::unique_ptr<DeviceGroup>>
DeviceGroup::multiProcess(const Mesh &mesh, const DistEnv &env,
                          const DeviceGroupOptions &options) {
  if (env.worldSize != mesh.numDevices()) {
    return err("WORLD_SIZE=" + llvm::Twine(env.worldSize) + " processes for " +
               meshText(mesh) + " of " + llvm::Twine(mesh.numDevices()) +
               " devices (one process per device: the device count must be "
               "tp*dp*pp; launch " +
               llvm::Twine(mesh.numDevices()) +
               " processes or change --tp/--dp/--pp)");
  }
  std::string host = "127.0.0.1";
  if (const char *h = std::getenv("STRATA_GLOO_HOST")) {
    host = h;
  } else if (!isLoopback(env.masterAddr)) {
    char name[256] = {0};
    if (gethostname(name, sizeof name - 1) == 0)
      host = name;
  }
  auto rdv = GlooRendezvous::tcp(env.masterAddr, env.masterPort, env.rank == 0,
                                 host, options.timeout);
  if (!rdv)
    return rdv.takeError();
  std::unique_ptr<DeviceGroup> g(new DeviceGroup());
  g->mesh_ = mesh;
  g->rendezvous_ = std::move(*rdv);
  // Ranks watch each other: a stopped one ends the job within the heartbeat
  // timeout, started by strata launch or not (runtime/comm/Heartbeat.h).
  auto beatOptions = StoreHeartbeatOptions::fromEnvironment();
  if (!beatOptions)
    return beatOptions.takeError();
  auto heartbeat = StoreHeartbeat::start(env.masterAddr, env.masterPort,
                                         env.rank, env.worldSize, *beatOptions);
  if (!heartbeat)
    return heartbeat.takeError();
  g->heartbeat_ = std::move(*heartbeat);
  if (auto e = checkSameLayout(g->rendezvous_->store(), env.rank, mesh,
                               options.backend))
    return e;
  auto device = makeDevice(options.backend, env.rank, env.localRank);
  if (!device)
    return device.takeError();
  g->ranks_.push_back(
      {env.rank, std::move(*device),
       createGlooCommunicators(mesh, env.rank, g->rendezvous_)});
  shareKernelThreads(env.localWorldSize);
  if (auto e = g->connect())
    return e;
  return g;
}

DeviceGroup::~DeviceGroup() = default;

llvm::Error DeviceGroup::connect() {
  llvm::SmallVector<std::string, 3> world;
  for (const MeshAxis &a : mesh_.axes)
    world.push_back(a.name);
  return forEachRank([&](size_t local) -> llvm::Error {
    for (const std::string &a : world)
      if (auto c = comms(local).group({a}); !c)
        return c.takeError();
    if (auto c = comms(local).group(world); !c)
      return c.takeError();
    return connectDevice(device(local), comms(local)); // NCCL's, up front
  });
}

LaunchContext DeviceGroup::context(size_t local,
                                   const LaunchContext &base) const {
  LaunchContext ctx = base;
  ctx.mesh = &mesh_;
  ctx.rank = ranks_[local].rank;
  ctx.comms = ranks_[local].comms.get();
  return ctx;
}

llvm::Error
DeviceGroup::forEachRank(llvm::function_ref<llvm::Error(size_t local)> fn) {
  if (!failed_.empty())
    return err("the device group is unusable after an earlier failure (" +
               failed_ + ")");
  struct Failure {
    int64_t rank;
    std::string msg;
  };
  std::mutex mu;
  std::vector<Failure> failures; // in the order the ranks failed
  auto body = [&](size_t local) {
    llvm::Error e = fn(local);
    if (!e)
      return;
    std::string msg = llvm::toString(std::move(e));
    {
      std::lock_guard<std::mutex> lock(mu);
      failures.push_back({ranks_[local].rank, msg});
    }
    comms(local).abort("rank " + std::to_string(ranks_[local].rank) +
                       " failed");
  };
  if (numLocal() == 1) {
    body(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t l = 0; l < numLocal(); ++l)
      threads.emplace_back(body, l);
    for (std::thread &t : threads)
      t.join();
  }
  if (failures.empty())
    return llvm::Error::success();
  const Failure &first = failures.front();
  failed_ = "rank " + std::to_string(first.rank) + " failed";
  std::string msg = "rank " + std::to_string(first.rank) + ": " + first.msg;
  if (failures.size() > 1) {
    msg += " (ranks ";
    for (size_t i = 1; i < failures.size(); ++i)
      msg += (i > 1 ? "," : "") + std::to_string(failures[i].rank);
    msg += " stopped with it)";
  }
  return err(msg);
}

llvm::Expected<std::vector<HostTensor>>
DeviceGroup::allGather(llvm::ArrayRef<HostTensor> perLocal) {
  std::vector<HostTensor> all(mesh_.numDevices());
  if (allLocal()) {
    for (size_t l = 0; l < numLocal(); ++l)
      all[globalRank(l)] = perLocal[l];
    return all;
  }
  // Ranks in other processes: this process holds one rank (multiProcess).
  const TensorType &t = perLocal[0].type();
  HostTensor gathered(
      TensorType{t.dtype, {mesh_.numDevices(), t.numElements()}});
  llvm::SmallVector<std::string, 3> world;
  for (const MeshAxis &a : mesh_.axes)
    world.push_back(a.name);
  if (auto e = forEachRank([&](size_t local) -> llvm::Error {
        auto c = comms(local).group(world);
        if (!c)
          return c.takeError();
        return (*c)->allGather(perLocal[local].raw(), gathered.raw(),
                               t.numElements(), t.dtype);
      }))
    return e;
  // The world group's order is the mesh's rank order.
  for (int64_t r = 0; r < mesh_.numDevices(); ++r) {
    HostTensor x(t);
    std::memcpy(x.raw(),
                static_cast<const char *>(gathered.raw()) + r * t.bytes(),
                t.bytes());
    all[r] = std::move(x);
  }
  return all;
}

} // namespace strata
