//===- TextTokenizerTest.cpp - strata's tokenizers against HF and spm -----===//
//
// make_references.py trains tokenizer.json files with Hugging Face
// tokenizers 0.15.2 and .model files with SentencePiece, and records the ids
// and decodings those libraries give for Tiny Shakespeare, a Unicode
// torture text and edge cases. strata must give the same ids
// and text, and decode(encode(x)) == x where the tokenizer promises it.
// make_references.py writes texts.cases.json and one NAME.cases.json per
// tokenizer.
//
//===----------------------------------------------------------------------===//
#include "runtime/text/TextTokenizer.h"
#include "runtime/data/Tokenizer.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace strata;
using llvm::json::Array;
using llvm::json::Object;

namespace {

std::string refPath(llvm::StringRef name) {
  return (llvm::Twine(STRATA_TEXT_REFS) + "/" + name).str();
}

/// The JSON file refs/NAME.cases.json that make_references.py writes.
llvm::json::Value readCases(llvm::StringRef name) {
  std::string path = refPath((name + ".cases.json").str());
  auto buf = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(bool(buf)) << path
                         << " is missing (the text.references test "
                            "writes it)";
  if (!buf)
    return nullptr;
  auto v = llvm::json::parse((*buf)->getBuffer());
  EXPECT_TRUE(bool(v)) << path << ": " << llvm::toString(v.takeError());
  return v ? std::move(*v) : llvm::json::Value(nullptr);
}

std::vector<int32_t> ids(const Array *a) {
  std::vector<int32_t> out;
  for (const llvm::json::Value &v : *a)
    out.push_back(int32_t(*v.getAsInteger()));
  return out;
}

/// "ids differ at 12 of 40: strata 5 vs 7" for the first difference.
std::string firstDifference(const std::vector<int32_t> &got,
                            const std::vector<int32_t> &want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i])
    ++i;
  if (i == got.size() && i == want.size())
    return "";
  auto at = [&](const std::vector<int32_t> &v) {
    return i < v.size() ? std::to_string(v[i]) : std::string("(end)");
  };
  return "ids differ at " + std::to_string(i) + " (strata has " +
         std::to_string(got.size()) + ", reference " +
         std::to_string(want.size()) + "): strata " + at(got) + ", reference " +
         at(want);
}

/// A printable excerpt of a case's text for failure messages.
std::string excerpt(llvm::StringRef text) {
  std::string s;
  llvm::raw_string_ostream(s)
      << llvm::json::Value(llvm::json::fixUTF8(text.take_front(60)));
  return s + (text.size() > 60 ? "..." : "");
}

/// Checks every case of reference `name` against strata's tokenizer.
void checkAgainstReference(llvm::StringRef name) {
  llvm::json::Value textsJson = readCases("texts"), refJson = readCases(name);
  const Array *texts = textsJson.getAsArray();
  const Object *ref = refJson.getAsObject();
  ASSERT_TRUE(texts && ref);
  auto tok = text::loadTokenizerFile(refPath(*ref->getString("file")));
  ASSERT_TRUE(bool(tok)) << llvm::toString(tok.takeError());
  llvm::StringRef roundtrip = *ref->getString("roundtrip");
  size_t checked = 0;
  for (const llvm::json::Value &c : *ref->getArray("cases")) {
    const Object &o = *c.getAsObject();
    if (const Array *random = o.getArray("random_ids")) {
      auto text = (*tok)->decode(ids(random), false);
      ASSERT_TRUE(bool(text)) << llvm::toString(text.takeError());
      EXPECT_EQ(*text, *o.getString("decoded")) << "decoding random ids";
      continue;
    }
    llvm::StringRef text = *(*texts)[*o.getInteger("text")].getAsString();
    std::vector<int32_t> plain;
    ASSERT_FALSE(bool((*tok)->encode(text, plain, false)));
    EXPECT_EQ(firstDifference(plain, ids(o.getArray("ids"))), "")
        << name.str() << ": " << excerpt(text);
    // Short texts also carry the ids with special tokens and decodings.
    if (const Array *withSpecial = o.getArray("ids_special")) {
      std::vector<int32_t> special;
      ASSERT_FALSE(bool((*tok)->encode(text, special, true)));
      EXPECT_EQ(firstDifference(special, ids(withSpecial)), "")
          << name.str() << " with special tokens: " << excerpt(text);
      auto decoded = (*tok)->decode(special, false);
      ASSERT_TRUE(bool(decoded)) << llvm::toString(decoded.takeError());
      EXPECT_EQ(*decoded, *o.getString("decoded"))
          << name.str() << ": " << excerpt(text);
      if (auto skip = o.getString("decoded_skip")) {
        auto d = (*tok)->decode(special, true);
        ASSERT_TRUE(bool(d));
        EXPECT_EQ(*d, *skip)
            << name.str() << " skipping specials: " << excerpt(text);
      }
    }
    bool hasSpecialText = text.contains("<s>") || text.contains("<unk>");
    if (roundtrip == "all" || (roundtrip == "plain" && !hasSpecialText)) {
      auto back = (*tok)->decode(plain, false);
      ASSERT_TRUE(bool(back));
      EXPECT_EQ(*back, text.str())
          << name.str() << " round trip: " << excerpt(text);
    }
    ++checked;
  }
  EXPECT_GT(checked, 20u);
}

