//===- Diagnostics.cpp - One form for every message strata prints ---------===//
//
// `strata <verb>: <kind>: <file>[:line:col]: <what>` (see Verb.h). Messages
// come from the verbs (bare text), from the libraries (`<loc>: error: ...`,
// sometimes nested: `plan: error: x.ir:3:1: error: ...`) and from
// llvm::cl; each line is rewritten into the one form here.
//
//===----------------------------------------------------------------------===//
#include "tools/strata/Verb.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace strata {

static std::string &verbName() {
  static std::string verb;
  return verb;
}

StringRef currentVerb() { return verbName(); }
void setCurrentVerb(StringRef verb) { verbName() = verb.str(); }

namespace {

const char *const kKinds[] = {"error", "warning", "note"};

/// If `line` starts with `<loc>: <kind>: ` (loc free of ": "), splits it.
bool splitLocated(StringRef line, StringRef &loc, StringRef &kind,
                  StringRef &rest) {
  for (StringRef k : kKinds) {
    std::string tag = (": " + k + ": ").str();
    size_t at = line.find(tag);
    if (at == StringRef::npos || at == 0)
      continue;
    StringRef l = line.take_front(at);
    if (l.contains(": ") || l.startswith(" "))
      continue;
    loc = l;
    kind = k;
    rest = line.drop_front(at + tag.size());
    return true;
  }
  return false;
}

/// Drops `<loc>: error: ` wrappers nested inside a message: "a: error: b:1:2:
/// error: what" reads "a: b:1:2: what".
std::string unnest(StringRef rest) {
  std::string out;
  while (true) {
    StringRef loc, kind, tail;
    if (!splitLocated(rest, loc, kind, tail) || kind != "error")
      return out + rest.str();
    out += (loc + ": ").str();
    rest = tail;
  }
}

/// Drops a leading `strata[ <verb>]: ` (llvm::cl's errors and messages
/// already in the final form carry one).
StringRef dropToolPrefix(StringRef line) {
  StringRef tail = line;
  if (!tail.consume_front("strata"))
    return line;
  if (tail.consume_front(" "))
    tail = tail.drop_while([](char c) { return isAlnum(c) || c == '-'; });
  return tail.consume_front(": ") ? tail : line;
}

std::string formatLine(StringRef kind, StringRef line) {
  if (line.empty() || isSpace(line.front()))
    return line.str();
  line = dropToolPrefix(line);
  for (StringRef k : kKinds)
    if (line.consume_front((k + ": ").str())) {
      kind = k;
      break;
    }
  StringRef loc, locKind, rest;
  std::string what = unnest(line);
  if (splitLocated(line, loc, locKind, rest)) {
    kind = locKind;
    what = (loc + ": " + unnest(rest)).str();
  }
  std::string tool = currentVerb().empty() ? std::string("strata")
                                           : ("strata " + currentVerb()).str();
  return tool + ": " + kind.str() + ": " + what;
}

} // namespace

std::string formatDiagnostic(StringRef kind, StringRef message) {
  SmallVector<StringRef, 4> lines;
  message.rtrim('\n').split(lines, '\n');
  std::string out;
  for (StringRef line : lines)
    out += formatLine(kind, line) + "\n";
  return out;
}

int reportError(Error err) {
  handleAllErrors(std::move(err), [](const ErrorInfoBase &e) {
    errs() << formatDiagnostic("error", e.message());
  });
  return kExitUserError;
}

int reportError(const Twine &message) {
  errs() << formatDiagnostic("error", message.str());
  return kExitUserError;
}

void reportWarning(const Twine &message) {
  errs() << formatDiagnostic("warning", message.str());
}

void reportNote(const Twine &message) {
  errs() << formatDiagnostic("note", message.str());
}

Error usageError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

} // namespace strata
