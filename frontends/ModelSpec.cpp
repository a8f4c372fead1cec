//===- ModelSpec.cpp - Loading, checking and resolving model specs --------===//
#include "frontends/ModelSpec.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cassert>
#include <cmath>
#include <cstdio>

namespace strata {

namespace gp = google::protobuf;

llvm::StringRef ModelConfig::familyName() const {
  return isGPT() ? "gpt" : isFalcon() ? "falcon" : "llama";
}

int64_t padVocabSize(int64_t vocab, int64_t multiple) {
  return (vocab + multiple - 1) / multiple * multiple;
}

int64_t defaultFfn(pb::ModelSpec::Family family, int64_t hidden,
                   int64_t multipleOf) {
  if (family == pb::ModelSpec::GPT || family == pb::ModelSpec::FALCON)
    return 4 * hidden;
  int64_t f = 2 * (4 * hidden) / 3;
  return (f + multipleOf - 1) / multipleOf * multipleOf;
}

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// A double as "%g" prints it.
std::string fmt(double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

/// The field of the spec schema closest in spelling to `name`, or "".
std::string closestField(llvm::StringRef name) {
  std::string best;
  unsigned bestDist = 3; // suggest only near misses
  for (const gp::Descriptor *d :
       {pb::ModelSpec::descriptor(), pb::Training::descriptor(),
        pb::Data::descriptor(), pb::RopeScaling::descriptor()})
    for (int i = 0; i < d->field_count(); ++i) {
      unsigned dist = name.edit_distance(d->field(i)->name());
      if (dist < bestDist) {
        bestDist = dist;
        best = d->field(i)->name();
      }
    }
  return best;
}

/// The schema field named `name` in any message of the spec, or null.
const gp::FieldDescriptor *findSchemaField(llvm::StringRef name) {
  for (const gp::Descriptor *d :
       {pb::ModelSpec::descriptor(), pb::Training::descriptor(),
        pb::Data::descriptor(), pb::RopeScaling::descriptor()})
    if (const gp::FieldDescriptor *f = d->FindFieldByName(name.str()))
      return f;
  return nullptr;
}

/// Turns protobuf's text-format errors into `file:line:col: error: ...`
/// (line and column 1-based; a tab advances the column to a multiple of 8,
/// as protobuf's tokenizer counts).
class SpecErrorCollector : public gp::io::ErrorCollector {
public:
  SpecErrorCollector(llvm::StringRef file, llvm::StringRef text)
      : file_(file), text_(text) {}

  void AddError(int line, gp::io::ColumnNumber column,
                const std::string &message) override {
    std::string msg = message, culprit;
    llvm::SmallVector<llvm::StringRef, 3> m;
    static const llvm::Regex unknownField("has no field named \"([^\"]*)\"");
    static const llvm::Regex unknownEnum(
        "Unknown enumeration value of \"([^\"]*)\" for field \"([^\"]*)\"");
    if (unknownField.match(message, &m)) {
      culprit = m[1].str();
      std::string near = closestField(culprit);
      msg = "unknown field '" + culprit + "'" +
            (near.empty() ? " (see proto/model_spec.proto for the fields)"
                          : " (did you mean '" + near + "'?)");
    } else if (unknownEnum.match(message, &m)) {
      culprit = m[1].str();
      msg = "unknown value '" + culprit + "' for field '" + m[2].str() + "'";
      if (const gp::FieldDescriptor *f = findSchemaField(m[2])) {
        std::string names;
        for (int i = 0; i < f->enum_type()->value_count(); ++i) {
          const std::string &v = f->enum_type()->value(i)->name();
          if (llvm::StringRef(v).endswith("_UNSPECIFIED"))
            continue;
          names += (names.empty() ? "" : " or ") + v;
        }
        msg += " (expected " + names + ")";
      }
    }
    // Protobuf reports these at the token after the culprit; point at it.
    if (!culprit.empty())
      rewindTo(culprit, line, column);
    if (!errors_.empty())
      errors_ += '\n';
    errors_ += (llvm::Twine(file_) + ":" + llvm::Twine(line + 1) + ":" +
                llvm::Twine(column + 1) + ": error: " + msg)
                   .str();
  }

  llvm::Error take() {
    return errors_.empty() ? llvm::Error::success() : makeError(errors_);
  }

private:
  /// Moves (line, column) back to the last occurrence of `word` before it.
  void rewindTo(llvm::StringRef word, int &line, int &column) const {
    struct Pos {
      size_t offset;
      int line, column;
    };
    llvm::SmallVector<Pos, 0> starts; // candidate positions of `word`
    int l = 0, c = 0;
    for (size_t i = 0; i < text_.size(); ++i) {
      if (l > line || (l == line && c >= column))
        break;
      if (text_.substr(i).startswith(word))
        starts.push_back({i, l, c});
      char ch = text_[i];
      if (ch == '\n')
        ++l, c = 0;
      else
        c += ch == '\t' ? 8 - c % 8 : 1;
    }
    if (starts.empty())
      return;
    line = starts.back().line;
    column = starts.back().column;
  }

  std::string file_;
  llvm::StringRef text_;
  std::string errors_;
};

/// One message of the spec (the spec itself, `training` or `data`) and where
/// its fields were written, if the spec came from text.
struct Fields {
  const gp::Message &msg;
  const gp::TextFormat::ParseInfoTree *tree;
};

/// Collects semantic errors, each located at the field it blames.
class Checker {
public:
  explicit Checker(llvm::StringRef file) : file_(file) {}

  void fail(const Fields &f, const char *field, const llvm::Twine &what) {
    std::string loc = file_;
    if (f.tree) {
      const gp::FieldDescriptor *fd =
          f.msg.GetDescriptor()->FindFieldByName(field);
      assert(fd && "checking a field the schema does not have");
      gp::TextFormat::ParseLocation l = f.tree->GetLocation(fd, -1);
      if (l.line >= 0)
        loc += ":" + std::to_string(l.line + 1) + ":" +
               std::to_string(l.column + 1);
    }
    if (!errors_.empty())
      errors_ += '\n';
    errors_ += loc + ": error: " + what.str();
  }

  /// `field` must lie in [lo, hi].
  void range(const Fields &f, const char *field, int64_t v, int64_t lo,
             int64_t hi, const char *fix) {
    if (v >= lo && v <= hi)
      return;
    std::string bound = v > hi    ? "at most " + std::to_string(hi)
                        : lo == 0 ? std::string("non-negative")
                        : lo == 1 ? std::string("positive")
                                  : ">= " + std::to_string(lo);
    fail(f, field,
         llvm::Twine(field) + " must be " + bound + ", got " + llvm::Twine(v) +
             " (" + fix + ")");
  }

  /// A float field must be finite and satisfy `ok`.
  void check(const Fields &f, const char *field, double v, bool ok,
             const char *constraint) {
    if (ok && std::isfinite(v))
      return;
    fail(f, field,
         llvm::Twine(field) + " must be " +
             (std::isfinite(v) ? "" : "finite and ") + constraint + ", got " +
             fmt(v));
  }

  bool ok() const { return errors_.empty(); }
  llvm::Error take() {
    return errors_.empty() ? llvm::Error::success() : makeError(errors_);
  }

private:
  std::string file_;
  std::string errors_;
};

// Sizes above this overflow 64-bit element counts of [B, S, V] tensors.
constexpr int64_t kMaxSize = int64_t(1) << 20;

void checkModel(Checker &c, const pb::ModelSpec &s, const Fields &f) {
  auto required = [&](bool has, const char *field, const char *example) {
    if (!has)
      c.fail(f, field,
             llvm::Twine("missing required field '") + field + "' (add `" +
                 example + "`)");
    return has;
  };
  if (required(s.has_family(), "family", "family: GPT` or `family: LLAMA") &&
      s.family() == pb::ModelSpec::FAMILY_UNSPECIFIED)
    c.fail(f, "family", "family must be GPT, LLAMA or FALCON");
  bool gpt = s.family() == pb::ModelSpec::GPT;

  if (required(s.has_vocab_size(), "vocab_size", "vocab_size: 50257"))
    c.range(f, "vocab_size", s.vocab_size(), 1, kMaxSize,
            "the number of distinct tokens, e.g. 65 for char-level text");
  c.range(f, "make_vocab_size_divisible_by", s.make_vocab_size_divisible_by(),
          1, kMaxSize, "use 1 to disable vocab padding");
  if (required(s.has_hidden(), "hidden", "hidden: 768"))
    c.range(f, "hidden", s.hidden(), 1, kMaxSize, "the model width");
  if (required(s.has_layers(), "layers", "layers: 12"))
    c.range(f, "layers", s.layers(), 1, kMaxSize,
            "a model needs at least one transformer block");
  if (required(s.has_heads(), "heads", "heads: 12"))
    c.range(f, "heads", s.heads(), 1, kMaxSize, "attention heads per layer");
  c.range(f, "kv_heads", s.kv_heads(), 0, kMaxSize,
          "0 means as many as `heads`");
  c.range(f, "ffn", s.ffn(), 0, kMaxSize, "0 picks the family default");
  c.range(f, "ffn_multiple_of", s.ffn_multiple_of(), 1, kMaxSize,
          "the default ffn is rounded up to a multiple of it");
  if (required(s.has_seq_len(), "seq_len", "seq_len: 1024"))
    c.range(f, "seq_len", s.seq_len(), 1, kMaxSize, "tokens per sample");
  c.range(f, "micro_batch", s.micro_batch(), 1, kMaxSize,
          "sequences per microbatch");
  c.check(f, "dropout", s.dropout(), s.dropout() >= 0 && s.dropout() < 1,
          "in [0, 1)");
  c.check(f, "norm_eps", s.norm_eps(), s.norm_eps() > 0, "positive");
  c.check(f, "rope_theta", s.rope_theta(), s.rope_theta() > 0, "positive");
  c.check(f, "init_std", s.init_std(), s.init_std() > 0, "positive");
  c.range(f, "sliding_window", s.sliding_window(), 0, kMaxSize,
          "0 means full causal attention");
  c.range(f, "norms_per_block", s.norms_per_block(), 1, 2,
          "FALCON: 1 shared LayerNorm or 2 (ln_attn, ln_mlp)");
  if (!c.ok())
    return;

  // Relations between sizes, once each size is valid on its own.
  int64_t h = s.hidden(), nh = s.heads();
  int64_t nkv = s.kv_heads() ? s.kv_heads() : nh;
  if (h % nh) {
    c.fail(f, "heads",
           "heads (" + llvm::Twine(nh) + ") must divide hidden (" +
               llvm::Twine(h) +
               ") (each head gets hidden / heads "
               "dimensions; pick heads among the divisors of hidden)");
    return;
  }
  if (nh % nkv)
    c.fail(f, "kv_heads",
           "kv_heads (" + llvm::Twine(nkv) + ") must divide heads (" +
               llvm::Twine(nh) +
               ") (each kv head serves heads / kv_heads "
               "query heads; pick kv_heads among the divisors of heads)");
  if (gpt && nkv != nh)
    c.fail(f, "kv_heads",
           "GPT has no grouped-query attention (kv_heads must be 0 or equal "
           "heads; use family: LLAMA for GQA)");
  if (s.family() != pb::ModelSpec::FALCON && s.norms_per_block() != 1)
    c.fail(f, "norms_per_block",
           "only FALCON blocks have parallel norms (remove norms_per_block)");
  if (gpt && s.sliding_window())
    c.fail(f, "sliding_window",
           "GPT has no sliding-window attention (use family: LLAMA, as Mistral "
           "does, or remove sliding_window)");
  if (!gpt && (h / nh) % 2)
    c.fail(f, "heads",
           "head_dim = hidden / heads = " + llvm::Twine(h / nh) +
               " must be even for rotary embeddings (RoPE rotates pairs of "
               "dimensions; change heads or hidden)");
}

/// `f` holds rope_scaling's fields, `spec` the spec's (errors about the
/// message as a whole point at `rope_scaling` there).
void checkRopeScaling(Checker &c, const pb::RopeScaling &r, const Fields &f,
                      const pb::ModelSpec &s, const Fields &spec) {
  if (s.family() == pb::ModelSpec::GPT) {
    c.fail(spec, "rope_scaling",
           "GPT has learned positions, no RoPE to scale (remove rope_scaling)");
    return;
  }
  if (r.type() != pb::RopeScaling::LLAMA3)
    c.fail(r.has_type() ? f : spec, r.has_type() ? "type" : "rope_scaling",
           "rope_scaling needs type: LLAMA3 (the only RoPE scaling strata "
           "implements)");
  c.check(f, "factor", r.factor(), r.factor() > 0, "positive");
  c.check(f, "low_freq_factor", r.low_freq_factor(), r.low_freq_factor() > 0,
          "positive");
  c.check(f, "high_freq_factor", r.high_freq_factor(),
          r.high_freq_factor() > r.low_freq_factor(),
          "greater than low_freq_factor (the blend divides by their "
          "difference)");
  c.range(f, "original_max_position_embeddings",
          r.original_max_position_embeddings(), 1, INT64_MAX,
          "the context length the model was pretrained with, 8192 for "
          "Llama 3.1");
}

void checkTraining(Checker &c, const pb::Training &t, const Fields &f) {
  c.range(f, "steps", t.steps(), 1, INT64_MAX, "optimizer steps to run");
  c.check(f, "lr", t.lr(), t.lr() >= 0, "non-negative");
  c.check(f, "min_lr", t.min_lr(), t.min_lr() >= 0, "non-negative");
  if (c.ok() && t.min_lr() > t.lr())
    c.fail(f, t.has_min_lr() ? "min_lr" : "lr",
           "min_lr (" + fmt(t.min_lr()) + ") must not exceed lr (" +
               fmt(t.lr()) +
               ") (the schedule decays from lr down to "
               "min_lr; lower min_lr or raise lr)");
  c.range(f, "warmup", t.warmup(), 0, INT64_MAX, "linear warmup steps");
  c.range(f, "decay_iters", t.decay_iters(), 0, INT64_MAX, "0 means `steps`");
  int64_t decay = t.decay_iters() ? t.decay_iters() : t.steps();
  if (c.ok() && decay <= t.warmup())
    c.fail(f, t.decay_iters() ? "decay_iters" : "warmup",
           "decay_iters (" + llvm::Twine(decay) +
               ") must be greater than warmup (" + llvm::Twine(t.warmup()) +
               ") (the cosine decay runs from the end of warmup to "
               "decay_iters; shorten warmup or raise decay_iters)");
  c.check(f, "beta1", t.beta1(), t.beta1() >= 0 && t.beta1() < 1, "in [0, 1)");
  c.check(f, "beta2", t.beta2(), t.beta2() >= 0 && t.beta2() < 1, "in [0, 1)");
  c.check(f, "eps", t.eps(), t.eps() > 0, "positive");
  c.check(f, "weight_decay", t.weight_decay(), t.weight_decay() >= 0,
          "non-negative");
  c.check(f, "grad_clip", t.grad_clip(), t.grad_clip() >= 0,
          "non-negative (0 disables clipping)");
  c.range(f, "grad_accum", t.grad_accum(), 1, kMaxSize,
          "microbatches per optimizer step");
  c.range(f, "eval_every", t.eval_every(), 0, INT64_MAX, "0 never evaluates");
}

void checkData(Checker &c, const pb::Data &d, const Fields &f,
               const pb::ModelSpec &s) {
  if (d.tokenizer() == pb::Data::TOKENIZER_UNSPECIFIED)
    c.fail(f, "tokenizer", "tokenizer must be CHAR, BYTE or TOKENIZER_FILE");
  if ((d.tokenizer() == pb::Data::TOKENIZER_FILE) !=
      !d.tokenizer_file().empty())
    c.fail(f, "tokenizer_file",
           "tokenizer_file names the tokenizer.json or .model of tokenizer "
           "TOKENIZER_FILE, and only of it");
  if (d.tokenizer() == pb::Data::BYTE && s.vocab_size() < 256)
    c.fail(f, "tokenizer",
           "the BYTE tokenizer needs vocab_size >= 256, got " +
               llvm::Twine(s.vocab_size()) + " (raise vocab_size to 256)");
}

llvm::Error checkSpec(const pb::ModelSpec &s, llvm::StringRef file,
                      const gp::TextFormat::ParseInfoTree *tree) {
  Checker c(file);
  checkModel(c, s, {s, tree});
  auto nested = [&](const char *field) {
    return tree ? tree->GetTreeForNested(
                      s.GetDescriptor()->FindFieldByName(field), -1)
                : nullptr;
  };
  if (s.has_training())
    checkTraining(c, s.training(), {s.training(), nested("training")});
  if (s.has_data())
    checkData(c, s.data(), {s.data(), nested("data")}, s);
  if (s.has_rope_scaling())
    checkRopeScaling(c, s.rope_scaling(),
                     {s.rope_scaling(), nested("rope_scaling")}, s, {s, tree});
  return c.take();
}

} // namespace

llvm::Expected<pb::ModelSpec> parseModelSpec(llvm::StringRef text,
                                             llvm::StringRef bufferName) {
  pb::ModelSpec spec;
  SpecErrorCollector errors(bufferName, text);
  gp::TextFormat::ParseInfoTree tree;
  gp::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(std::string(text), &spec)) {
    if (llvm::Error e = errors.take())
      return e;
    return makeError(bufferName + ": error: cannot parse model spec");
  }
  if (llvm::Error e = checkSpec(spec, bufferName, &tree))
    return e;
  return spec;
}

