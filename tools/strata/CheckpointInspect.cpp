//===- CheckpointInspect.cpp - `strata inspect CHECKPOINT` ----------------===//
#include "tools/strata/CheckpointInspect.h"

#include "frontends/ModelSpec.h"
#include "passes/recompute/Recompute.h" // formatBytes
#include "runtime/data/Tokenizer.h"
#include "runtime/io/Checkpoint.h"
#include "tools/strata/Driver.h"

#include "llvm/Support/Path.h"

using namespace llvm;

namespace strata {

Error printCheckpointSummary(raw_ostream &os, StringRef path) {
  auto ckpt = loadCheckpoint(path);
  if (!ckpt)
    return ckpt.takeError();
  auto bad = [&](const Twine &what) {
    return createStringError(inconvertibleErrorCode(),
                             path + ": error: " + what);
  };
  const json::Value *specText = ckpt->meta.get("spec");
  const json::Value *tok = ckpt->meta.get("tokenizer");
  if (!specText || !specText->getAsString() || !tok)
    return bad("a checkpoint without a model spec or tokenizer (not written "
               "by `strata train`)");
  auto spec =
      parseModelSpec(*specText->getAsString(), (path + " (model spec)").str());
  if (!spec)
    return spec.takeError();
  auto tokenizer = Tokenizer::fromJSON(*tok);
  if (!tokenizer)
    return bad("unreadable tokenizer: " + toString(tokenizer.takeError()));
  ModelConfig c = resolveModelSpec(*spec);
  int64_t params = 0, paramTensors = 0, bytes = 0;
  for (const NamedTensor &t : ckpt->tensors) {
    bytes += t.tensor.bytes();
    if (!StringRef(t.name).startswith("adam_"))
      params += t.tensor.numElements(), ++paramTensors;
  }
  auto row = [&](StringRef label, const Twine &value) {
    os << "  " << left_justify(label, 12) << value << '\n';
  };
  os << "checkpoint " << path << " (written by `strata train`)\n";
  row("step", Twine(ckpt->meta.getInteger("step").getValueOr(0)) + " of " +
                  Twine(spec->training().steps()));
  row("model",
      (spec->name().empty() ? c.familyName() : StringRef(spec->name())) + " (" +
          c.familyName() + ", " + withCommas(params) +
          " params: " + Twine(c.layers) + " layers, hidden " + Twine(c.hidden) +
          ", " + Twine(c.heads) + " heads, seq_len " + Twine(c.seq) + ")");
  row("tokenizer",
      tokenizer->name() + ", vocab " + Twine(tokenizer->vocabSize()));
  if (auto data = ckpt->meta.getString("data"))
    row("data", *data);
  row("tensors", Twine(ckpt->tensors.size()) + " (" + Twine(paramTensors) +
                     " parameters and their AdamW moments), " +
                     formatBytes(bytes));
  StringRef dir = sys::path::parent_path(path);
  os << "use it with:\n"
     << "  strata generate " << path << " --prompt TEXT   # sample text\n"
     << "  strata train SPEC --out " << (dir.empty() ? "." : dir)
     << " --resume   # continue training\n";
  return Error::success();
}

} // namespace strata
