//===- Generate.cpp - `strata generate CHECKPOINT --prompt TEXT` -----------===//
//
// Samples text from a checkpoint written by `strata train`: the checkpoint
// carries the model spec and the tokenizer, so no data file is needed.
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelSpec.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/io/Checkpoint.h"
#include "runtime/train/TextGenerator.h"
#include "tools/strata/Verb.h"

#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand generateCmd("generate", "Sample text from a training checkpoint");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> ckptPath(cl::Positional, cl::Required,
                              cl::desc("<checkpoint.bin>"), cl::sub(generateCmd), cl::cat(cat));
cl::opt<std::string> prompt("prompt", cl::desc("Text to continue (default: start of text)"),
                            cl::sub(generateCmd), cl::cat(cat));
cl::opt<int64_t> numTokens("tokens", cl::desc("Tokens to generate"), cl::init(300),
                           cl::sub(generateCmd), cl::cat(cat));
cl::opt<double> temperature("temperature", cl::desc("Softmax temperature (> 0)"), cl::init(0.8),
                            cl::sub(generateCmd), cl::cat(cat));
cl::opt<int64_t> topK("top-k", cl::desc("Sample among the k most likely tokens (0: all)"),
                      cl::init(40), cl::sub(generateCmd), cl::cat(cat));
cl::opt<int64_t> seed("seed", cl::desc("Sampling seed"), cl::init(1337), cl::sub(generateCmd),
                      cl::cat(cat));

Error bad(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), ckptPath + ": error: " + msg);
}

int runGenerate() {
  if (numTokens < 0 || topK < 0 || temperature <= 0)
    return reportError(createStringError(
        inconvertibleErrorCode(),
        "strata generate: error: --tokens and --top-k must be >= 0 and --temperature > 0"));
  auto ckpt = loadCheckpoint(ckptPath);
  if (!ckpt) return reportError(ckpt.takeError());
  const json::Value *specText = ckpt->meta.get("spec");
  const json::Value *tok = ckpt->meta.get("tokenizer");
  if (!specText || !specText->getAsString() || !tok)
    return reportError(bad("not a training checkpoint (no model spec or tokenizer)"));
  auto spec = parseModelSpec(*specText->getAsString(), ckptPath + " (model spec)");
  if (!spec) return reportError(spec.takeError());
  auto tokenizer = Tokenizer::fromJSON(*tok);
  if (!tokenizer) return reportError(bad(toString(tokenizer.takeError())));
  StringMap<const HostTensor *> params;
  for (const NamedTensor &t : ckpt->tensors) params[t.name] = &t.tensor;
  SampleOptions so;
  so.maxNewTokens = numTokens;
  so.temperature = temperature;
  so.topK = topK;
  so.seed = seed;
  CpuDevice device;
  auto text = generateText(resolveModelSpec(*spec), params, *tokenizer, prompt, so, device);
  if (!text) return reportError(bad(toString(text.takeError())));
  outs() << prompt << *text << '\n';
  return kExitOk;
}

VerbRegistration reg(generateCmd, runGenerate);

} // namespace
} // namespace strata
