//===- PassManager.cpp - Runs a pipeline of passes
//-------------------------===//
#include "passes/PassManager.h"

#include "passes/pipeline/ParallelCompile.h"

#include "ir/IRText.h"
#include "ir/Verifier.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TimeProfiler.h"

namespace strata {

namespace {

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

// A cursor over pipeline text that reports errors with the column.
class PipelineParser {
public:
  explicit PipelineParser(llvm::StringRef text) : text_(text) {}

  llvm::Expected<std::vector<PipelineEntry>> parse() {
    std::vector<PipelineEntry> out;
    if (text_.trim().empty())
      return out;
    do {
      PipelineEntry entry;
      auto name = word("a pass name", /*isName=*/true);
      if (!name)
        return name.takeError();
      entry.name = *name;
      if (accept('{') && !accept('}')) {
        do {
          auto key = word("an option name", /*isName=*/true);
          if (!key)
            return key.takeError();
          if (peek() != '=')
            return error("expected '=' after option '" + *key + "'");
          ++pos_;
          auto value = word("an option value", /*isName=*/false);
          if (!value)
            return value.takeError();
          if (!entry.options.try_emplace(*key, *value).second)
            return error("option '" + *key + "' is given twice");
        } while (accept(','));
        if (!accept('}'))
          return error("expected ',' or '}'");
      }
      out.push_back(std::move(entry));
    } while (accept(','));
    skipSpace();
    if (pos_ != text_.size())
      return error("expected ',' or the end");
    return out;
  }

private:
  char peek() {
    skipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c)
      return false;
    ++pos_;
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() && llvm::isSpace(text_[pos_]))
      ++pos_;
  }
  // A run of characters other than `,{}=`, trimmed. Names are letters,
  // digits, '-' and '_'.
  llvm::Expected<std::string> word(const char *what, bool isName) {
    skipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() &&
           !llvm::StringRef(",{}=").contains(text_[pos_]))
      ++pos_;
    llvm::StringRef w = text_.slice(start, pos_).rtrim();
    if (w.empty()) {
      pos_ = start;
      return error(llvm::Twine("expected ") + what);
    }
    if (isName && !llvm::all_of(w, [](char c) {
          return llvm::isAlnum(c) || c == '-' || c == '_';
        })) {
      pos_ = start;
      return error(llvm::Twine("'") + w + "' is not a valid name");
    }
    return w.str();
  }
  llvm::Error error(const llvm::Twine &msg) {
    return err("invalid pass pipeline '" + text_ + "' at column " +
               llvm::Twine(pos_ + 1) + ": " + msg);
  }

  llvm::StringRef text_;
  size_t pos_ = 0;
};

} // namespace

llvm::Expected<std::vector<PipelineEntry>> parsePipeline(llvm::StringRef text) {
  return PipelineParser(text).parse();
}

llvm::Error checkPassOptions(llvm::StringRef pass, const PassOptions &options,
                             llvm::ArrayRef<llvm::StringRef> known) {
  for (const auto &opt : options) {
    if (llvm::is_contained(known, opt.getKey()))
      continue;
    std::string list =
        known.empty() ? "it takes none" : "known: " + llvm::join(known, ", ");
    return err("pass '" + pass + "' has no option '" + opt.getKey() + "' (" +
               list + ")");
  }
  return llvm::Error::success();
}

llvm::Expected<int64_t> intPassOption(const PassOptions &options,
                                      llvm::StringRef key, int64_t def) {
  auto it = options.find(key);
  if (it == options.end())
    return def;
  int64_t v;
  if (llvm::StringRef(it->second).getAsInteger(10, v))
    return err("option " + key + "='" + it->second + "' is not an integer");
  return v;
}

llvm::Expected<double> floatPassOption(const PassOptions &options,
                                       llvm::StringRef key, double def) {
  auto it = options.find(key);
  if (it == options.end())
    return def;
  double v;
  if (llvm::StringRef(it->second).getAsDouble(v))
    return err("option " + key + "='" + it->second + "' is not a number");
  return v;
}

llvm::Expected<std::vector<int64_t>>
intListPassOption(const PassOptions &options, llvm::StringRef key,
                  llvm::StringRef what) {
  std::vector<int64_t> out;
  auto it = options.find(key);
  if (it == options.end())
    return out;
  llvm::SmallVector<llvm::StringRef, 8> parts;
  llvm::StringRef(it->second).split(parts, '+');
  for (llvm::StringRef p : parts) {
    int64_t v;
    if (p.getAsInteger(10, v))
      return err(key + " takes " + what + " joined by '+' (got '" + it->second +
                 "')");
    out.push_back(v);
  }
  return out;
}

