//===- BadInputTest.cpp - strata on bad input: errors, no output ----------===//
//
// Each row of BadInputCases.cpp runs the real binary in a fresh directory
// holding the fixtures it names and the row's files, and checks: the exit
// code (1), stderr's last line in strata's one form (`strata <verb>: error:
// ...`), the row's fragment in stderr, and no output plan or temporary file
// left behind. BadInputDocs renders every row with the exact
// message into docs/bad-inputs.md and fails, with a diff, when the committed
// file differs (STRATA_UPDATE_DOCS=1 rewrites it).
//
//===----------------------------------------------------------------------===//
#include "BadInputCases.h"
#include "RunStrata.h"

#include "llvm/ADT/StringExtras.h"

#include <cstdlib>

using namespace strata::test;

namespace {

const char *kData = "First Citizen:\nBefore we proceed any further, hear me "
                    "speak.\n\nAll:\nSpeak, speak.\n\n";

std::string fixtureSpec() {
  return std::string(kValidSpec) +
         "training { steps: 2 eval_every: 0 }\ndata { path: \"data.txt\" }\n";
}

std::string fixtureData() {
  std::string text;
  while (text.size() < 4096)
    text += kData;
  return text;
}

/// Bytes of a fixture made by strata itself, once per process: "ok.plan"
/// (compiled from ok.textproto) or "checkpoint.bin" (after one step).
const std::string &madeFixture(const std::string &name) {
  static std::map<std::string, std::string> made;
  if (auto it = made.find(name); it != made.end())
    return it->second;
  TempDir dir;
  dir.write("ok.textproto", fixtureSpec());
  dir.write("data.txt", fixtureData());
  std::string d = dir.path("");
  RunResult r =
      name == "ok.plan"
          ? runStrataIn(d, {"compile", "ok.textproto", "-o", "ok.plan"})
          : runStrataIn(d, {"train", "ok.textproto", "--steps", "1", "--sample",
                            "0", "--out", "run"});
  EXPECT_EQ(r.rc, 0) << r.err;
  return made[name] = slurp(
             dir.path(name == "ok.plan" ? "ok.plan" : "run/checkpoint.bin"));
}

/// A file's contents: text, or an "@..." fixture variant.
std::string contents(const std::string &spec) {
  // Cuts and flips that give messages independent of the compiler's and the
  // kernels' output, so that docs/bad-inputs.md changes only with messages.
  if (spec == "@truncated-plan")
    return madeFixture("ok.plan").substr(0, 20); // inside the 24-byte header
  if (spec == "@newer-plan") {
    std::string bytes = madeFixture("ok.plan");
    bytes[8] = 99; // header format version (u32 little-endian at offset 8)
    return bytes;
  }
  if (spec == "@truncated-checkpoint") {
    const std::string &ckpt = madeFixture("checkpoint.bin");
    return ckpt.substr(0, ckpt.size() / 2);
  }
  if (spec == "@corrupt-checkpoint") {
    std::string bytes = madeFixture("checkpoint.bin");
    bytes[40] ^= 0x01; // inside the JSON header, which has a CRC
    return bytes;
  }
  return spec;
}

struct CaseResult {
  RunResult run;
  bool wroteOutput = false;          // out.plan appeared
  std::vector<std::string> leftover; // temporary files left behind
};

/// Runs one row in a fresh directory; paths in its output are relative to it.
CaseResult runCase(const BadInput &c) {
  TempDir dir;
  std::string d = dir.path("");
  auto uses = [&](llvm::StringRef f) { return llvm::is_contained(c.args, f); };
  if (uses("ok.textproto") || uses("ok.plan"))
    dir.write("ok.textproto", fixtureSpec());
  if (uses("ok.textproto") || uses("ok.plan") || uses("checkpoint.bin"))
    dir.write("data.txt", fixtureData());
  for (const char *made : {"ok.plan", "checkpoint.bin"})
    if (uses(made))
      dir.write(made, madeFixture(made));
  for (const auto &[name, content] : c.files) {
    llvm::StringRef parent = llvm::StringRef(name).rsplit('/').first;
    if (parent != name)
      llvm::sys::fs::create_directories(dir.path(parent));
    dir.write(name, contents(content));
  }
  bool outputWasThere = llvm::sys::fs::exists(dir.path("out.plan"));
  CaseResult r;
  r.run = runStrataIn(d, c.args);
  r.wroteOutput =
      !outputWasThere && llvm::sys::fs::exists(dir.path("out.plan"));
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(d, ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::StringRef(it->path()).contains(".tmp"))
      r.leftover.push_back(it->path());
  // Paths relative to the case's directory, which is "." itself.
  std::string bare = d.substr(0, d.size() - 1);
  for (std::string *s : {&r.run.out, &r.run.err}) {
    for (size_t at; (at = s->find(d)) != std::string::npos;)
      s->erase(at, d.size());
    for (size_t at; (at = s->find(bare)) != std::string::npos;)
      s->replace(at, bare.size(), ".");
  }
  return r;
}

std::string commandLine(const BadInput &c) {
  std::string s = "strata";
  for (const std::string &a : c.args)
    s += " " +
         (a.find(' ') == std::string::npos && !a.empty() ? a : "'" + a + "'");
  return s;
}

/// The verbs `strata help` lists.
const std::vector<std::string> &verbs() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    std::string help = runStrata({"help"}).out; // `lines` point into it
    llvm::SmallVector<llvm::StringRef, 32> lines;
    llvm::StringRef(help).split(lines, '\n');
    for (llvm::StringRef l : lines)
      if (l.startswith("  ") && l.contains(" - ") && !l.ltrim().startswith("-"))
        out.push_back(l.ltrim().split(' ').first.str());
    return out;
  }();
  return names;
}

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, FailsCleanly) {
  const BadInput &c = GetParam();
  CaseResult r = runCase(c);
  EXPECT_EQ(r.run.rc, c.rc) << r.run.err;
  std::string tool = !c.args.empty() && llvm::is_contained(verbs(), c.args[0])
                         ? "strata " + c.args[0]
                         : "strata";
  llvm::StringRef err = llvm::StringRef(r.run.err).rtrim('\n');
  llvm::StringRef last =
      err.rsplit('\n').second.empty() ? err : err.rsplit('\n').second;
  EXPECT_TRUE(last.startswith(tool + ": error: "))
      << "stderr: " << r.run.err << "\nwanted prefix: " << tool << ": error: ";
  EXPECT_NE(r.run.err.find(c.fragment), std::string::npos)
      << "stderr: " << r.run.err << "\nwanted fragment: " << c.fragment;
  EXPECT_FALSE(r.wroteOutput);
  EXPECT_TRUE(r.leftover.empty()) << r.leftover.front();
}

