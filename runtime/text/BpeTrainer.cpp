//===- BpeTrainer.cpp - Training byte-level BPE tokenizers ----------------===//
#include "runtime/text/BpeTrainer.h"

#include "runtime/text/ByteLevel.h"
#include "runtime/text/SplitRegex.h"
#include "runtime/text/Utf8.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <queue>

namespace strata::text {

BpeTrainer::BpeTrainer(int64_t vocabSize, std::vector<std::string> specials)
    : vocabSize_(vocabSize), specials_(std::move(specials)) {}

llvm::Error BpeTrainer::addText(llvm::StringRef text) {
  if (llvm::Error e = checkUtf8(text))
    return e;
  static const std::unique_ptr<SplitRegex> gpt2 =
      llvm::cantFail(SplitRegex::create(kGpt2Pattern));
  while (!text.empty()) {
    size_t eol = text.find('\n');
    llvm::StringRef line =
        text.take_front(eol == llvm::StringRef::npos ? eol : eol + 1);
    text = text.drop_front(line.size());
    gpt2->split(line, [&](llvm::StringRef word, bool) { ++wordCounts_[word]; });
  }
  return llvm::Error::success();
}

namespace {
using Pair = uint64_t; // left id << 32 | right id: orders as (left, right)
Pair makePair(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }
uint32_t left(Pair p) { return uint32_t(p >> 32); }
uint32_t right(Pair p) { return uint32_t(p); }

struct Candidate {
  int64_t count;
  Pair pair;
  /// Highest count first, then the smallest pair.
  bool operator<(const Candidate &o) const {
    return count != o.count ? count < o.count : pair > o.pair;
  }
};

struct Word {
  llvm::SmallVector<uint32_t, 8> ids;
  int64_t count;
};
} // namespace

llvm::Expected<std::string> BpeTrainer::train() const {
  int64_t base = int64_t(specials_.size()) + 256;
  if (vocabSize_ < base)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--vocab-size %lld is below the %lld special and byte tokens",
        (long long)vocabSize_, (long long)base);
  // Tokens: specials, then the byte characters in code point order.
  std::vector<std::string> tokens(specials_);
  llvm::StringMap<uint32_t> ids;
  for (uint32_t i = 0; i < specials_.size(); ++i)
    ids[specials_[i]] = i;
  std::vector<uint8_t> bytes(256);
  for (unsigned b = 0; b < 256; ++b)
    bytes[b] = uint8_t(b);
  llvm::sort(bytes, [](uint8_t a, uint8_t b) {
    return byteToCodePoint(a) < byteToCodePoint(b);
  });
  uint32_t byteId[256];
  for (uint8_t b : bytes) {
    std::string s;
    appendUtf8(byteToCodePoint(b), s);
    byteId[b] = uint32_t(tokens.size());
    ids.try_emplace(s, byteId[b]);
    tokens.push_back(s);
  }

  // Words in a fixed order, so that nothing depends on hash order.
  std::vector<llvm::StringRef> keys;
  for (const auto &e : wordCounts_)
    keys.push_back(e.first());
  llvm::sort(keys);
  std::vector<Word> words;
  llvm::DenseMap<Pair, int64_t> counts;
  llvm::DenseMap<Pair, std::vector<uint32_t>> where;
  for (llvm::StringRef k : keys) {
    Word w{{}, int64_t(wordCounts_.lookup(k))};
    for (char c : k)
      w.ids.push_back(byteId[uint8_t(c)]);
    for (size_t i = 0; i + 1 < w.ids.size(); ++i) {
      Pair p = makePair(w.ids[i], w.ids[i + 1]);
      counts[p] += w.count;
      auto &list = where[p];
      if (list.empty() || list.back() != words.size())
        list.push_back(uint32_t(words.size()));
    }
    words.push_back(std::move(w));
  }
  std::priority_queue<Candidate> queue;
  for (const auto &[p, c] : counts)
    queue.push({c, p});

