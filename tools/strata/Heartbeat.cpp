//===- Heartbeat.cpp - A rank's sign of life for `strata launch`
//-----------===//
#include "tools/strata/Heartbeat.h"

#include "runtime/comm/Heartbeat.h"
#include "tools/strata/Verb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

namespace strata {

void startHeartbeatFromEnvironment() {
  // A peer found stalled by the ranks' own watchdog ends this rank with the
  // driver's error form.
  setStallHandler([](const std::string &message) {
    reportError(message);
    llvm::errs().flush();
    _exit(kExitUserError);
  });
  const char *var = std::getenv(kHeartbeatFdVar);
  int fd;
  if (!var || llvm::StringRef(var).getAsInteger(10, fd) || fd < 0)
    return;
  // Not inherited by what this process starts (the kernel compiler).
  unsetenv(kHeartbeatFdVar);
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN); // a gone launcher is not this rank's death
  std::thread([fd] {
    const char beat = 1;
    while (::write(fd, &beat, 1) == 1 || errno == EINTR)
      std::this_thread::sleep_for(kHeartbeatInterval);
  }).detach();
}

} // namespace strata