INSTANTIATE_TEST_SUITE_P(Cli, BadInputTest, ::testing::ValuesIn(badInputs()),
                         [](const ::testing::TestParamInfo<BadInput> &info) {
                           return info.param.name;
                         });

TEST(BadInput, FailedCompileKeepsTheOldPlan) {
  TempDir dir;
  std::string out = dir.write("out.plan", "previous plan");
  std::string spec = dir.write("bad.textproto", "family: GPT\nlayers: 0\n");
  RunResult r = runStrata({"compile", spec, "-o", out});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(slurp(out), "previous plan");
}

/// Markdown table cell text: `|` escaped, lines joined with <br>.
std::string cell(llvm::StringRef text) {
  std::string out;
  for (char ch : text.rtrim('\n')) {
    if (ch == '|')
      out += "\\|";
    else if (ch == '\n')
      out += "<br>";
    else if (ch == '<')
      out += "&lt;";
    else if (ch == '>')
      out += "&gt;";
    else
      out += ch;
  }
  return out;
}

std::string renderDocs() {
  std::string md =
      "# Bad inputs strata refuses\n\n"
      "Each row is a test (`Cli/BadInputTest.FailsCleanly/<case>` in "
      "test/cli/BadInputTest.cpp, rows in test/cli/BadInputCases.cpp): the "
      "command runs in a directory holding the files it names, exits with "
      "code 1, writes nothing, and prints exactly the message shown. The "
      "fixtures: `ok.textproto` (a valid 2-layer GPT spec whose data.path is "
      "`data.txt`), `data.txt` (4 KiB of text), `ok.plan` (compiled from the "
      "spec) and `checkpoint.bin` (after one training step); the other files "
      "are the row's own (see the test).\n\n"
      "This file is generated; after changing a message, regenerate it with\n\n"
      "    STRATA_UPDATE_DOCS=1 build/test/cli/cli_test "
      "--gtest_filter='BadInputDocs.*'\n";
  std::string group;
  for (const BadInput &c : badInputs()) {
    if (c.group != group) {
      group = c.group;
      md += "\n## " + group +
            "\n\n| bad input | command | message |\n"
            "|---|---|---|\n";
    }
    CaseResult r = runCase(c);
    std::string what = c.name;
    std::replace(what.begin(), what.end(), '_', ' ');
    md += "| " + what + " | `" + cell(commandLine(c)) + "` | " +
          cell(r.run.err) + " |\n";
  }
  return md;
}

TEST(BadInputDocs, TableIsUpToDate) {
  std::string path = std::string(STRATA_SOURCE_DIR) + "/docs/bad-inputs.md";
  std::string generated = renderDocs();
  if (const char *update = std::getenv("STRATA_UPDATE_DOCS");
      update && std::string(update) == "1") {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec) << path << ": " << ec.message();
    os << generated;
    return;
  }
  std::string committed = slurp(path);
  if (committed == generated)
    return;
  TempDir dir;
  std::string fresh = dir.write("bad-inputs.md", generated);
  RunResult diff = runProgram("/usr/bin/diff", {"diff", "-u", path, fresh});
  ADD_FAILURE() << path << " is out of date with the messages strata prints:\n"
                << diff.out
                << "\nregenerate it: STRATA_UPDATE_DOCS=1 "
                   "build/test/cli/cli_test --gtest_filter='BadInputDocs.*'";
}

} // namespace
