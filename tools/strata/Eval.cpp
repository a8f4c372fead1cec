//===- Eval.cpp - `strata eval CHECKPOINT --data FILE`
//---------------------===//
//
// Loss and perplexity of a checkpoint's model over a text, in windows of
// seq_len tokens moved by --stride (runtime/train/Evaluate.h), with the
// checkpoint's tokenizer (or --tokenizer byte for one that has none, e.g. an
// import without tokenizer support). `--dump-logits FILE.npy --input-ids
// 1,2,3` instead writes the logits of one sequence as a float32 [n, vocab]
// .npy array (padding columns stripped), to compare with another
// implementation.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuDevice.h"
#include "runtime/io/Npy.h"
#include "runtime/train/Evaluate.h"
#include "tools/strata/ModelCheckpoint.h"
#include "tools/strata/Verb.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace strata {
namespace {

cl::SubCommand evalCmd("eval",
                       "Loss and perplexity of a checkpoint over a text, "
                       "or the logits of one sequence");
cl::OptionCategory &cat = strataCategory();

cl::opt<std::string> ckptPath(cl::Positional, cl::Required,
                              cl::desc("<checkpoint.bin>"), cl::sub(evalCmd),
                              cl::cat(cat));
cl::opt<std::string> dataPath("data", cl::desc("Text to score"),
                              cl::value_desc("file"), cl::sub(evalCmd),
                              cl::cat(cat));
cl::opt<int64_t>
    maxTokens("max-tokens",
              cl::desc("Score only the first N tokens of the text (0: all)"),
              cl::init(0), cl::sub(evalCmd), cl::cat(cat));
cl::opt<int64_t>
    stride("stride",
           cl::desc("Tokens between window starts (default: seq_len, "
                    "non-overlapping windows)"),
           cl::init(0), cl::sub(evalCmd), cl::cat(cat));
cl::opt<bool> asJson("json", cl::desc("Print one JSON object"),
                     cl::sub(evalCmd), cl::cat(cat));
cl::opt<std::string>
    tokenizerKind("tokenizer",
                  cl::desc("Tokenizer when the checkpoint has none: byte, "
                           "or a tokenizer.json / .model file"),
                  cl::sub(evalCmd), cl::cat(cat));
cl::opt<std::string>
    dumpLogits("dump-logits",
               cl::desc("Write the logits of --input-ids to this .npy"),
               cl::value_desc("file.npy"), cl::sub(evalCmd), cl::cat(cat));
cl::opt<std::string> inputIds("input-ids",
                              cl::desc("Comma-separated token ids"),
                              cl::value_desc("1,2,3"), cl::sub(evalCmd),
                              cl::cat(cat));

Error fail(const Twine &msg) { return usageError(msg); }

Error dumpLogitsOf(LogitsModel &model) {
  std::vector<int32_t> ids;
  SmallVector<StringRef, 16> parts;
  StringRef(inputIds).split(parts, ',');
  for (StringRef p : parts) {
    int32_t id;
    if (p.trim().getAsInteger(10, id))
      return fail("--input-ids: '" + p +
                  "' is not an integer (expected e.g. 1,2,3)");
    ids.push_back(id);
  }
  auto logits = model.run(ids);
  if (!logits)
    return fail(ckptPath + ": " + toString(logits.takeError()));
  const ModelConfig &c = model.config();
  int64_t n = int64_t(ids.size());
  std::vector<float> out(n * c.vocab);
  for (int64_t i = 0; i < n; ++i)
    std::copy_n(*logits + i * c.paddedVocab, c.vocab,
                out.begin() + i * c.vocab);
  if (Error e = writeNpyF32(dumpLogits, out, {n, c.vocab}))
    return fail(toString(std::move(e)));
  return Error::success();
}

Error evalText(LogitsModel &model, const ModelCheckpoint &m) {
  std::optional<Tokenizer> tok = m.tokenizer;
  if (!tokenizerKind.empty()) {
    if (tok)
      return fail("--tokenizer: the checkpoint has its own tokenizer");
    if (tokenizerKind == "byte") {
      tok = Tokenizer::byteLevel();
    } else {
      auto t = Tokenizer::fromFile(tokenizerKind);
      if (!t)
        return fail(toString(t.takeError()));
      tok = std::move(*t);
    }
  }
  if (!tok)
    return fail(ckptPath +
                ": the checkpoint has no tokenizer (pass --tokenizer byte or "
                "FILE, or --dump-logits with --input-ids)");
  if (tok->vocabSize() > m.config.vocab)
    return fail(
        "the " + tok->name() + " tokenizer's " + Twine(tok->vocabSize()) +
        " ids exceed the model's vocabulary of " + Twine(m.config.vocab));
  auto buf = MemoryBuffer::getFile(dataPath, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail(dataPath + ": cannot read (" + buf.getError().message() + ")");
  std::vector<int32_t> ids;
  if (Error e = tok->encode((*buf)->getBuffer(), ids))
    return fail(dataPath + ": " + toString(std::move(e)));
  if (maxTokens > 0 && int64_t(ids.size()) > maxTokens)
    ids.resize(maxTokens);
  int64_t s = stride ? int64_t(stride) : model.config().seq;
  auto r = evaluateTokens(model, ids, s);
  if (!r)
    return fail(dataPath + ": " + toString(r.takeError()));
  if (asJson) {
    outs() << json::Value(json::Object{{"tokens", r->tokens},
                                       {"windows", r->windows},
                                       {"seq_len", model.config().seq},
                                       {"stride", s},
                                       {"loss", r->loss},
                                       {"perplexity", r->perplexity()}})
           << "\n";
  } else {
    outs() << formatv(
        "{0} tokens in {1} windows (seq_len {2}, stride {3}): loss {4:f4}, "
        "perplexity {5:f3}\n",
        r->tokens, r->windows, model.config().seq, s, r->loss, r->perplexity());
  }
  return Error::success();
}

Error evaluate() {
  bool dump = !dumpLogits.empty() || !inputIds.empty();
  if (dump && (dumpLogits.empty() || inputIds.empty()))
    return fail("--dump-logits and --input-ids go together");
  if (dump == !dataPath.empty())
    return fail(
        "give either --data FILE or --dump-logits FILE.npy --input-ids IDS");
  if (maxTokens < 0 || stride < 0)
    return fail("--max-tokens and --stride must be >= 0");
  auto m = loadModelCheckpoint(ckptPath);
  if (!m)
    return fail(toString(m.takeError()));
  CpuDevice device;
  auto model = LogitsModel::create((*m)->config, (*m)->params, device);
  if (!model)
    return fail(ckptPath + ": " + toString(model.takeError()));
  return dump ? dumpLogitsOf(**model) : evalText(**model, **m);
}

int runEval() {
  if (Error e = evaluate())
    return reportError(std::move(e));
  return kExitOk;
}

VerbRegistration reg(evalCmd, runEval);

} // namespace
} // namespace strata
