//===- ExportHf.cpp - `strata export-hf CHECKPOINT -o DIR` ----------------===//
//
// Writes a checkpoint's model as a Hugging Face model directory that
// transformers' from_pretrained loads: config.json and model.safetensors
// (f32; sharded with model.safetensors.index.json beyond --max-shard-size).
// Megatron's vocab padding is stripped; a tied head stays tied (no
// lm_head.weight); the embedded tokenizer is written as transformers'
// AutoTokenizer loads it (frontends/hf/HfTokenizerFiles.h). DIR appears
// complete or not at all.
//
//===----------------------------------------------------------------------===//
#include "frontends/hf/HfConfig.h"
#include "frontends/hf/HfTokenizerFiles.h"
#include "frontends/hf/HfWeights.h"
#include "runtime/io/AtomicDir.h"
#include "runtime/io/AtomicFile.h"
#include "tools/strata/ModelCheckpoint.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand
    exportCmd("export-hf",
              "Write a checkpoint as a Hugging Face model directory");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> ckptPath(cl::Positional, cl::Required,
                              cl::desc("<checkpoint.bin>"), cl::sub(exportCmd),
                              cl::cat(cat));
cl::opt<std::string> outDir("o", cl::Required,
                            cl::desc("Output directory (new or empty)"),
                            cl::value_desc("dir"), cl::sub(exportCmd),
                            cl::cat(cat));
cl::opt<std::string>
    maxShardSize("max-shard-size",
                 cl::desc("Largest safetensors shard, as save_pretrained's "
                          "max_shard_size: bytes with an optional KB, MB "
                          "or GB suffix (powers of 1000)"),
                 cl::init("5GB"), cl::sub(exportCmd), cl::cat(cat));

Error fail(const Twine &msg) { return usageError(msg); }

std::string join(StringRef dir, StringRef name) {
  SmallString<256> p(dir);
  sys::path::append(p, name);
  return std::string(p);
}

/// "5GB" -> 5e9; 0 if malformed.
uint64_t parseSize(StringRef s) {
  uint64_t unit = 1;
  for (auto [suffix, u] :
       {std::pair{"KB", 1000ull}, {"MB", 1000000ull}, {"GB", 1000000000ull}})
    if (s.consume_back(suffix))
      unit = u;
  uint64_t n;
  if (s.getAsInteger(10, n) || n == 0 || n > UINT64_MAX / unit)
    return 0;
  return n * unit;
}

Error exportModel() {
  uint64_t maxShard = parseSize(maxShardSize);
  if (!maxShard)
    return fail("--max-shard-size: '" + maxShardSize +
                "' is not a positive size (e.g. 5GB, 200MB, 100000)");
  auto m = loadModelCheckpoint(ckptPath);
  if (!m)
    return fail(toString(m.takeError()));
  const ModelConfig &c = (*m)->config;
  auto weights = exportHfWeights(c, (*m)->params);
  if (!weights)
    return fail(ckptPath + ": " + toString(weights.takeError()));
  json::Object passthrough;
  if (const json::Object *hf = (*m)->ckpt.meta.getObject("hf"))
    passthrough = *hf;
  if (!c.isGPT() && c.dropout > 0) {
    std::string msg;
    raw_string_ostream(msg)
        << ckptPath << ": dropout " << c.dropout
        << " is not expressible in a LlamaConfig (it has no residual dropout); "
           "the exported model is the same without it";
    reportWarning(msg);
  }
  auto hfConfig = makeHfConfig(c, passthrough);
  if (!hfConfig)
    return fail(ckptPath + ": " + toString(hfConfig.takeError()));
  json::Value config(std::move(*hfConfig));
  // The embedded tokenizer: a tokenizer.json as imported, a SentencePiece
  // model as tokenizer.model and tokenizer_config.json.
  HfTokenizerFiles tokFiles;
  // (loadModelCheckpoint has read it: (*m)->tokenizer is set.)
  if (const json::Object *tok = (*m)->ckpt.meta.getObject("tokenizer")) {
    if (tok->getString("kind") != StringRef("file"))
      tokFiles.warnings.push_back(
          formatv("the {0} tokenizer has no Hugging Face form; {1} gets no "
                  "tokenizer files",
                  (*m)->tokenizer->name(), outDir)
              .str());
    else if (auto files = makeHfTokenizerFiles(*tok))
      tokFiles = std::move(*files);
    else
      return fail(ckptPath + ": " + toString(files.takeError()));
  }
  for (const std::string &w : tokFiles.warnings)
    reportWarning(ckptPath + ": " + w);
  if (Error e = writeDirectoryAtomically(outDir, [&](StringRef dir) -> Error {
        if (Error e = writeSafetensorsModel(dir, *weights, maxShard))
          return e;
        for (const HfTokenizerFile &f : tokFiles.files)
          if (Error e =
                  writeFileAtomically(join(dir, f.name), [&](raw_ostream &os) {
                    os << f.content;
                    return Error::success();
                  }))
            return e;
        return writeFileAtomically(join(dir, "config.json"),
                                   [&](raw_ostream &os) {
                                     os << formatv("{0:2}", config) << "\n";
                                     return Error::success();
                                   });
      }))
    return fail(toString(std::move(e)));
  outs() << "exported " << c.familyName() << " (" << weights->size()
         << " tensors, vocab " << c.vocab << ") to " << outDir << "\n";
  return Error::success();
}

int runExport() {
  if (Error e = exportModel())
    return reportError(std::move(e));
  return kExitOk;
}

VerbRegistration reg(exportCmd, runExport);

} // namespace
} // namespace strata