TEST(HfTokenizerJson, Gpt2ByteLevel) { checkAgainstReference("gpt2"); }
TEST(HfTokenizerJson, Gpt2AddPrefixSpace) {
  checkAgainstReference("gpt2_prefix");
}
TEST(HfTokenizerJson, Llama3Regex) { checkAgainstReference("llama3"); }
TEST(HfTokenizerJson, Llama2ByteFallback) { checkAgainstReference("llama2"); }
TEST(HfTokenizerJson, Llama2Metaspace) {
  checkAgainstReference("llama2_metaspace");
}
TEST(HfTokenizerJson, Llama2UnkFused) { checkAgainstReference("llama2_unk"); }
// transformers' LlamaTokenizerFast conversion of a SentencePiece model.
TEST(HfTokenizerJson, Llama2Converted) {
  checkAgainstReference("llama2_converted");
}
TEST(SentencePieceModel, BpeByteFallback) { checkAgainstReference("sp_bpe"); }
TEST(SentencePieceModel, UnigramNfkc) { checkAgainstReference("sp_unigram"); }

TEST(TextTokenizer, SpecialIds) {
  auto gpt2 = text::loadTokenizerFile(refPath("gpt2.json"));
  auto llama3 = text::loadTokenizerFile(refPath("llama3.json"));
  auto llama2 = text::loadTokenizerFile(refPath("llama2.json"));
  auto sp = text::loadTokenizerFile(refPath("sp_bpe.model"));
  ASSERT_TRUE(gpt2 && llama3 && llama2 && sp);
  // GPT-2 adds nothing; its <|endoftext|> (id 0, the first special) ends.
  EXPECT_EQ((*gpt2)->specialIds().bos, -1);
  EXPECT_EQ((*gpt2)->specialIds().eos, 0);
  EXPECT_EQ((*llama3)->specialIds().bos, 0);
  EXPECT_EQ((*llama3)->specialIds().eos, 1);
  EXPECT_EQ((*llama2)->specialIds().unk, 0);
  EXPECT_EQ((*llama2)->specialIds().bos, 1);
  EXPECT_EQ((*llama2)->specialIds().eos, 2);
  // SentencePiece's defaults: unk 0, bos 1, eos 2, no pad.
  EXPECT_EQ((*sp)->specialIds().unk, 0);
  EXPECT_EQ((*sp)->specialIds().bos, 1);
  EXPECT_EQ((*sp)->specialIds().eos, 2);
  EXPECT_EQ((*sp)->specialIds().pad, -1);
}

// A file tokenizer travels inside a checkpoint: its JSON embeds the file.
TEST(Tokenizer, FileTokenizerJSONRoundTrip) {
  for (const char *file : {"llama3.json", "sp_bpe.model"}) {
    auto t = Tokenizer::fromFile(refPath(file));
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    EXPECT_EQ(t->kind(), Tokenizer::Kind::File);
    std::string text;
    llvm::raw_string_ostream(text) << t->toJSON();
    auto parsed = llvm::json::parse(text);
    ASSERT_TRUE(bool(parsed));
    auto back = Tokenizer::fromJSON(*parsed);
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    EXPECT_TRUE(*back == *t);
    EXPECT_EQ(back->fingerprint(), t->fingerprint());
    EXPECT_EQ(back->vocabSize(), t->vocabSize());
    std::vector<int32_t> a, b;
    ASSERT_FALSE(bool(t->encode("To be, or not to be", a)));
    ASSERT_FALSE(bool(back->encode("To be, or not to be", b)));
    EXPECT_EQ(a, b);
    EXPECT_TRUE(llvm::StringRef(t->name()).startswith("file-"));
  }
  auto gpt2 = Tokenizer::fromFile(refPath("gpt2.json"));
  auto llama3 = Tokenizer::fromFile(refPath("llama3.json"));
  ASSERT_TRUE(gpt2 && llama3);
  EXPECT_FALSE(*gpt2 == *llama3);
  EXPECT_NE(gpt2->name(), llama3->name());
}

} // namespace