llvm::Error PassManager::addPipeline(llvm::StringRef text) {
  auto entries = parsePipeline(text);
  if (!entries)
    return entries.takeError();
  for (PipelineEntry &entry : *entries) {
    const PassInfo *info = lookupPass(entry.name);
    if (!info)
      return err("unknown pass '" + entry.name +
                 "' (see strata-opt --list-passes)");
    auto pass = info->create(entry.options);
    if (!pass)
      return pass.takeError();
    addPass(std::move(*pass));
  }
  return llvm::Error::success();
}

llvm::Error
PassManager::emit(size_t index, bool changed,
                  llvm::function_ref<void(llvm::raw_ostream &)> print,
                  llvm::function_ref<llvm::Error()> verify) {
  llvm::StringRef name = index ? passes_[index - 1]->name() : "input";
  if (index &&
      (options_.printIrAfter == "all" || options_.printIrAfter == name)) {
    log_ << "# IR after " << name << (changed ? "" : " (unchanged)") << "\n";
    print(log_);
  }
  if (!options_.dumpDir.empty()) {
    llvm::SmallString<128> path(options_.dumpDir);
    llvm::sys::path::append(path, (index < 10 ? "0" : "") +
                                      std::to_string(index) + "-" + name +
                                      ".ir");
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (!ec) {
      print(os);
      os.close();
      ec = os.error();
    }
    if (ec)
      return err("cannot write '" + path + "' (" + ec.message() + ")");
  }
  if (!options_.verifyEach)
    return llvm::Error::success();
  if (auto e = verify()) {
    std::string when =
        index ? "after pass '" + name.str() + "'" : "on the input graph";
    return err("verifier failed " + when + ": " + toString(std::move(e)));
  }
  return llvm::Error::success();
}

llvm::Error PassManager::afterPass(const Graph &g, size_t index, bool changed) {
  return emit(
      index, changed, [&](llvm::raw_ostream &os) { printGraph(os, g); },
      [&] { return verifyGraph(g); });
}

llvm::Error PassManager::afterPass(const CompiledPipeline &p, size_t index,
                                   bool changed) {
  bool cut = !p.pipeline.stages.empty();
  return emit(
      index, changed,
      [&](llvm::raw_ostream &os) {
        if (!cut)
          return printGraph(os, p.micro);
        printPipelinePlan(os, p.pipeline);
        for (const RankMemory &m : p.memory.ranks)
          os << "# memory: pipeline rank " << m.rank << " peak " << m.peak
             << " bytes (at " << m.peakAt << ")\n";
      },
      [&] {
        return cut ? verifyPipelinePlan(p.pipeline) : verifyGraph(p.micro);
      });
}

template <class Unit>
llvm::Expected<bool>
PassManager::runOn(Unit &unit,
                   llvm::function_ref<llvm::Expected<bool>(Pass &)> step) {
  const std::string &only = options_.printIrAfter;
  if (!only.empty() && only != "all" &&
      llvm::none_of(passes_, [&](const auto &p) { return p->name() == only; }))
    return err("--print-ir-after: no pass '" + only + "' in the pipeline");
  if (!options_.dumpDir.empty())
    if (std::error_code ec =
            llvm::sys::fs::create_directories(options_.dumpDir))
      return err("cannot create dump directory '" + options_.dumpDir + "' (" +
                 ec.message() + ")");
  if (auto e = afterPass(unit, 0, false))
    return e;
  bool changedAny = false;
  for (size_t i = 0; i < passes_.size(); ++i) {
    auto changed = [&] {
      llvm::TimeTraceScope scope("pass", passes_[i]->name());
      return step(*passes_[i]);
    }();
    if (!changed && !options_.namePassInErrors)
      return changed.takeError();
    if (!changed)
      return err("pass '" + passes_[i]->name() +
                 "': " + toString(changed.takeError()));
    changedAny |= *changed;
    llvm::TimeTraceScope scope("verify", passes_[i]->name());
    if (auto e = afterPass(unit, i + 1, *changed))
      return e;
  }
  return changedAny;
}

llvm::Expected<bool> PassManager::run(Graph &g) {
  return runOn(g, [&](Pass &p) { return p.run(g); });
}

llvm::Expected<bool> PassManager::run(CompiledPipeline &program) {
  return runOn(program, [&](Pass &p) { return p.runOnProgram(program); });
}

} // namespace strata
