//===- TokenizerBench.cpp - Encode throughput of strata's tokenizers ------===//
//
// Google Benchmark of TextTokenizer::encode on one thread, one call per
// iteration over a whole text (as Hugging Face's Tokenizer.encode is timed
// by bench/tokenizer_speed.sh, which runs this with the same files):
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

void encodeText(benchmark::State &state, std::shared_ptr<strata::text::TextTokenizer> tok,
                std::shared_ptr<std::string> text) {
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    if (llvm::Error e = tok->encode(*text, ids)) {
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
    fprintf(stderr, "tokenizer_bench: error: set STRATA_BENCH_TOKENIZERS (paths, "
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
    benchmark::RegisterBenchmark(
        ("encode/" + llvm::sys::path::filename(path)).str().c_str(), encodeText,
        shared, text)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