  std::vector<Pair> merges;
  std::vector<uint32_t> seen(words.size(), UINT32_MAX); // step a word merged at
  while (int64_t(ids.size()) < vocabSize_ && !queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    int64_t now = counts.lookup(top.pair);
    if (now != top.count) { // stale: requeue with the current count
      if (now > 0)
        queue.push({now, top.pair});
      continue;
    }
    if (now < 1)
      break;
    uint32_t a = left(top.pair), b = right(top.pair);
    std::string merged = tokens[a] + tokens[b];
    auto [it, fresh] = ids.try_emplace(merged, uint32_t(tokens.size()));
    if (fresh)
      tokens.push_back(merged);
    uint32_t id = it->second;
    merges.push_back(top.pair);
    llvm::DenseMap<Pair, int64_t> grown; // pairs made by this merge
    std::vector<uint32_t> list = std::move(where[top.pair]);
    where.erase(top.pair);
    for (uint32_t wi : list) {
      if (seen[wi] == merges.size())
        continue;
      seen[wi] = uint32_t(merges.size());
      Word &w = words[wi];
      auto &s = w.ids;
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        if (s[i] != a || s[i + 1] != b)
          continue;
        if (i > 0) {
          counts[makePair(s[i - 1], a)] -= w.count;
          grown[makePair(s[i - 1], id)] += w.count;
          where[makePair(s[i - 1], id)].push_back(wi);
        }
        if (i + 2 < s.size()) {
          counts[makePair(b, s[i + 2])] -= w.count;
          grown[makePair(id, s[i + 2])] += w.count;
          where[makePair(id, s[i + 2])].push_back(wi);
        }
        s[i] = id;
        s.erase(s.begin() + i + 1);
      }
    }
    counts[top.pair] = 0;
    for (const auto &[p, c] : grown) {
      counts[p] += c;
      if (counts[p] > 0)
        queue.push({counts[p], p});
    }
  }

  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::json::OStream j(os, 2);
  auto byteLevel = [&](bool addPrefixSpace, bool trimOffsets) {
    j.object([&] {
      j.attribute("type", "ByteLevel");
      j.attribute("add_prefix_space", addPrefixSpace);
      j.attribute("trim_offsets", trimOffsets);
      j.attribute("use_regex", true);
    });
  };
  j.object([&] {
    j.attribute("version", "1.0");
    j.attribute("truncation", nullptr);
    j.attribute("padding", nullptr);
    j.attributeArray("added_tokens", [&] {
      for (size_t i = 0; i < specials_.size(); ++i)
        j.object([&] {
          j.attribute("id", int64_t(i));
          j.attribute("content", specials_[i]);
          j.attribute("single_word", false);
          j.attribute("lstrip", false);
          j.attribute("rstrip", false);
          j.attribute("normalized", false);
          j.attribute("special", true);
        });
    });
    j.attribute("normalizer", nullptr);
    j.attributeBegin("pre_tokenizer");
    byteLevel(false, true);
    j.attributeEnd();
    j.attributeBegin("post_processor");
    byteLevel(true, false);
    j.attributeEnd();
    j.attributeBegin("decoder");
    byteLevel(true, true);
    j.attributeEnd();
    j.attributeObject("model", [&] {
      j.attribute("type", "BPE");
      j.attribute("dropout", nullptr);
      j.attribute("unk_token", nullptr);
      j.attribute("continuing_subword_prefix", nullptr);
      j.attribute("end_of_word_suffix", nullptr);
      j.attribute("fuse_unk", false);
      j.attribute("byte_fallback", false);
      j.attributeObject("vocab", [&] {
        for (size_t i = 0; i < tokens.size(); ++i)
          j.attribute(tokens[i], int64_t(i));
      });
      j.attributeArray("merges", [&] {
        for (Pair p : merges)
          j.value(tokens[left(p)] + " " + tokens[right(p)]);
      });
    });
  });
  os << '\n';
  return out;
}

} // namespace strata::text
