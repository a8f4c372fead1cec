//===- main.cpp - The `strata` command-line driver ------------------------===//
//
// `strata <verb> [options]`: dispatches to the verb chosen on the command line
// (see Verb.h). `strata help [VERB]` is `strata [VERB] --help`; an unknown
// verb is answered with the list of verbs and the closest one. Option errors
// (llvm::cl's) are reported in strata's one form and exit with code 1.
//
//===----------------------------------------------------------------------===//
#include "proto/PlanFile.h"
#include "runtime/cpu/ProcessEnv.h"
#include "tools/strata/Heartbeat.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/InitLLVM.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <csignal>
#include <system_error>

#include <cctype>
#include <cstdio>
#include <deque>
#include <optional>
#include <unistd.h>

using namespace llvm;

namespace strata {

std::vector<Verb> &registeredVerbs() {
  static std::vector<Verb> verbs;
  return verbs;
}

cl::OptionCategory &strataCategory() {
  static cl::OptionCategory category("strata options");
  return category;
}

} // namespace strata

using namespace strata;

namespace {

const Verb *findVerb(StringRef name) {
  for (const Verb &v : registeredVerbs())
    if (v.command->getName() == name)
      return &v;
  return nullptr;
}

/// `strata: error: unknown verb 'x' (did you mean 'y'? the verbs are ...)`.
int unknownVerb(StringRef name) {
  std::vector<StringRef> names;
  for (const Verb &v : registeredVerbs())
    names.push_back(v.command->getName());
  llvm::sort(names);
  std::string verbs, closest;
  unsigned best = ~0u;
  for (StringRef n : names) {
    verbs += (verbs.empty() ? "" : ", ") + n.str();
    unsigned d = n.edit_distance(name, /*AllowReplacements=*/true);
    if (d < best)
      best = d, closest = n.str();
  }
  std::string hint = best <= std::max<size_t>(2, name.size() / 3)
                         ? "did you mean '" + closest + "'? "
                         : "";
  return reportError("unknown verb '" + name + "' (" + hint + "the verbs are " +
                     verbs + "; `strata help VERB` describes one)");
}

/// The default of an option as help shows it, if it has one worth showing.
std::optional<std::string> defaultText(const cl::Option *o) {
  char buf[64];
  if (auto *i = dynamic_cast<const cl::opt<int64_t> *>(o))
    if (i->getDefault().hasValue())
      return std::to_string(i->getDefault().getValue());
  if (auto *i = dynamic_cast<const cl::opt<int> *>(o))
    if (i->getDefault().hasValue())
      return std::to_string(i->getDefault().getValue());
  if (auto *d = dynamic_cast<const cl::opt<double> *>(o))
    if (d->getDefault().hasValue()) {
      snprintf(buf, sizeof buf, "%g", d->getDefault().getValue());
      return std::string(buf);
    }
  if (auto *s = dynamic_cast<const cl::opt<std::string> *>(o))
    if (s->getDefault().hasValue() && !s->getDefault().getValue().empty())
      return s->getDefault().getValue();
  return std::nullopt;
}

/// Appends ` (default: X)` to the help of every option with a default that
/// its description does not already state.
void showDefaultsInHelp() {
  static std::deque<std::string> texts; // cl::Option keeps a StringRef
  for (const Verb &v : registeredVerbs())
    for (auto &entry : cl::getRegisteredOptions(*v.command)) {
      cl::Option *o = entry.second;
      if (o->HelpStr.contains("default") ||
          o->getNumOccurrencesFlag() == cl::Required ||
          !is_contained(o->Categories, &strataCategory()))
        continue;
      if (auto text = defaultText(o)) {
        texts.push_back((o->HelpStr + " (default: " + *text + ")").str());
        o->setDescription(texts.back());
      }
    }
}

/// The usage line of the current verb: "strata train [options] <input>".
std::string usageLine() {
  std::string line = "strata";
  for (const Verb &v : registeredVerbs())
    if (v.command->getName() == currentVerb()) {
      line += " " + currentVerb().str() + " [options]";
      for (const cl::Option *o : v.command->PositionalOpts)
        line += " " + o->HelpStr.str();
    }
  return line;
}

/// ": <its description>" of the current verb's option `flag` ("--cluster"),
/// or "".
std::string flagHelp(StringRef flag) {
  for (const Verb &v : registeredVerbs())
    if (v.command->getName() == currentVerb())
      for (auto &entry : cl::getRegisteredOptions(*v.command))
        if (StringRef h = entry.second->HelpStr;
            entry.first() == flag.ltrim('-') && h.size() > 1) {
          // "A built-in cluster" -> "a built-in cluster"; "NCCL ..." stays.
          bool word = std::isupper(h[0]) && !std::isupper(h[1]);
          return ": " +
                 (word ? h.take_front(1).lower() : h.take_front(1).str()) +
                 h.drop_front(1).str();
        }
  return "";
}

/// llvm::cl's first complaint (`strata: for the --x option: ...`, with
/// `strata: Did you mean ...` after an unknown flag) in strata's words; the
/// ones after it follow from the first.
std::string clError(StringRef text) {
  SmallVector<StringRef, 4> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.empty())
    return "bad command line (`" + usageLine() + "`)";
  StringRef l = lines[0];
  l.consume_front("strata: ");
  std::string help = "see `strata " +
                     (currentVerb().empty() ? "" : currentVerb().str() + " ") +
                     "--help`";
  if (l.consume_front("Unknown command line argument '")) {
    StringRef flag = l.take_until([](char c) { return c == '\''; });
    std::string hint;
    if (lines.size() > 1 && lines[1].contains("Did you mean '")) {
      StringRef m = lines[1].drop_front(lines[1].find("Did you mean '") + 14);
      hint = "did you mean '" +
             m.take_until([](char c) { return c == '\''; }).str() + "'? ";
    }
    return "unknown flag '" + flag.str() + "' (" + hint + help + ")";
  }
  if (l.startswith("Not enough positional"))
    return "missing an argument (usage: " + usageLine() + ")";
  if (l.startswith("Too many positional"))
    return "too many arguments (usage: " + usageLine() +
           "; a flag's value goes right after it)";
  if (l.consume_front("for the ")) {
    auto [flag, what] = l.split(" option: ");
    what = what.rtrim('!');
    StringRef value = what.take_until([](char c) { return c == ' '; });
    if (what.contains("value invalid for long") ||
        what.contains("value invalid for integer"))
      return (flag + " takes an integer, got " + value + " (" + help + ")")
          .str();
    if (what.contains("value invalid for floating point"))
      return (flag + " takes a number, got " + value + " (" + help + ")").str();
    if (what.contains("must be specified at least once"))
      return (flag + " is required" + flagHelp(flag) +
              " (usage: " + usageLine() + ")")
          .str();
    return (flag + ": " + what + " (" + help + ")").str();
  }
  return l.str();
}

