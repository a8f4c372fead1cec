//===- TokenizerBench.cpp - Encode throughput of strata's tokenizers ------===//
//
// Google Benchmark of TextTokenizer::encode on one thread: encode/NAME
// makes one call over the whole text, paragraphs/NAME one call per
// paragraph ("\n\n"-separated, as documents are encoded), as
// bench/tokenizer_speed.sh times Hugging Face's Tokenizer.encode on the same
// files:
//
//   STRATA_BENCH_TOKENIZERS="gpt2.json llama2.json" STRATA_BENCH_TEXT=t.txt \
//     build/bench/tokenizer_bench
//
// bytes_per_second is the encode speed in bytes of text per second.
//
//===----------------------------------------------------------------------===//
#include "runtime/text/TextTokenizer.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

namespace {

void encodeText(benchmark::State &state,
                std::shared_ptr<strata::text::TextTokenizer> tok,
                std::shared_ptr<std::string> text, bool paragraphs) {
  llvm::SmallVector<llvm::StringRef, 0> pieces;
  if (paragraphs)
    llvm::StringRef(*text).split(pieces, "\n\n");
  else
    pieces.push_back(*text);
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    for (llvm::StringRef piece : pieces)
      if (llvm::Error e = tok->encode(piece, ids)) {
        state.SkipWithError(llvm::toString(std::move(e)).c_str());
        return;
      }
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text->size()));
  state.counters["tokens"] = double(ids.size());
}

} // namespace

int main(int argc, char **argv) {
  const char *files = std::getenv("STRATA_BENCH_TOKENIZERS");
  const char *textPath = std::getenv("STRATA_BENCH_TEXT");
  if (!files || !textPath) {
    fprintf(stderr,
            "tokenizer_bench: error: set STRATA_BENCH_TOKENIZERS (paths, "
            "space-separated) and STRATA_BENCH_TEXT (a UTF-8 text)\n");
    return 1;
  }
  auto buf = llvm::MemoryBuffer::getFile(textPath);
  if (!buf) {
    fprintf(stderr, "tokenizer_bench: error: %s: cannot read\n", textPath);
    return 1;
  }
  auto text = std::make_shared<std::string>((*buf)->getBuffer().str());
  llvm::SmallVector<llvm::StringRef, 4> paths;
  llvm::StringRef(files).split(paths, ' ', -1, false);
  for (llvm::StringRef path : paths) {
    auto tok = strata::text::loadTokenizerFile(path);
    if (!tok) {
      fprintf(stderr, "%s\n", llvm::toString(tok.takeError()).c_str());
      return 1;
    }
    std::shared_ptr<strata::text::TextTokenizer> shared = std::move(*tok);
    for (bool paragraphs : {false, true})
      benchmark::RegisterBenchmark(((paragraphs ? "paragraphs/" : "encode/") +
                                    llvm::sys::path::filename(path))
                                       .str()
                                       .c_str(),
                                   encodeText, shared, text, paragraphs)
          ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
