//===- FuzzMain.cpp - A libFuzzer target over one entry of FuzzEntries.h --===//
//
// Compiled once per target with STRATA_FUZZ_TARGET="<name>" (see
// test/fuzz/CMakeLists.txt); the readers' errors are the expected outcome
// of most inputs and are dropped.
//
//===----------------------------------------------------------------------===//
#include "test/fuzz/FuzzEntries.h"

#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>

// Protobuf logs every invalid UTF-8 string it parses from a mutated plan to
// stderr; the parse fails (or the plan's checks do) either way.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const strata::fuzz::Entry entry =
      strata::fuzz::entryFor(STRATA_FUZZ_TARGET);
  llvm::consumeError(
      entry(llvm::StringRef(reinterpret_cast<const char *>(data), size)));
  return 0;
}
