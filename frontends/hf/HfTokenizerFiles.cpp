//===- HfTokenizerFiles.cpp - A checkpoint's tokenizer as HF files --------===//
//
// The SentencePiece pieces are read from the model's protobuf wire format
// with libprotobuf's schema-less UnknownFieldSet (ModelProto field 1 is the
// repeated SentencePiece, whose field 1 is the piece); the special ids come
// from libsentencepiece through runtime/text, which also checks the model.
//
//===----------------------------------------------------------------------===//
#include "frontends/hf/HfTokenizerFiles.h"

#include "runtime/text/TextTokenizer.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/stubs/strutil.h>
#include <google/protobuf/unknown_field_set.h>

using namespace llvm;

namespace strata {
namespace {

Error fail(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg);
}

/// The pieces of a serialized SentencePiece ModelProto, in id order.
Expected<std::vector<std::string>> readPieces(StringRef model, StringRef name) {
  using google::protobuf::UnknownField;
  using google::protobuf::UnknownFieldSet;
  UnknownFieldSet fields;
  if (!fields.ParseFromArray(model.data(), int(model.size())))
    return fail(name + ": not a SentencePiece model (bad protobuf)");
  std::vector<std::string> pieces;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField &f = fields.field(i);
    if (f.number() != 1)
      continue;
    UnknownFieldSet piece;
    if (f.type() != UnknownField::TYPE_LENGTH_DELIMITED ||
        !piece.ParseFromString(f.length_delimited()))
      return fail(name + ": not a SentencePiece model (piece " +
                  Twine(pieces.size()) + " is not a message)");
    std::string text;
    for (int k = 0; k < piece.field_count(); ++k)
      if (piece.field(k).number() == 1 &&
          piece.field(k).type() == UnknownField::TYPE_LENGTH_DELIMITED)
        text = piece.field(k).length_delimited();
    pieces.push_back(std::move(text));
  }
  return pieces;
}

} // namespace

Expected<json::Object>
makeLlamaTokenizerConfig(StringRef model, StringRef name,
                         std::vector<std::string> &warnings) {
  auto tok = text::loadTokenizer(model, name);
  if (!tok)
    return tok.takeError();
  if ((*tok)->format() != text::TextTokenizer::Format::SentencePiece)
    return fail(name + ": not a SentencePiece model");
  auto pieces = readPieces(model, name);
  if (!pieces)
    return pieces.takeError();
  if (int64_t(pieces->size()) != (*tok)->vocabSize())
    return fail(name + ": the model lists " + Twine(pieces->size()) +
                " pieces but SentencePiece reads " +
                Twine((*tok)->vocabSize()));
  const text::SpecialIds &s = (*tok)->specialIds();
  auto piece = [&](int32_t id) -> json::Value {
    if (id < 0)
      return nullptr;
    return (*pieces)[size_t(id)];
  };
  json::Object config{
      {"tokenizer_class", "LlamaTokenizer"},
      {"bos_token", piece(s.bos)},
      {"eos_token", piece(s.eos)},
      {"unk_token", piece(s.unk)},
      {"pad_token", piece(s.pad)},
      {"add_bos_token", s.bos >= 0},
      {"add_eos_token", false},
      // legacy: LlamaTokenizer calls SentencePiece's encode as it is.
      {"legacy", true},
      {"clean_up_tokenization_spaces", false},
      {"sp_model_kwargs", json::Object()},
  };
  // LlamaConverter (LlamaTokenizerFast from this file) hard-codes
  // <unk>, <s>, </s> as ids 0, 1, 2.
  if (s.unk != 0 || s.bos != 1 || s.eos != 2 || piece(s.unk) != "<unk>" ||
      piece(s.bos) != "<s>" || piece(s.eos) != "</s>")
    warnings.push_back(
        formatv("{0}: unk, bos, eos are ids {1}, {2}, {3}, not Llama's 0, 1, "
                "2 (<unk>, <s>, </s>) that LlamaTokenizerFast's conversion "
                "assumes; load it with use_fast=False",
                name, s.unk, s.bos, s.eos)
            .str());
  return config;
}

Expected<HfTokenizerFiles> makeHfTokenizerFiles(const json::Object &tok) {
  auto file = tok.getString("file");
  if (!file)
    return fail("the checkpoint's tokenizer has no \"file\" (only file "
                "tokenizers, tokenizer.json or a SentencePiece .model, "
                "have a Hugging Face form)");
  std::string name = sys::path::filename(*file).str();
  HfTokenizerFiles out;
  if (auto text = tok.getString("content")) {
    out.files.push_back({name, text->str()});
    return out;
  }
  auto b64 = tok.getString("content_base64");
  std::string model;
  if (!b64 ||
      !google::protobuf::Base64Unescape(
          google::protobuf::StringPiece(b64->data(), b64->size()), &model))
    return fail(name + ": the checkpoint's copy of the tokenizer is missing "
                       "or not base64 (\"content_base64\")");
  auto config = makeLlamaTokenizerConfig(model, name, out.warnings);
  if (!config)
    return config.takeError();
  out.files.push_back({"tokenizer.model", std::move(model)});
  out.files.push_back({"tokenizer_config.json",
                       formatv("{0:2}\n", json::Value(std::move(*config)))});
  return out;
}

} // namespace strata
