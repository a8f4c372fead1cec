//===- Tokenizer.cpp - `strata tokenizer train|encode|decode` -------------===//
//
// Trains, runs and inverts subword tokenizers (runtime/text):
//
//   strata tokenizer train --vocab-size 4096 -o tokenizer.json a.txt b.txt
//   strata tokenizer encode --tokenizer tokenizer.json [FILE]   # ids on stdout
//   strata tokenizer decode --tokenizer tokenizer.json [IDS...] # text
//
// train writes a GPT-2 style byte-level BPE tokenizer.json (BpeTrainer.h)
// that Hugging Face tokenizers loads. encode reads FILE (or stdin) as one
// text and prints its ids on one line; decode reads ids from its arguments
// (or stdin) and prints the text. --tokenizer takes char (needs the text),
// byte, or a tokenizer.json / SentencePiece .model path.
//
//===----------------------------------------------------------------------===//
#include "runtime/data/TokenDataset.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/text/BpeTrainer.h"
#include "runtime/text/TextTokenizer.h"
#include "tools/strata/Verb.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand
    tokenizerCmd("tokenizer",
                 "Train (byte-level BPE), encode or decode with a tokenizer");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> action(cl::Positional, cl::Required,
                            cl::desc("<train | encode | decode>"),
                            cl::sub(tokenizerCmd), cl::cat(cat));
cl::list<std::string> args(cl::Positional,
                           cl::desc("<files (train, encode) | ids (decode)>"),
                           cl::sub(tokenizerCmd), cl::cat(cat));
cl::opt<int64_t>
    vocabSize("vocab-size",
              cl::desc("train: tokens in the vocabulary, specials included"),
              cl::init(0), cl::sub(tokenizerCmd), cl::cat(cat));
cl::opt<std::string> output("o", cl::desc("train: the tokenizer.json to write"),
                            cl::value_desc("file"), cl::sub(tokenizerCmd),
                            cl::cat(cat));
cl::list<std::string>
    specials("special",
             cl::desc("train: a special token, ids from 0 in order "
                      "(default: <|endoftext|>)"),
             cl::sub(tokenizerCmd), cl::cat(cat));
cl::opt<std::string> tokenizerPath(
    "tokenizer",
    cl::desc("encode/decode: byte or a tokenizer.json / .model path"),
    cl::sub(tokenizerCmd), cl::cat(cat));
cl::opt<bool> addSpecial(
    "add-special-tokens",
    cl::desc("encode: add the tokenizer's special tokens (e.g. BOS), "
             "as Hugging Face's encode() does by default"),
    cl::sub(tokenizerCmd), cl::cat(cat));
cl::opt<bool> skipSpecial("skip-special-tokens",
                          cl::desc("decode: leave special tokens out"),
                          cl::sub(tokenizerCmd), cl::cat(cat));

Error usage(const Twine &msg) { return usageError(msg); }

/// The bytes of `path`, or of stdin for "-".
Expected<std::unique_ptr<MemoryBuffer>> readInput(StringRef path) {
  auto buf = path == "-"
                 ? MemoryBuffer::getSTDIN()
                 : MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return usage(path + ": cannot read (" + buf.getError().message() + ")");
  return std::move(*buf);
}

Error train() {
  if (vocabSize <= 0)
    return usage("train needs --vocab-size N (tokens in the vocabulary, "
                 "256 bytes and the special tokens included)");
  if (output.empty())
    return usage("train needs -o tokenizer.json (the file to write)");
  if (args.empty())
    return usage("train needs text files to learn from");
  std::vector<std::string> sp(specials.begin(), specials.end());
  if (sp.empty())
    sp.push_back("<|endoftext|>");
  text::BpeTrainer trainer(vocabSize, sp);
  for (const std::string &file : args) {
    auto buf = readInput(file);
    if (!buf)
      return buf.takeError();
    if (Error e = trainer.addText((*buf)->getBuffer()))
      return usage(file + ": " + toString(std::move(e)));
  }
  auto json = trainer.train();
  if (!json)
    return usage(toString(json.takeError()));
  return writeFileAtomically(output, [&](raw_ostream &os) {
    os << *json;
    return Error::success();
  });
}

Expected<Tokenizer> loadTokenizer() {
  if (tokenizerPath.empty())
    return usage("--tokenizer is required (byte, or a tokenizer.json or "
                 "SentencePiece .model path)");
  if (tokenizerPath == "char")
    return usage("--tokenizer char needs the training text; give byte or a "
                 "tokenizer file");
  return makeTokenizer(tokenizerPath, "");
}

Error encode() {
  auto tok = loadTokenizer();
  if (!tok)
    return tok.takeError();
  if (args.size() > 1)
    return usage("encode reads one text (a file, or stdin)");
  auto buf = readInput(args.empty() ? "-" : StringRef(args[0]));
  if (!buf)
    return buf.takeError();
  std::vector<int32_t> ids;
  Error e =
      tok->textTokenizer()
          ? tok->textTokenizer()->encode((*buf)->getBuffer(), ids, addSpecial)
          : tok->encode((*buf)->getBuffer(), ids);
  if (e)
    return usage(toString(std::move(e)));
  for (size_t i = 0; i < ids.size(); ++i)
    outs() << (i ? " " : "") << ids[i];
  outs() << '\n';
  return Error::success();
}

Error decode() {
  auto tok = loadTokenizer();
  if (!tok)
    return tok.takeError();
  std::string idText = join(args, " ");
  if (args.empty()) {
    auto buf = readInput("-");
    if (!buf)
      return buf.takeError();
    idText = (*buf)->getBuffer().str();
  }
  std::vector<int32_t> ids;
  for (StringRef rest = idText; !(rest = rest.ltrim()).empty();) {
    StringRef word = rest.take_until([](char c) { return isSpace(c); });
    rest = rest.drop_front(word.size());
    int32_t id;
    if (word.getAsInteger(10, id))
      return usage("'" + word + "' is not a token id (decode takes integers)");
    ids.push_back(id);
  }
  auto out = tok->textTokenizer()
                 ? tok->textTokenizer()->decode(ids, skipSpecial)
                 : tok->decode(ids);
  if (!out)
    return usage(toString(out.takeError()));
  outs() << *out;
  return Error::success();
}

int runTokenizer() {
  Error e = action == "train"    ? train()
            : action == "encode" ? encode()
            : action == "decode"
                ? decode()
                : usage("unknown action '" + action +
                        "' (expected train, encode or decode)");
  if (e)
    return reportError(std::move(e));
  return kExitOk;
}

VerbRegistration reg(tokenizerCmd, runTokenizer);

} // namespace
} // namespace strata
