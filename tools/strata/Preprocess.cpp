//===- Preprocess.cpp - `strata preprocess --input F --output-prefix P` ---===//
//
// Megatron-LM's tools/preprocess_data.py as a verb: tokenizes a .jsonl
// (one JSON object per line) or .txt (paragraphs) corpus into
// P_KEY_document.bin/.idx, Megatron's MMIDIDX format
// (runtime/data/megatron/Preprocess.h), with a progress line on stderr.
//
//   strata preprocess --input corpus.jsonl --json-key text
//       --tokenizer byte --output-prefix data/corpus --workers 2
//
//===----------------------------------------------------------------------===//
#include "runtime/data/megatron/Preprocess.h"
#include "runtime/data/TokenDataset.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand preprocessCmd(
    "preprocess",
    "Tokenize a .jsonl/.txt corpus into Megatron .bin/.idx files");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> input(
    "input",
    cl::desc(
        "Corpus: .jsonl/.json (one JSON object per line) or .txt (paragraphs)"),
    cl::value_desc("file"), cl::sub(preprocessCmd), cl::cat(cat));
cl::opt<std::string> jsonKey("json-key",
                             cl::desc("Key of the text in each JSON line"),
                             cl::init("text"), cl::sub(preprocessCmd),
                             cl::cat(cat));
cl::opt<std::string> tokenizerKind(
    "tokenizer",
    cl::desc("char | byte | FILE (tokenizer.json or SentencePiece .model)"),
    cl::init("byte"), cl::sub(preprocessCmd), cl::cat(cat));
cl::opt<std::string> outputPrefix(
    "output-prefix", cl::desc("Writes <prefix>_<key>_document.bin/.idx"),
    cl::value_desc("prefix"), cl::sub(preprocessCmd), cl::cat(cat));
cl::opt<bool> appendEod(
    "append-eod",
    cl::desc("Append the tokenizer's end-of-document token to each document"),
    cl::sub(preprocessCmd), cl::cat(cat));
cl::opt<int>
    workers("workers",
            cl::desc("Tokenizing threads (the output does not depend on it)"),
            cl::init(1), cl::sub(preprocessCmd), cl::cat(cat));

Error usage(const Twine &msg) { return usageError(msg); }

/// "\r"-updated on a terminal, one line per report otherwise.
void report(const megatron::PreprocessProgress &p, bool done) {
  static const bool tty = isatty(STDERR_FILENO);
  double mb = double(p.bytes) / (1 << 20),
         total = double(p.totalBytes) / (1 << 20);
  double s = std::max(p.seconds, 1e-9);
  errs() << (tty ? "\r" : "") << "processed " << p.documents << " documents, "
         << p.tokens << " tokens | " << format("%.1f", mb) << " of "
         << format("%.1f", total) << " MB | " << format("%.0f", p.documents / s)
         << " docs/s, " << format("%.2f", mb / s) << " MB/s";
  if (!tty || done)
    errs() << '\n';
}

int runPreprocess() {
  if (input.empty())
    return reportError(usage("--input FILE is required"));
  if (outputPrefix.empty())
    return reportError(usage("--output-prefix P is required"));
  if (workers < 1)
    return reportError(usage("--workers must be >= 1"));
  if (tokenizerKind == "char" && sys::path::extension(input) != ".txt")
    return reportError(
        usage("--tokenizer char takes its vocabulary from a .txt input's "
              "characters; use --tokenizer byte for " +
              input));
  auto tok = makeTokenizer(tokenizerKind, input);
  if (!tok)
    return reportError(usage(toString(tok.takeError())));
  megatron::PreprocessOptions o;
  o.input = input;
  o.jsonKey = jsonKey;
  o.outputPrefix = outputPrefix;
  o.workers = workers;
  if (appendEod) {
    o.eod = megatron::endOfDocumentId(*tok);
    if (!o.eod)
      return reportError(
          usage("--append-eod: the " + tok->name() +
                " tokenizer has no end-of-document token (its ids are all "
                "text); drop --append-eod or use a tokenizer with one"));
  }
  auto stats =
      megatron::preprocess(o, *tok, [](const megatron::PreprocessProgress &p) {
        report(p, p.bytes == p.totalBytes);
      });
  if (!stats)
    return reportError(usage(toString(stats.takeError())));
  std::string prefix = megatron::outputDatasetPrefix(o);
  outs() << "wrote " << prefix << ".bin and .idx: " << stats->documents
         << " documents, " << stats->sequences << " sequences, "
         << stats->tokens << " tokens (" << tok->name() << " tokenizer, vocab "
         << tok->vocabSize() << ")\n";
  return kExitOk;
}

VerbRegistration reg(preprocessCmd, runPreprocess);

} // namespace
} // namespace strata
