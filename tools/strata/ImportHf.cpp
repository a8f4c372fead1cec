//===- ImportHf.cpp - `strata import-hf DIR -o OUT` -----------------------===//
//
// Reads a Hugging Face model directory (config.json and model.safetensors or
// sharded safetensors with model.safetensors.index.json) and writes
// OUT/model.textproto (the strata spec) and OUT/checkpoint.bin (the
// parameters in f32, Megatron-padded, with the spec and the config keys
// export-hf restores in its meta; the tokenizer.json or tokenizer.model when
// the directory has one). OUT appears complete or not at all.
// frontends/hf/ does the mapping; docs/hf.md describes it.
//
//===----------------------------------------------------------------------===//
#include "frontends/hf/HfConfig.h"
#include "frontends/hf/HfWeights.h"
#include "runtime/data/Tokenizer.h"
#include "runtime/io/AtomicDir.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/Checkpoint.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/text_format.h>

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand
    importCmd("import-hf",
              "Convert a Hugging Face model directory (GPT-2, Llama) "
              "to a strata spec and checkpoint");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> inDir(cl::Positional, cl::Required,
                           cl::desc("<model directory with config.json>"),
                           cl::sub(importCmd), cl::cat(cat));
cl::opt<std::string> outDir("o", cl::Required,
                            cl::desc("Output directory (new or empty): "
                                     "model.textproto and checkpoint.bin"),
                            cl::value_desc("dir"), cl::sub(importCmd),
                            cl::cat(cat));
cl::opt<int64_t>
    vocabMultiple("vocab-multiple",
                  cl::desc("Pad the vocabulary to a multiple of this "
                           "(Megatron's make_vocab_size_divisible_by; "
                           "1: no padding)"),
                  cl::init(128), cl::sub(importCmd), cl::cat(cat));
cl::opt<bool>
    noTokenizer("no-tokenizer",
                cl::desc("Do not read tokenizer.json / tokenizer.model"),
                cl::sub(importCmd), cl::cat(cat));
cl::opt<int64_t>
    seqLen("seq-len",
           cl::desc("seq_len of the spec for models without a "
                    "position table (default: max_position_embeddings)"),
           cl::init(0), cl::sub(importCmd), cl::cat(cat));

Error fail(const Twine &msg) { return usageError(msg); }

std::string join(StringRef dir, StringRef name) {
  SmallString<256> p(dir);
  sys::path::append(p, name);
  return std::string(p);
}

/// DIR's tokenizer.json (else tokenizer.model), if it has one; a file strata
/// cannot read is an error (unless --no-tokenizer), not silently dropped.
Expected<std::optional<Tokenizer>> readTokenizer(int64_t vocab) {
  if (noTokenizer)
    return std::nullopt;
  for (const char *name : {"tokenizer.json", "tokenizer.model"}) {
    std::string path = join(inDir, name);
    if (!sys::fs::exists(path))
      continue;
    auto t = Tokenizer::fromFile(path);
    if (!t) // "<file>: error: what" reads "<file>: what" (reportError)
      return fail(toString(t.takeError()) +
                  " (pass --no-tokenizer to import the model without it)");
    if (t->vocabSize() > vocab)
      return fail(path + ": the tokenizer has " + Twine(t->vocabSize()) +
                  " tokens, more than config.json's vocab_size " +
                  Twine(vocab));
    return std::optional<Tokenizer>(std::move(*t));
  }
  return std::nullopt;
}

Error importModel() {
  if (vocabMultiple < 1 || seqLen < 0)
    return fail("--vocab-multiple must be >= 1 and --seq-len >= 0");
  std::string configPath = join(inDir, "config.json");
  auto buf = MemoryBuffer::getFile(configPath);
  if (!buf)
    return fail(configPath + ": cannot read (" + buf.getError().message() +
                "; a Hugging Face model directory holds config.json)");
  auto json = json::parse((*buf)->getBuffer());
  if (!json)
    return fail(configPath + ": malformed JSON: " + toString(json.takeError()));
  if (!json->getAsObject())
    return fail(configPath + ": expected a JSON object");
  HfImportOptions options;
  options.vocabMultiple = vocabMultiple;
  options.seqLen = seqLen;
  auto hf = parseHfConfig(*json->getAsObject(), configPath, options);
  if (!hf)
    return fail(toString(hf.takeError()));
  for (const std::string &w : hf->warnings)
    reportWarning(configPath + ": " + w);

  auto model = SafetensorsModel::open(inDir);
  if (!model)
    return fail(toString(model.takeError()));
  ModelConfig cfg = resolveModelSpec(hf->spec);
  auto weights = importHfWeights(cfg, *model);
  if (!weights)
    return fail(toString(weights.takeError()));
  auto tokenizer = readTokenizer(cfg.vocab);
  if (!tokenizer)
    return tokenizer.takeError();

  std::string specText;
  google::protobuf::TextFormat::PrintToString(hf->spec, &specText);
  Checkpoint ckpt;
  ckpt.meta["step"] = 0;
  ckpt.meta["spec"] = specText;
  ckpt.meta["hf"] = std::move(hf->passthrough);
  if (*tokenizer)
    ckpt.meta["tokenizer"] = (*tokenizer)->toJSON();
  ckpt.tensors = std::move(*weights);
  if (Error e = writeDirectoryAtomically(outDir, [&](StringRef dir) -> Error {
        if (Error e = writeFileAtomically(
                join(dir, "model.textproto"), [&](raw_ostream &os) {
                  os << "# Imported by `strata import-hf` from " << inDir
                     << "\n"
                     << specText;
                  return Error::success();
                }))
          return e;
        return saveCheckpoint(join(dir, "checkpoint.bin"), ckpt);
      }))
    return fail(toString(std::move(e)));
  outs() << "imported " << cfg.familyName() << " (" << cfg.layers
         << " layers, hidden " << cfg.hidden << ", vocab " << cfg.vocab
         << " padded to " << cfg.paddedVocab << ", " << ckpt.tensors.size()
         << " tensors"
         << (*tokenizer ? ", tokenizer " + (*tokenizer)->name().str()
                        : std::string())
         << ") into " << outDir << "\n";
  return Error::success();
}

int runImport() {
  if (Error e = importModel())
    return reportError(std::move(e));
  return kExitOk;
}

VerbRegistration reg(importCmd, runImport);

} // namespace
} // namespace strata
