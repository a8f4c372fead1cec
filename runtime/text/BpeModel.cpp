//===- BpeModel.cpp - Byte-pair encoding of one pre-tokenized word --------===//
#include "runtime/text/BpeModel.h"

#include "runtime/text/Utf8.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <queue>

namespace strata::text {

static uint64_t pairKey(int32_t a, int32_t b) {
  return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
}

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Expected<BpeModel>
BpeModel::create(llvm::StringMap<int32_t> vocab,
                 llvm::ArrayRef<std::pair<std::string, std::string>> merges,
                 Options options) {
  BpeModel m;
  int32_t maxId = -1;
  for (const auto &e : vocab) {
    if (e.second < 0)
      return fail("model.vocab: token \"" + e.first() + "\" has negative id " +
                  llvm::Twine(e.second));
    maxId = std::max(maxId, e.second);
  }
  m.tokens_.resize(size_t(maxId + 1));
  m.hasToken_.resize(size_t(maxId + 1));
  for (const auto &e : vocab) {
    m.tokens_[e.second] = e.first().str();
    m.hasToken_[e.second] = true;
  }
  m.vocab_ = std::move(vocab);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto &[a, b] = merges[rank];
    auto ia = m.vocab_.find(a), ib = m.vocab_.find(b),
         ic = m.vocab_.find(a + b);
    for (auto [it, tok] : {std::pair{ia, a}, {ib, b}, {ic, a + b}})
      if (it == m.vocab_.end())
        return fail("model.merges[" + llvm::Twine(rank) + "]: token \"" + tok +
                    "\" is not in model.vocab");
    // A pair listed twice keeps its last rank, as tokenizers' HashMap does.
    m.merges_[pairKey(ia->second, ib->second)] = {int32_t(rank), ic->second};
  }
  if (options.unkToken) {
    auto it = m.vocab_.find(*options.unkToken);
    if (it == m.vocab_.end())
      return fail("model.unk_token \"" + *options.unkToken +
                  "\" is not in model.vocab");
    m.unk_ = it->second;
  }
  for (unsigned b = 0; b < 256; ++b) {
    std::string name;
    llvm::raw_string_ostream(name)
        << "<0x" << llvm::format_hex_no_prefix(b, 2, true) << ">";
    auto it = m.vocab_.find(name);
    m.byteIds_[b] = it == m.vocab_.end() ? -1 : it->second;
  }
  m.smallCharIds_.assign(2048, -1);
  for (uint32_t cp = 0; cp < 2048; ++cp) {
    std::string s;
    appendUtf8(cp, s);
    auto it = m.vocab_.find(s);
    if (it != m.vocab_.end())
      m.smallCharIds_[cp] = it->second;
  }
  m.options_ = std::move(options);
  return m;
}

int32_t BpeModel::charId(llvm::StringRef ch, uint32_t cp) const {
  if (cp < smallCharIds_.size())
    return smallCharIds_[cp];
  auto it = vocab_.find(ch);
  return it == vocab_.end() ? -1 : it->second;
}

namespace {
/// A symbol of a word being merged: a doubly linked list in a vector.
struct Symbol {
  int32_t id;
  int32_t prev, next;
  uint32_t len; // bytes; 0 once merged into its left neighbour
};
/// A candidate merge of the symbol at `pos` with its right neighbour.
struct Candidate {
  int32_t rank, pos, newId;
  bool operator>(const Candidate &o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};
} // namespace

void BpeModel::encodeWord(llvm::StringRef word,
                          std::vector<int32_t> &out) const {
  if (options_.ignoreMerges)
    if (auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  llvm::SmallVector<Symbol, 32> syms;
  auto add = [&](int32_t id, uint32_t len) {
    int32_t n = int32_t(syms.size());
    if (n)
      syms.back().next = n;
    syms.push_back({id, n - 1, -1, len});
  };
  // A pending unk: tokenizers adds it when the next known character comes
  // (byte-fallback characters do not flush it).
  int32_t unkLen = -1;
  for (size_t pos = 0; pos < word.size();) {
    size_t begin = pos;
    uint32_t cp = nextCodePoint(word, pos);
    llvm::StringRef ch = word.slice(begin, pos);
    if (int32_t id = charId(ch, cp); id >= 0) {
      if (unkLen >= 0)
        add(unk_, uint32_t(unkLen)), unkLen = -1;
      add(id, uint32_t(ch.size()));
      continue;
    }
    if (options_.byteFallback &&
        llvm::all_of(ch, [&](char c) { return byteIds_[uint8_t(c)] >= 0; })) {
      for (char c : ch)
        add(byteIds_[uint8_t(c)], 1);
      continue;
    }
    if (unk_ < 0)
      continue; // no unk token: the character is dropped
    if (unkLen >= 0 && options_.fuseUnk) {
      unkLen += int32_t(ch.size());
      continue;
    }
    if (unkLen >= 0)
      add(unk_, uint32_t(unkLen));
    unkLen = int32_t(ch.size());
  }
  if (unkLen >= 0)
    add(unk_, uint32_t(unkLen));

  std::priority_queue<Candidate, llvm::SmallVector<Candidate, 32>,
                      std::greater<Candidate>>
      queue;
  auto consider = [&](int32_t pos) {
    auto it = merges_.find(pairKey(syms[pos].id, syms[syms[pos].next].id));
    if (it != merges_.end())
      queue.push({it->second.rank, pos, it->second.newId});
  };
  for (int32_t i = 0; i + 1 < int32_t(syms.size()); ++i)
    consider(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol &left = syms[top.pos];
    if (left.len == 0 || left.next < 0)
      continue;
    Symbol right = syms[left.next];
    // Skip entries made stale by an earlier merge.
    auto it = merges_.find(pairKey(left.id, right.id));
    if (it == merges_.end() || it->second.newId != top.newId)
      continue;
    syms[left.next].len = 0;
    left.id = top.newId;
    left.len += right.len;
    left.next = right.next;
    if (right.next >= 0)
      syms[right.next].prev = top.pos;
    if (left.prev >= 0)
      consider(left.prev);
    if (left.next >= 0)
      consider(top.pos);
  }
  for (const Symbol &s : syms)
    if (s.len)
      out.push_back(s.id);
}

std::optional<int32_t> BpeModel::tokenToId(llvm::StringRef token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end())
    return std::nullopt;
  return it->second;
}

const std::string *BpeModel::idToToken(int32_t id) const {
  if (id < 0 || id >= size() || !hasToken_[id])
    return nullptr;
  return &tokens_[id];
}

} // namespace strata::text
