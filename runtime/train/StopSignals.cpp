//===- StopSignals.cpp - Stop a run cleanly on SIGINT / SIGTERM
//-------------===//
#include "runtime/train/StopSignals.h"

#include "llvm/Support/raw_ostream.h"

namespace strata {

static volatile sig_atomic_t firstSignal = 0;

static void record(int sig) {
  if (!firstSignal)
    firstSignal = sig;
  // The next one acts as if strata had not caught it.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
}

StopSignals::StopSignals() {
  firstSignal = 0;
  struct sigaction sa = {};
  sa.sa_handler = record;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &oldInt_);
  sigaction(SIGTERM, &sa, &oldTerm_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &oldInt_, nullptr);
  sigaction(SIGTERM, &oldTerm_, nullptr);
}

int StopSignals::received() const { return firstSignal; }

char TrainingInterrupted::ID;

void TrainingInterrupted::log(llvm::raw_ostream &os) const { os << message_; }

std::error_code TrainingInterrupted::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

} // namespace strata
