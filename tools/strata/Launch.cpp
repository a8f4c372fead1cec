//===- Launch.cpp - `strata launch --nproc N -- COMMAND ...`
//---------------===//
//
// Starts N local processes of a multi-process job the way torchrun does:
// each gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT (rank 0 serves the rendezvous store there). Their output is
// forwarded line by line, prefixed `[rank r] `, stdout to stdout and stderr
// to stderr. When one exits non-zero (or is killed), the others get SIGTERM,
// then SIGKILL after --grace seconds (each rank is a process group, so what
// it started stops too), and the launcher exits with the first failure's
// code; ranks die with the launcher too (PR_SET_PDEATHSIG).
// A command named `strata` runs this very executable.
//
// Across nodes, one launcher runs per node (--nnodes, --node-rank, as
// torchrun's): its ranks are node-rank * nproc + 0..nproc-1. Under Slurm
// (`srun --ntasks-per-node=1 strata launch --nproc 8 ...`) these default to
// SLURM_NTASKS and SLURM_PROCID, the master address to the first host of
// SLURM_JOB_NODELIST and the port to 20000 + SLURM_JOB_ID % 10000
// (runtime/comm/SlurmEnv.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/Heartbeat.h"
#include "runtime/comm/SlurmEnv.h"
#include "runtime/comm/TcpStore.h"
#include "tools/strata/Flags.h"
#include "tools/strata/Heartbeat.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand launchCmd(
    "launch",
    "Run N local processes of a multi-process job (torchrun's environment)");
cl::OptionCategory &cat = strataCategory();

cl::opt<int> nproc("nproc", cl::desc("Processes to start (one per device)"),
                   cl::Required, cl::sub(launchCmd), cl::cat(cat));
cl::opt<int> nnodes("nnodes",
                    cl::desc("Nodes of the job, one launcher each (default: "
                             "SLURM_NTASKS under Slurm, else 1)"),
                    cl::init(1), cl::sub(launchCmd), cl::cat(cat));
cl::opt<int> nodeRank("node-rank",
                      cl::desc("This node's index, 0..nnodes-1 (default: "
                               "SLURM_PROCID under Slurm, else 0)"),
                      cl::init(0), cl::sub(launchCmd), cl::cat(cat));
cl::opt<std::string>
    masterAddr("master-addr", cl::desc("Address of rank 0's rendezvous store"),
               cl::init("127.0.0.1"), cl::sub(launchCmd), cl::cat(cat));
cl::opt<int>
    masterPort("master-port",
               cl::desc("Port of the rendezvous store (0: a free port)"),
               cl::init(29500), cl::sub(launchCmd), cl::cat(cat));
cl::opt<double>
    grace("grace",
          cl::desc("Seconds between SIGTERM and SIGKILL when stopping ranks "
                   "(a training rank saves a checkpoint on SIGTERM)"),
          cl::init(30), cl::sub(launchCmd), cl::cat(cat));
cl::opt<double> heartbeatTimeout(
    "heartbeat-timeout",
    cl::desc("Seconds without a heartbeat after which a strata rank counts as "
             "stopped or hung and the job ends"),
    cl::init(kDefaultHeartbeatTimeoutSeconds), cl::sub(launchCmd),
    cl::cat(cat));
cl::list<std::string> command(cl::Positional, cl::OneOrMore,
                              cl::desc("-- <command> [args...]"),
                              cl::sub(launchCmd), cl::cat(cat));

volatile sig_atomic_t interrupted = 0; // the signal, or 0
void onSignal(int sig) {
  if (!interrupted)
    interrupted = sig;
}

int usage(const Twine &msg) { return reportError(msg); }

struct Child {
  pid_t pid = -1;
  int out = -1, err = -1, heartbeat = -1; // read ends, -1 once closed
  std::string outBuf, errBuf;
  bool exited = false;
  /// The last heartbeat; unset until the first (only strata ranks beat).
  std::optional<std::chrono::steady_clock::time_point> lastBeat;
};

/// Writes the complete lines of `buf` (all of it at EOF) with the prefix.
void flushLines(std::string &buf, int rank, raw_ostream &os, bool eof) {
  size_t start = 0, nl;
  while ((nl = buf.find('\n', start)) != std::string::npos) {
    os << "[rank " << rank << "] " << StringRef(buf).slice(start, nl + 1);
    start = nl + 1;
  }
  buf.erase(0, start);
  if (eof && !buf.empty()) {
    os << "[rank " << rank << "] " << buf << "\n";
    buf.clear();
  }
  os.flush();
}

