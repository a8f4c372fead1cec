//===- HfConfig.cpp - Hugging Face config.json <-> strata model spec ------===//
#include "frontends/hf/HfConfig.h"
#include "frontends/hf/HfRopeScaling.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace strata {

namespace {

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// JSON text of `v` for messages.
std::string show(const llvm::json::Value &v) {
  std::string s;
  llvm::raw_string_ostream(s) << v;
  return s;
}

/// The keys of one config.json: typed reads that record which keys were
/// used, so that the rest can be reported as unsupported.
class Fields {
public:
  Fields(const llvm::json::Object &o, llvm::StringRef path)
      : o_(o), path_(path) {}

  llvm::Error error(llvm::StringRef key, const llvm::Twine &what) const {
    return fail(path_ + ": field \"" + key + "\": " + what);
  }
  /// The value of `key` (null if absent or JSON null); marks it used.
  const llvm::json::Value *take(llvm::StringRef key) {
    used_.insert(key);
    const llvm::json::Value *v = o_.get(key);
    return v && v->kind() != llvm::json::Value::Null ? v : nullptr;
  }
  /// A required integer >= `min`.
  llvm::Error integer(llvm::StringRef key, int64_t &out, int64_t min = 1) {
    const llvm::json::Value *v = take(key);
    if (!v)
      return error(key, "missing (required for this model type)");
    auto i = v->getAsInteger();
    if (!i || *i < min)
      return error(key, "expected an integer >= " + llvm::Twine(min) +
                            ", got " + show(*v));
    out = *i;
    return llvm::Error::success();
  }
  /// An optional integer >= 1; `out` is left as is when absent or null.
  llvm::Error optInteger(llvm::StringRef key, int64_t &out) {
    if (!take(key))
      return llvm::Error::success();
    return integer(key, out);
  }
  /// An optional number in [lo, hi).
  llvm::Error number(llvm::StringRef key, double &out, double lo, double hi) {
    const llvm::json::Value *v = take(key);
    if (!v)
      return llvm::Error::success();
    auto d = v->getAsNumber();
    if (!d || !(*d >= lo && *d < hi))
      return error(key, "expected a number in [" + llvm::formatv("{0}", lo) +
                            ", " + llvm::formatv("{0}", hi) + "), got " +
                            show(*v));
    out = *d;
    return llvm::Error::success();
  }
  /// An optional bool.
  llvm::Error boolean(llvm::StringRef key, bool &out) {
    const llvm::json::Value *v = take(key);
    if (!v)
      return llvm::Error::success();
    if (!v->getAsBoolean())
      return error(key, "expected true or false, got " + show(*v));
    out = *v->getAsBoolean();
    return llvm::Error::success();
  }
  /// When present, `key` must be `want` (its JSON text); `why` says what
  /// strata implements.
  llvm::Error only(llvm::StringRef key, const llvm::json::Value &want,
                   const llvm::Twine &why) {
    const llvm::json::Value *v = take(key);
    if (!v || *v == want)
      return llvm::Error::success();
    return error(key, "unsupported value " + show(*v) + " (" + why + ")");
  }
  /// Marks keys that do not change the model.
  void ignore(std::initializer_list<llvm::StringRef> keys) {
    for (llvm::StringRef k : keys)
      used_.insert(k);
  }
  /// Copies present keys into `out` and marks them.
  void keep(std::initializer_list<llvm::StringRef> keys,
            llvm::json::Object &out) {
    for (llvm::StringRef k : keys)
      if (const llvm::json::Value *v = o_.get(k)) {
        used_.insert(k);
        out[k] = *v;
      }
  }
  /// An error naming every key not used, or success.
  llvm::Error rest() const {
    std::string keys;
    for (const auto &kv : o_)
      if (!used_.contains(kv.first))
        keys += (keys.empty() ? "\"" : ", \"") + kv.first.str() + "\"";
    if (keys.empty())
      return llvm::Error::success();
    return fail(
        path_ + ": field " + keys +
        ": not supported by strata's import (it would change the model "
        "or its training in a way strata does not implement; see docs/hf.md "
        "for the fields each model type accepts)");
  }

private:
  const llvm::json::Object &o_;
  std::string path_;
  llvm::StringSet<> used_;
};

/// Keys every model type may carry that do not change the model.
void ignoreCommon(Fields &f, llvm::json::Object &keep) {
  // torch_dtype: weights are converted to f32, the training precision.
  f.ignore(
      {"transformers_version", "torch_dtype", "_name_or_path", "use_cache"});
  f.keep({"bos_token_id", "eos_token_id", "pad_token_id"}, keep);
}

#define TRY(x)                                                                 \
  if (llvm::Error e_ = (x))                                                    \
  return e_

llvm::Error readGpt2(Fields &f, HfModelConfig &out, const HfImportOptions &o) {
  pb::ModelSpec &s = out.spec;
  s.set_family(pb::ModelSpec::GPT);
  int64_t v, npos, h, l, nh, inner = 0;
  TRY(f.integer("vocab_size", v));
  TRY(f.integer("n_positions", npos));
  TRY(f.integer("n_embd", h));
  TRY(f.integer("n_layer", l));
  TRY(f.integer("n_head", nh));
  inner = 4 * h;
  TRY(f.optInteger("n_inner", inner));
  if (const llvm::json::Value *ctx = f.take("n_ctx"))
    if (ctx->getAsInteger() != npos)
      return f.error("n_ctx",
                     "must equal n_positions (" + llvm::Twine(npos) + ")");
  s.set_vocab_size(v), s.set_seq_len(npos), s.set_hidden(h), s.set_layers(l);
  s.set_heads(nh), s.set_ffn(inner);
  // gelu_new and gelu_pytorch_tanh are both the tanh approximation.
  if (const llvm::json::Value *a = f.take("activation_function"))
    if (*a != "gelu_new" && *a != "gelu_pytorch_tanh")
      return f.error(
          "activation_function",
          "unsupported value " + show(*a) +
              " (strata's GPT uses gelu with the tanh approximation: "
              "\"gelu_new\" or \"gelu_pytorch_tanh\")");
  double resid = 0.1, embd = 0.1, attn = 0.1, eps = 1e-5, std = 0.02;
  TRY(f.number("resid_pdrop", resid, 0, 1));
  TRY(f.number("embd_pdrop", embd, 0, 1));
  TRY(f.number("attn_pdrop", attn, 0, 1));
  if (embd != resid)
    return f.error("embd_pdrop",
                   llvm::formatv("{0} differs from resid_pdrop {1} (strata "
                                 "has one dropout p for the embedding, "
                                 "attention output and MLP output)",
                                 embd, resid)
                       .str());
  if (attn != 0)
    out.warnings.push_back(
        llvm::formatv("field \"attn_pdrop\": {0} is not modeled "
                      "(strata has no dropout on attention "
                      "probabilities); training from this "
                      "checkpoint runs without it",
                      attn));
  s.set_dropout(resid);
  TRY(f.number("layer_norm_epsilon", eps, 0, 1));
  TRY(f.number("initializer_range", std, 0, 1e9));
  s.set_norm_eps(eps), s.set_init_std(std);
  bool tie = true;
  TRY(f.boolean("tie_word_embeddings", tie));
  s.set_tie_embeddings(tie);
  TRY(f.only("scale_attn_weights", true,
             "strata scales scores by 1/sqrt(head_dim)"));
  TRY(f.only("scale_attn_by_inverse_layer_idx", false,
             "strata does not scale attention by layer index"));
  // In f32 the reordered, upcast attention is the same computation.
  f.ignore({"reorder_and_upcast_attn"});
  TRY(f.only("add_cross_attention", false, "strata's GPT is decoder-only"));
  // Heads of GPT2DoubleHeadsModel / ForSequenceClassification, and
  // generation presets: not part of the language model.
  f.ignore({"summary_type", "summary_use_proj", "summary_activation",
            "summary_first_dropout", "summary_proj_to_labels",
            "task_specific_params"});
  return llvm::Error::success();
}

/// Llama, and Mistral (`mistral`): Llama's architecture with sliding-window
/// attention and without rope_scaling, biases or pretraining_tp.
llvm::Error readLlama(Fields &f, HfModelConfig &out, const HfImportOptions &o,
                      bool mistral, llvm::StringRef path) {
  pb::ModelSpec &s = out.spec;
  s.set_family(pb::ModelSpec::LLAMA);
  int64_t v, h, ffn, l, nh, nkv = 0, npos;
  TRY(f.integer("vocab_size", v));
  TRY(f.integer("hidden_size", h));
  TRY(f.integer("intermediate_size", ffn));
  TRY(f.integer("num_hidden_layers", l));
  TRY(f.integer("num_attention_heads", nh));
  nkv = nh;
  TRY(f.optInteger("num_key_value_heads", nkv));
  TRY(f.integer("max_position_embeddings", npos));
  s.set_vocab_size(v), s.set_hidden(h), s.set_ffn(ffn), s.set_layers(l);
  s.set_heads(nh), s.set_kv_heads(nkv);
  s.set_seq_len(o.seqLen ? o.seqLen : npos);
  out.passthrough["max_position_embeddings"] = npos;
  if (const llvm::json::Value *hd = f.take("head_dim"))
    if (h % nh || hd->getAsInteger() != h / nh)
      return f.error("head_dim", "unsupported value " + show(*hd) +
                                     " (strata's head_dim is hidden_size / "
                                     "num_attention_heads)");
  TRY(f.only("hidden_act", "silu", "strata's Llama MLP is SwiGLU with silu"));
  double eps = 1e-6, theta = 10000, std = 0.02, attnDrop = 0;
  TRY(f.number("rms_norm_eps", eps, 0, 1));
  TRY(f.number("rope_theta", theta, 1, INFINITY));
  TRY(f.number("initializer_range", std, 0, 1e9));
  TRY(f.number("attention_dropout", attnDrop, 0, 1));
  if (attnDrop != 0)
    out.warnings.push_back(
        llvm::formatv("field \"attention_dropout\": {0} is not "
                      "modeled (strata has no dropout on attention "
                      "probabilities)",
                      attnDrop));
  s.set_norm_eps(eps), s.set_rope_theta(theta), s.set_init_std(std);
  bool tie = false;
  TRY(f.boolean("tie_word_embeddings", tie));
  s.set_tie_embeddings(tie);
  if (mistral) {
    // null (Mistral v0.2 and later): full causal attention.
    int64_t window = 0;
    if (f.take("sliding_window"))
      TRY(f.integer("sliding_window", window));
    s.set_sliding_window(window);
    out.passthrough["model_type"] = "mistral";
    return llvm::Error::success();
  }
  // Llama-3.1's "llama3" frequency scaling; other types are errors.
  TRY(readHfRopeScaling(f.take("rope_scaling"), path, s));
  TRY(f.only("attention_bias", false,
             "strata's Llama projections have no biases"));
  TRY(f.only("mlp_bias", false, "strata's Llama MLP has no biases"));
  // pretraining_tp > 1 splits the projections into slices whose results are
  // summed: the same model; kept so export writes it back.
  f.keep({"pretraining_tp"}, out.passthrough);
  return llvm::Error::success();
}

/// Falcon 7B/40B/180B (not the ALiBi, sequential "RW" variants): parallel
/// attention + MLP, rotary, no biases. The KV heads follow from the
/// architecture flags: new_decoder_architecture reads num_kv_heads (and has
/// two norms per block), multi_query means one, otherwise one per head.
llvm::Error readFalcon(Fields &f, HfModelConfig &out, const HfImportOptions &o,
                       llvm::StringRef path) {
  pb::ModelSpec &s = out.spec;
  s.set_family(pb::ModelSpec::FALCON);
  int64_t v, h, l, nh, nkv = 0, npos = 2048;
  TRY(f.integer("vocab_size", v));
  TRY(f.integer("hidden_size", h));
  TRY(f.integer("num_hidden_layers", l));
  TRY(f.integer("num_attention_heads", nh));
  TRY(f.optInteger("max_position_embeddings", npos));
  bool newArch = false, multiQuery = true, parallel = true;
  TRY(f.boolean("new_decoder_architecture", newArch));
  TRY(f.boolean("multi_query", multiQuery));
  TRY(f.boolean("parallel_attn", parallel));
  nkv = newArch ? nh : multiQuery ? 1 : nh;
  if (newArch) {
    TRY(f.optInteger("num_kv_heads", nkv));
  } else if (const llvm::json::Value *kv = f.take("num_kv_heads")) {
    // Ignored by transformers unless new_decoder_architecture; it must not
    // claim grouped heads the weights do not have.
    if (!multiQuery && kv->getAsInteger() != nh)
      return f.error("num_kv_heads", "must equal num_attention_heads without "
                                     "new_decoder_architecture or multi_query");
  }
  if (!newArch && !parallel)
    return f.error("parallel_attn",
                   "unsupported value false (strata's Falcon runs "
                   "attention and the MLP in parallel)");
  s.set_vocab_size(v), s.set_hidden(h), s.set_layers(l), s.set_heads(nh);
  s.set_kv_heads(nkv), s.set_ffn(4 * h), s.set_norms_per_block(newArch ? 2 : 1);
  s.set_seq_len(o.seqLen ? o.seqLen : npos);
  out.passthrough["max_position_embeddings"] = npos;
  TRY(f.only("alibi", false, "strata's Falcon uses rotary embeddings"));
  TRY(f.only("bias", false, "strata's Falcon linears have no biases"));
  TRY(f.only("apply_residual_connection_post_layernorm", false,
             "strata adds the block input, not its norm, to the residual"));
  TRY(readHfRopeScaling(f.take("rope_scaling"), path, s));
  double eps = 1e-5, theta = 10000, std = 0.02, drop = 0, attnDrop = 0;
  TRY(f.number("layer_norm_epsilon", eps, 0, 1));
  TRY(f.number("rope_theta", theta, 1, INFINITY));
  TRY(f.number("initializer_range", std, 0, 1e9));
  TRY(f.number("hidden_dropout", drop, 0, 1));
  TRY(f.number("attention_dropout", attnDrop, 0, 1));
  if (attnDrop != 0)
    out.warnings.push_back(
        llvm::formatv("field \"attention_dropout\": {0} is not "
                      "modeled (strata has no dropout on attention "
                      "probabilities)",
                      attnDrop));
  s.set_norm_eps(eps), s.set_rope_theta(theta), s.set_init_std(std),
      s.set_dropout(drop);
  bool tie = true;
  TRY(f.boolean("tie_word_embeddings", tie));
  s.set_tie_embeddings(tie);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<HfModelConfig> parseHfConfig(const llvm::json::Object &config,
                                            llvm::StringRef path,
                                            const HfImportOptions &options) {
  Fields f(config, path);
  HfModelConfig out;
  const llvm::json::Value *type = f.take("model_type");
  if (!type || !type->getAsString())
    return f.error("model_type", "missing (strata imports \"gpt2\", \"llama\", "
                                 "\"mistral\" and \"falcon\")");
  llvm::StringRef mt = *type->getAsString();
  const char *arch = mt == "gpt2"      ? "GPT2LMHeadModel"
                     : mt == "mistral" ? "MistralForCausalLM"
                     : mt == "falcon"  ? "FalconForCausalLM"
                                       : "LlamaForCausalLM";
  if (mt == "gpt2") {
    TRY(readGpt2(f, out, options));
  } else if (mt == "falcon") {
    TRY(readFalcon(f, out, options, path));
  } else if (mt == "llama" || mt == "mistral") {
    TRY(readLlama(f, out, options, mt == "mistral", path));
  } else {
    return f.error("model_type", "unsupported architecture \"" + mt +
                                     "\" (strata imports \"gpt2\", \"llama\", "
                                     "\"mistral\" and \"falcon\")");
  }
  if (const llvm::json::Value *a = f.take("architectures"))
    if (*a != llvm::json::Array{arch})
      return f.error("architectures", "unsupported value " + show(*a) +
                                          " (strata imports " + arch + ")");
  ignoreCommon(f, out.passthrough);
  TRY(f.rest());
  out.spec.set_name(mt.str());
  out.spec.set_make_vocab_size_divisible_by(options.vocabMultiple);
  if (auto e = checkModelSpec(out.spec, path)) {
    // "<path>: error: <spec field> ..." in the spec's terms (docs/hf.md maps
    // them to config.json's).
    std::string msg = llvm::toString(std::move(e));
    llvm::StringRef m(msg);
    m.consume_front((path + ": error: ").str());
    return fail(path + ": the config gives a model strata cannot build: " + m);
  }
  return out;
}

llvm::Expected<llvm::json::Object>
makeHfConfig(const ModelConfig &c, const llvm::json::Object &passthrough) {
  llvm::json::Object j;
  if (c.isFalcon()) {
    bool newArch = c.normsPerBlock == 2;
    if (!newArch && c.kvHeads != 1 && c.kvHeads != c.heads)
      return fail("a Falcon with one norm per block and " +
                  llvm::Twine(c.kvHeads) + " of " + llvm::Twine(c.heads) +
                  " KV heads has no FalconConfig "
                  "(grouped KV heads need new_decoder_architecture: "
                  "norms_per_block 2)");
    j = llvm::json::Object{
        {"architectures", llvm::json::Array{"FalconForCausalLM"}},
        {"model_type", "falcon"},
        {"vocab_size", c.vocab},
        {"hidden_size", c.hidden},
        {"num_hidden_layers", c.layers},
        {"num_attention_heads", c.heads},
        {"num_kv_heads", c.kvHeads},
        {"new_decoder_architecture", newArch},
        {"multi_query", !newArch && c.kvHeads == 1 && c.heads > 1},
        {"parallel_attn", true},
        {"alibi", false},
        {"bias", false},
        {"max_position_embeddings", c.seq},
        {"layer_norm_epsilon", c.normEps},
        {"rope_theta", c.ropeTheta},
        {"rope_scaling", makeHfRopeScaling(c)},
        {"hidden_dropout", c.dropout},
        {"attention_dropout", 0.0},
        {"initializer_range", c.initStd}};
  } else if (c.isGPT()) {
    j = llvm::json::Object{
        {"architectures", llvm::json::Array{"GPT2LMHeadModel"}},
        {"model_type", "gpt2"},
        {"vocab_size", c.vocab},
        {"n_positions", c.seq},
        {"n_embd", c.hidden},
        {"n_layer", c.layers},
        {"n_head", c.heads},
        {"n_inner", c.ffn},
        {"activation_function", "gelu_new"},
        {"resid_pdrop", c.dropout},
        {"embd_pdrop", c.dropout},
        {"attn_pdrop", 0.0},
        {"layer_norm_epsilon", c.normEps},
        {"initializer_range", c.initStd},
        {"scale_attn_weights", true},
        {"scale_attn_by_inverse_layer_idx", false},
        {"reorder_and_upcast_attn", false}};
  } else {
    const llvm::json::Value *type = passthrough.get("model_type");
    bool mistral = type ? *type == "mistral" : c.slidingWindow > 0;
    j = llvm::json::Object{
        {"architectures", llvm::json::Array{mistral ? "MistralForCausalLM"
                                                    : "LlamaForCausalLM"}},
        {"model_type", mistral ? "mistral" : "llama"},
        {"vocab_size", c.vocab},
        {"hidden_size", c.hidden},
        {"intermediate_size", c.ffn},
        {"num_hidden_layers", c.layers},
        {"num_attention_heads", c.heads},
        {"num_key_value_heads", c.kvHeads},
        {"hidden_act", "silu"},
        {"max_position_embeddings", c.seq},
        {"rms_norm_eps", c.normEps},
        {"rope_theta", c.ropeTheta},
        {"attention_dropout", 0.0},
        {"initializer_range", c.initStd}};
    if (mistral && c.ropeScaling.factor > 0)
      return fail("a Mistral model (sliding window) with rope_scaling has no "
                  "MistralConfig (transformers 4.38's Mistral has no "
                  "rope_scaling; remove one of the two)");
    if (mistral) {
      j["sliding_window"] = c.slidingWindow > 0
                                ? llvm::json::Value(c.slidingWindow)
                                : llvm::json::Value(nullptr);
    } else {
      j["rope_scaling"] = makeHfRopeScaling(c);
      j["attention_bias"] = false;
    }
  }
  j["tie_word_embeddings"] = c.tieEmbeddings;
  j["torch_dtype"] = "float32";
  for (const auto &kv : passthrough)
    j[kv.first] = kv.second;
  return j;
}

} // namespace strata
