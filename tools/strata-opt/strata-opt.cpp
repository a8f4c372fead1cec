//===- strata-opt.cpp - Runs passes on IR text (the mlir-opt of strata)
//----===//
//
//   strata-opt FILE.ir --passes=a,b{k=v} [--print-ir-after=NAME|all]
//              [--dump-dir=DIR] [--no-verify] [--split-input-file] [-o OUT]
//
// Reads one graph (or, with --split-input-file, one per `# -----` chunk),
// runs the pipeline and prints the result. A pipeline with the `pipeline` or
// `memory` pass runs on a training program whose microbatch graph is the
// input (passes/pipeline/ProgramPasses.h) and prints its stage and optimizer
// programs. Errors go to stderr in strata's one form,
// `strata-opt: error: <file>[:line:col]: <what>`, and exit with 1; the output
// file is only written when every chunk succeeded.
//
//===----------------------------------------------------------------------===//
#include "ir/IRText.h"
#include "passes/PassManager.h"
#include "passes/pipeline/ParallelCompile.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"

namespace cl = llvm::cl;
using namespace strata;

static cl::OptionCategory optCategory("strata-opt options");
static cl::opt<std::string> inputFile(cl::Positional, cl::init("-"),
                                      cl::desc("<input .ir file, - for stdin>"),
                                      cl::cat(optCategory));
static cl::opt<std::string> outputFile("o", cl::init("-"),
                                       cl::desc("Output file (default stdout)"),
                                       cl::value_desc("file"),
                                       cl::cat(optCategory));
static cl::opt<std::string> passPipeline(
    "passes",
    cl::desc("Pass pipeline, e.g. 'dce' or "
             "'megatron-seeds{tp=2,dp=2},spmd,dce' (--list-passes names them)"),
    cl::value_desc("pipeline"), cl::cat(optCategory));
static cl::opt<std::string>
    printIrAfter("print-ir-after",
                 cl::desc("Print the IR to stderr after this pass (or 'all')"),
                 cl::value_desc("pass|all"), cl::cat(optCategory));
static cl::opt<std::string>
    dumpDir("dump-dir",
            cl::desc("Write the IR before and after each pass as NN-<pass>.ir"),
            cl::value_desc("dir"), cl::cat(optCategory));
static cl::opt<bool>
    noVerify("no-verify", cl::desc("Do not run the verifier between passes"),
             cl::cat(optCategory));
static cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Process each '# -----' chunk of the input separately"),
    cl::cat(optCategory));
static cl::opt<bool> listPasses("list-passes",
                                cl::desc("List the registered passes"),
                                cl::cat(optCategory));

namespace {

/// Prints `message` as `strata-opt: error: <file>[:line:col]: <what>` lines.
/// The parser and passes say `<loc>: error: <what>`, sometimes nested
/// (`x.ir: error: y.ir:3:1: error: ...`); each wrapper becomes `<loc>: `.
/// Indented lines (context under a message) are printed as they are.
void reportError(llvm::StringRef message) {
  llvm::SmallVector<llvm::StringRef, 4> lines;
  message.rtrim('\n').split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (line.empty() || line.front() == ' ') {
      llvm::errs() << line << "\n";
      continue;
    }
    line.consume_front("strata-opt: ");
    line.consume_front("error: ");
    std::string what;
    while (true) {
      size_t at = line.find(": error: ");
      llvm::StringRef loc = line.take_front(at);
      if (at == llvm::StringRef::npos || at == 0 || loc.contains(": "))
        break;
      what += (loc + ": ").str();
      line = line.drop_front(at + 9);
    }
    llvm::errs() << "strata-opt: error: " << what << line << "\n";
  }
}

// Splits at lines that are `# -----`. Each chunk keeps its place in the file
// (earlier lines become empty) so error line numbers match the whole file.
std::vector<std::string> splitChunks(llvm::StringRef text) {
  std::vector<std::string> chunks(1);
  size_t line = 0, chunkStart = 0;
  while (!text.empty()) {
    auto [l, rest] = text.split('\n');
    if (l.trim().startswith("# -----")) {
      chunkStart = line + 1;
      chunks.emplace_back(chunkStart, '\n');
    } else {
      chunks.back() += l.str() + "\n";
    }
    text = rest;
    ++line;
  }
  return chunks;
}

// Parses and transforms one chunk; returns the printed result.
llvm::Expected<std::string> processChunk(llvm::StringRef text,
                                         llvm::StringRef bufferName) {
  auto graph = parseGraph(text, bufferName);
  if (!graph)
    return graph.takeError();
  PassManagerOptions options;
  options.verifyEach = !noVerify;
  options.printIrAfter = printIrAfter;
  options.dumpDir = dumpDir;
  PassManager pm(std::move(options));
  auto fail = [&](llvm::Error e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   bufferName +
                                       ": error: " + toString(std::move(e)));
  };
  if (auto e = pm.addPipeline(passPipeline))
    return fail(std::move(e));
  auto entries = parsePipeline(passPipeline);
  if (!entries)
    return fail(entries.takeError());
  if (llvm::none_of(*entries, [](const PipelineEntry &e) {
        return e.name == "pipeline" || e.name == "memory";
      })) {
    auto changed = pm.run(*graph);
    if (!changed)
      return fail(changed.takeError());
    return graphToString(*graph);
  }
  CompiledPipeline program;
  program.micro = std::move(*graph);
  auto changed = pm.run(program);
  if (!changed)
    return fail(changed.takeError());
  std::string out;
  llvm::raw_string_ostream os(out);
  if (program.pipeline.stages.empty())
    printGraph(os, program.micro);
  else
    printPipelinePlan(os, program.pipeline);
  return os.str();
}

} // namespace

int main(int argc, char **argv) {
  registerAllPasses();
  cl::HideUnrelatedOptions(optCategory);
  cl::ParseCommandLineOptions(argc, argv,
                              "strata-opt: runs strata passes on IR text\n");
  if (listPasses) {
    for (const PassInfo *info : registeredPasses())
      llvm::outs() << "  " << info->name << " - " << info->summary << "\n";
    return 0;
  }
  if (auto e = PassManager().addPipeline(passPipeline)) {
    reportError(toString(std::move(e)));
    return 1;
  }
  if (splitInputFile && !dumpDir.empty()) {
    reportError("--dump-dir cannot be combined with --split-input-file");
    return 1;
  }
  auto buf = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buf) {
    reportError(inputFile + ": cannot open file (" + buf.getError().message() +
                ")");
    return 1;
  }
  std::string bufferName = inputFile == "-" ? "<stdin>" : inputFile.getValue();
  llvm::StringRef text = (*buf)->getBuffer();
  std::vector<std::string> chunks =
      splitInputFile ? splitChunks(text) : std::vector<std::string>{text.str()};

  std::string output;
  bool failed = false;
  for (size_t i = 0; i < chunks.size(); ++i) {
    auto result = processChunk(chunks[i], bufferName);
    if (!result) {
      reportError(toString(result.takeError()));
      failed = true;
      continue;
    }
    if (i)
      output += "# -----\n";
    output += *result;
  }
  if (failed)
    return 1;
  if (auto e = llvm::writeToOutput(outputFile, [&](llvm::raw_ostream &os) {
        os << output;
        return llvm::Error::success();
      })) {
    reportError(outputFile + ": cannot write output (" +
                toString(std::move(e)) + ")");
    return 1;
  }
  return 0;
}