[[noreturn]] void execChild(int rank, int port, int outFd, int errFd,
                            int heartbeatFd, const sigset_t &oldMask) {
  setpgid(0, 0); // its own group: stopping it stops what it started
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The launcher's dispositions are not the command's: a SIGTERM that
  // arrived since fork (held by the mask) now stops it.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, &oldMask, nullptr);
  dup2(outFd, STDOUT_FILENO);
  dup2(errFd, STDERR_FILENO);
  fcntl(heartbeatFd, F_SETFD, 0); // inherited by the command
  auto set = [](const char *k, const std::string &v) {
    setenv(k, v.c_str(), 1);
  };
  set(kHeartbeatFdVar, std::to_string(heartbeatFd));
  set("RANK", std::to_string(nodeRank * nproc + rank));
  set("LOCAL_RANK", std::to_string(rank));
  set("WORLD_SIZE", std::to_string(nnodes * nproc));
  set("LOCAL_WORLD_SIZE", std::to_string(nproc));
  set("MASTER_ADDR", masterAddr);
  set("MASTER_PORT", std::to_string(port));
  std::vector<std::string> args(command.begin(), command.end());
  if (args[0] == "strata") {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0)
      args[0] = std::string(buf, size_t(n));
  }
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  reportError(Twine("cannot run '") + argv[0] + "': " + strerror(errno));
  _exit(127);
}

/// Drains a heartbeat pipe and notes the beat; closes it at EOF.
void readHeartbeat(std::vector<Child> &children, int fd) {
  for (Child &c : children) {
    if (c.heartbeat != fd)
      continue;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      c.lastBeat = std::chrono::steady_clock::now();
    } else if (n == 0 || errno != EINTR) {
      close(fd);
      c.heartbeat = -1;
    }
  }
}

/// A running rank that beat once and then fell silent for longer than
/// --heartbeat-timeout, or -1.
int silentRank(const std::vector<Child> &children) {
  auto limit = std::chrono::duration<double>(double(heartbeatTimeout));
  for (size_t r = 0; r < children.size(); ++r) {
    const Child &c = children[r];
    if (!c.exited && c.heartbeat >= 0 && c.lastBeat &&
        std::chrono::steady_clock::now() - *c.lastBeat > limit)
      return int(r);
  }
  return -1;
}

/// The exit code a status stands for (128 + signal for a killed process).
int exitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// The node layout and rendezvous from Slurm's variables, for the flags
/// not given (one launcher per node: SLURM_PROCID is the node's index).
Error adoptSlurm() {
  if (!std::getenv("SLURM_PROCID"))
    return Error::success();
  auto vars = torchrunVarsFromProcess();
  if (!vars)
    return vars.takeError();
  auto get = [&](const char *k) { return vars->count(k) ? (*vars)[k] : ""; };
  if (!nnodes.getNumOccurrences() && !get("WORLD_SIZE").empty())
    nnodes = std::stoi(get("WORLD_SIZE"));
  if (!nodeRank.getNumOccurrences() && !get("RANK").empty())
    nodeRank = std::stoi(get("RANK"));
  if (!masterAddr.getNumOccurrences() && !get("MASTER_ADDR").empty())
    masterAddr = get("MASTER_ADDR");
  if (!masterPort.getNumOccurrences() && !get("MASTER_PORT").empty())
    masterPort = std::stoi(get("MASTER_PORT"));
  return Error::success();
}