llvm::Expected<pb::ModelSpec> loadModelSpec(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf)
    return makeError(
        path + ": error: cannot read model spec: " + buf.getError().message());
  return parseModelSpec((*buf)->getBuffer(), path);
}

llvm::Error checkModelSpec(const pb::ModelSpec &spec, llvm::StringRef name) {
  return checkSpec(spec, name, nullptr);
}

ModelConfig dataParallelConfig(ModelConfig c, int64_t dp) {
  c.microBatch *= dp;
  return c;
}

ModelConfig resolveModelSpec(const pb::ModelSpec &s) {
  ModelConfig c;
  c.family = s.family();
  c.name = s.name();
  c.vocab = s.vocab_size();
  c.paddedVocab =
      padVocabSize(s.vocab_size(), s.make_vocab_size_divisible_by());
  c.hidden = s.hidden();
  c.layers = s.layers();
  c.heads = s.heads();
  c.kvHeads = s.kv_heads() ? s.kv_heads() : s.heads();
  c.headDim = s.hidden() / s.heads();
  c.ffn = s.ffn() ? s.ffn()
                  : defaultFfn(s.family(), s.hidden(), s.ffn_multiple_of());
  c.seq = s.seq_len();
  c.microBatch = s.micro_batch();
  c.dropout = s.dropout();
  c.normEps = s.norm_eps();
  c.ropeTheta = s.rope_theta();
  if (s.has_rope_scaling()) {
    const pb::RopeScaling &r = s.rope_scaling();
    c.ropeScaling = {r.factor(), r.low_freq_factor(), r.high_freq_factor(),
                     r.original_max_position_embeddings()};
  }
  c.initStd = s.init_std();
  c.tieEmbeddings = s.has_tie_embeddings() ? s.tie_embeddings() : c.isGPT();
  c.slidingWindow = s.sliding_window();
  c.normsPerBlock = s.norms_per_block();
  return c;
}

} // namespace strata
