//===- BadInputCases.h - The bad inputs strata must refuse cleanly --------===//
//
// One row per bad input: the command (run in a fresh directory holding the
// fixtures it names and the row's own files) and a fragment of the message
// it must print. BadInputTest.cpp runs each row as its own test and renders
// the table of all rows into docs/bad-inputs.md.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace strata::test {

struct BadInput {
  /// The table section: "Model specs", "Plans", "Checkpoints", "Data files",
  /// "Flags", "Verbs and output files".
  std::string group;
  /// The test name, saying what the row guards.
  std::string name;
  /// `strata` arguments, run in the row's directory. The directory holds
  /// the fixtures the arguments name: ok.textproto (a valid 2-layer GPT spec
  /// whose data.path is data.txt), data.txt, ok.plan (compiled from it),
  /// checkpoint.bin (after one training step of it).
  std::vector<std::string> args;
  /// stderr must contain this.
  std::string fragment;
  /// More files: name -> contents, or one of "@truncated-plan",
  /// "@newer-plan", "@truncated-checkpoint", "@corrupt-checkpoint".
  std::vector<std::pair<std::string, std::string>> files = {};
  /// The expected exit code.
  int rc = 1;
};

/// Test names are the rows' names.
inline void PrintTo(const BadInput &c, std::ostream *os) { *os << c.name; }

/// The valid spec of the fixture ok.textproto, without its data section.
extern const char *const kValidSpec;

/// Every row, in table order.
std::vector<BadInput> badInputs();

} // namespace strata::test
