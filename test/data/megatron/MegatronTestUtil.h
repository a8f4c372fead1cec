//===- MegatronTestUtil.h - Temp dirs, the Python reference, random corpora
//-===//
#pragma once

#include "runtime/data/megatron/IndexedDataset.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace strata::megatron::test {

/// A fresh temporary directory, removed with the object.
class TempDir {
public:
  TempDir() { llvm::sys::fs::createUniqueDirectory("strata-megatron", path_); }
  ~TempDir() { llvm::sys::fs::remove_directories(path_); }
  std::string path(llvm::StringRef name) const {
    return (path_ + "/" + name).str();
  }
  std::string write(llvm::StringRef name, llvm::StringRef content) const {
    std::string p = path(name);
    std::error_code ec;
    llvm::raw_fd_ostream os(p, ec);
    EXPECT_FALSE(ec) << p;
    os << content;
    return p;
  }

private:
  llvm::SmallString<128> path_;
};

inline std::string slurp(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, false, false);
  return buf ? (*buf)->getBuffer().str() : std::string();
}

/// Runs test/data/megatron/megatron_reference.py with `args` under `python`
/// and parses the JSON it prints. The reference needs numpy (and for
/// hf-encode, tokenizers): without them the test fails.
inline llvm::json::Value
runReference(const std::vector<std::string> &args,
             llvm::StringRef python = STRATA_TEST_PYTHON) {
  llvm::SmallString<128> out, err;
  llvm::sys::fs::createTemporaryFile("megatron-ref", "json", out);
  llvm::sys::fs::createTemporaryFile("megatron-ref", "err", err);
  std::vector<llvm::StringRef> argv = {python, MEGATRON_REFERENCE};
  for (const std::string &a : args)
    argv.push_back(a);
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::None, out.str(),
                                                 err.str()};
  std::string msg;
  int rc = llvm::sys::ExecuteAndWait(python, argv, llvm::None, redirects, 300,
                                     0, &msg);
  std::string text = slurp(out), errText = slurp(err);
  llvm::sys::fs::remove(out);
  llvm::sys::fs::remove(err);
  EXPECT_EQ(rc, 0) << msg << errText;
  auto v = llvm::json::parse(text);
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError()) << "\n" << errText;
    return nullptr;
  }
  return std::move(*v);
}

/// The integers of a JSON array.
inline std::vector<int64_t> ints(const llvm::json::Value *v) {
  std::vector<int64_t> r;
  if (!v || !v->getAsArray()) {
    ADD_FAILURE() << "expected a JSON array";
    return r;
  }
  for (const llvm::json::Value &x : *v->getAsArray())
    r.push_back(*x.getAsInteger());
  return r;
}

/// Documents of sequences of random ids below `vocab`, some empty.
using Corpus = std::vector<std::vector<std::vector<int32_t>>>;
inline Corpus randomCorpus(unsigned seed, int docs, int maxLen, int32_t vocab) {
  std::mt19937 rng(seed);
  Corpus c(docs);
  for (auto &doc : c) {
    int seqs = rng() % 7 == 0 ? 0 : 1 + int(rng() % 3);
    for (int s = 0; s < seqs; ++s) {
      std::vector<int32_t> seq(1 + rng() % maxLen);
      for (int32_t &t : seq)
        t = int32_t(rng() % uint32_t(vocab));
      doc.push_back(seq);
    }
  }
  return c;
}

/// Writes `c` with strata's writer.
inline void writeCorpus(llvm::StringRef prefix, DType dtype, const Corpus &c) {
  llvm::Error e = writeIndexedDataset(
      prefix, dtype, [&](IndexedDatasetBuilder &b) -> llvm::Error {
        for (const auto &doc : c) {
          std::vector<int32_t> tokens, lengths;
          for (const auto &seq : doc) {
            tokens.insert(tokens.end(), seq.begin(), seq.end());
            lengths.push_back(int32_t(seq.size()));
          }
          if (auto err = b.addDocument(tokens, lengths))
            return err;
        }
        return llvm::Error::success();
      });
  ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
}

} // namespace strata::megatron::test