/// Parses the command line; llvm::cl's complaints, which it writes to
/// stderr, are returned instead.
std::optional<std::string> parseCommandLine(std::vector<const char *> &args) {
  int saved = dup(STDERR_FILENO);
  FILE *capture = tmpfile();
  if (saved < 0 || !capture)
    return std::string("cannot capture the command line's errors");
  dup2(fileno(capture), STDERR_FILENO);
  std::string text;
  raw_string_ostream errors(text);
  bool ok = cl::ParseCommandLineOptions(
      int(args.size()), args.data(),
      "strata: compile and run transformer training in parallel\n", &errors);
  errs().flush();
  dup2(saved, STDERR_FILENO);
  close(saved);
  errors.flush();
  auto written = MemoryBuffer::getOpenFile(fileno(capture), "stderr",
                                           /*FileSize=*/-1);
  if (written)
    text = (*written)->getBuffer().str() + text;
  fclose(capture);
  if (ok)
    return std::nullopt;
  return clError(text);
}

/// The verb's exit code once stdout is flushed. A reader that went away
/// (`strata train ... | head`) is the shell's broken pipe, exit 141, not a
/// crash: Gloo ignores SIGPIPE, so the write fails with EPIPE instead.
int closeStdout(int code) {
  outs().flush();
  if (!outs().has_error())
    return code;
  std::error_code ec = outs().error();
  outs().clear_error();
  if (ec == std::errc::broken_pipe)
    return code ? code : 128 + SIGPIPE;
  return reportError("cannot write the output (" + ec.message() + ")");
}

} // namespace

int main(int argc, char **argv) {
  strata::reexecWithRuntimeEnv(argv);
  strata::startHeartbeatFromEnvironment();
  InitLLVM init(argc, argv);
  std::vector<const char *> args(argv, argv + argc);
  // `strata help [VERB]` is `strata [VERB] --help`.
  if (args.size() >= 2 && StringRef(args[1]) == "help") {
    args.erase(args.begin() + 1);
    args.push_back("--help");
  }
  if (args.size() >= 2 && !StringRef(args[1]).startswith("-")) {
    if (!findVerb(args[1]))
      return unknownVerb(args[1]);
    setCurrentVerb(args[1]);
  }
  for (const Verb &v : registeredVerbs())
    cl::HideUnrelatedOptions(strataCategory(), *v.command);
  cl::HideUnrelatedOptions(strataCategory());
  showDefaultsInHelp();
  cl::SetVersionPrinter([](raw_ostream &os) {
    os << "strata " << kStrataVersion << " (plan format " << kPlanFormatVersion
       << ")\n";
  });
  if (auto error = parseCommandLine(args))
    return reportError(*error);
  for (const Verb &v : registeredVerbs())
    if (*v.command)
      return closeStdout(v.run());
  return reportError("no verb given (`strata help` lists them)");
}