int runLaunch() {
  if (Error e = adoptSlurm())
    return reportError(std::move(e));
  if (Error e = checkFlags({
          inRange(nproc, 1, 1024,
                  "processes started on this machine, one per device"),
          inRange(nnodes, 1, 65536, "nodes of the job, one launcher each"),
          inRange(nodeRank, 0, nnodes - 1, "this node's index below --nnodes"),
          inRange(masterPort, nnodes > 1 ? 1 : 0, 65535,
                  "a TCP port; 0 picks a free one on a single node"),
          inInterval(grace, 0, 3600, Ends::Closed,
                     "seconds a stopped rank gets before SIGKILL"),
          inInterval(heartbeatTimeout, 0, 86400, Ends::OpenLow,
                     "seconds of silence after which a rank counts as hung"),
      }))
    return reportError(std::move(e));
  if (masterAddr.empty())
    return usage("--master-addr must not be empty (rank 0's address, e.g. "
                 "127.0.0.1)");
  int port = masterPort == 0 ? freeLoopbackPort() : int(masterPort);
  if (port <= 0 || port > 65535)
    return usage("no usable --master-port");
  signal(SIGINT, onSignal);
  signal(SIGTERM, onSignal);
  signal(SIGPIPE, SIG_IGN);

  std::vector<Child> children(nproc);
  for (int r = 0; r < nproc; ++r) {
    int out[2], err[2], beat[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) ||
        pipe2(beat, O_CLOEXEC))
      return usage(Twine("pipe: ") + strerror(errno));
    // Signals wait until the child has its own group and handlers (a
    // SIGTERM caught by the launcher's handler in the child, or sent to a
    // group not yet made, would leave it running until SIGKILL).
    sigset_t stopSignals, oldMask;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGINT);
    sigaddset(&stopSignals, SIGTERM);
    sigprocmask(SIG_BLOCK, &stopSignals, &oldMask);
    pid_t pid = fork();
    if (pid < 0)
      return usage(Twine("fork: ") + strerror(errno));
    if (pid == 0) {
      close(out[0]);
      close(err[0]);
      close(beat[0]);
      execChild(r, port, out[1], err[1], beat[1], oldMask);
    }
    setpgid(pid, pid); // as the child does: whichever runs first
    sigprocmask(SIG_SETMASK, &oldMask, nullptr);
    close(out[1]);
    close(err[1]);
    close(beat[1]);
    children[r].pid = pid;
    children[r].out = out[0];
    children[r].err = err[0];
    children[r].heartbeat = beat[0];
  }

  using Clock = std::chrono::steady_clock;
  int firstFailure = -1, failureCode = 0;
  bool stopping = false, stalled = false;
  Clock::time_point killAt, drainUntil;
  auto stopAll = [&] {
    if (stopping)
      return;
    stopping = true;
    for (Child &c : children)
      if (!c.exited)
        kill(-c.pid, SIGTERM);
    killAt = Clock::now() + std::chrono::milliseconds(int64_t(grace * 1000));
  };
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, bool>> who; // (rank, isErr)
    for (int r = 0; r < nproc; ++r) {
      if (children[r].out >= 0) {
        fds.push_back({children[r].out, POLLIN, 0});
        who.push_back({r, false});
      }
      if (children[r].err >= 0) {
        fds.push_back({children[r].err, POLLIN, 0});
        who.push_back({r, true});
      }
    }
    size_t numOutputFds = fds.size();
    for (int r = 0; r < nproc; ++r)
      if (children[r].heartbeat >= 0)
        fds.push_back({children[r].heartbeat, POLLIN, 0});
    bool allExited = true;
    for (const Child &c : children)
      allExited &= c.exited;
    // Done when every rank exited and its output is drained (or, if a
    // grandchild keeps a pipe open, a second after the last exit).
    if (allExited && (numOutputFds == 0 || Clock::now() >= drainUntil))
      break;
    if (!fds.empty() && poll(fds.data(), fds.size(), 100) > 0) {
      for (size_t i = numOutputFds; i < fds.size(); ++i)
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
          readHeartbeat(children, fds[i].fd);
      for (size_t i = 0; i < numOutputFds; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
          continue;
        auto [r, isErr] = who[i];
        Child &c = children[r];
        char buf[4096];
        ssize_t n = read(fds[i].fd, buf, sizeof buf);
        std::string &b = isErr ? c.errBuf : c.outBuf;
        raw_ostream &os = isErr ? errs() : outs();
        if (n > 0) {
          b.append(buf, size_t(n));
          flushLines(b, r, os, false);
        } else if (n == 0 || errno != EINTR) {
          flushLines(b, r, os, true);
          close(fds[i].fd);
          (isErr ? c.err : c.out) = -1;
        }
      }
    } else if (fds.empty()) {
      usleep(100 * 1000);
    }
    for (int r = 0; r < nproc; ++r) {
      Child &c = children[r];
      int status;
      if (c.exited || waitpid(c.pid, &status, WNOHANG) != c.pid)
        continue;
      c.exited = true;
      drainUntil = Clock::now() + std::chrono::seconds(1);
      int code = exitCode(status);
      if (code != 0 && firstFailure < 0 && !stopping) {
        firstFailure = r;
        failureCode = code;
        stopAll();
      }
    }
    if (!stopping)
      if (int r = silentRank(children); r >= 0) {
        std::string timeout;
        raw_string_ostream(timeout) << format("%g", double(heartbeatTimeout));
        reportError("rank " + Twine(r) + " (pid " + Twine(children[r].pid) +
                    ") sent no heartbeat for " + timeout +
                    " s (stopped or hung); stopping every rank");
        firstFailure = r;
        failureCode = kExitUserError;
        stalled = true;
        stopAll();
      }
    if (interrupted && !stopping) {
      failureCode = 128 + interrupted; // 130 for SIGINT, 143 for SIGTERM
      stopAll();
    }
    if (stopping && Clock::now() >= killAt)
      for (Child &c : children)
        if (!c.exited)
          kill(-c.pid, SIGKILL);
  }
  if (stalled)
    return failureCode;
  if (firstFailure >= 0) {
    reportError("rank " + Twine(firstFailure) + " exited with code " +
                Twine(failureCode) + "; stopped the other ranks");
    return failureCode;
  }
  if (interrupted) {
    errs() << "strata launch: interrupted; stopped every rank\n";
    return failureCode;
  }
  return kExitOk;
}

VerbRegistration reg(launchCmd, runLaunch);

} // namespace
} // namespace strata
