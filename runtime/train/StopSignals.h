//===- StopSignals.h - Stop a run cleanly on SIGINT / SIGTERM
//---------------===//
//
// While a StopSignals lives, the first SIGINT or SIGTERM is only recorded:
// the training loop finishes its step, saves a checkpoint and ends with
// TrainingInterrupted, which the CLI turns into the usual exit code (130 for
// SIGINT, 143 for SIGTERM). A second signal takes the default action, so a
// user can still kill a run that hangs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/Error.h"

#include <csignal>

namespace strata {

class StopSignals {
public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals &) = delete;
  StopSignals &operator=(const StopSignals &) = delete;

  /// The first signal received (SIGINT or SIGTERM), or 0.
  int received() const;

private:
  struct sigaction oldInt_, oldTerm_;
};

/// A run that stopped on a signal after saving its state.
class TrainingInterrupted : public llvm::ErrorInfo<TrainingInterrupted> {
public:
  static char ID;
  TrainingInterrupted(int signal, std::string message)
      : signal_(signal), message_(std::move(message)) {}
  int signal() const { return signal_; }
  /// The conventional exit code: 128 + the signal number.
  int exitCode() const { return 128 + signal_; }
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  int signal_;
  std::string message_;
};

} // namespace strata
