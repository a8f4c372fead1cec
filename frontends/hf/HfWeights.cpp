//===- HfWeights.cpp - Hugging Face tensors <-> strata parameters ---------===//
#include "frontends/hf/HfWeights.h"

#include "frontends/Models.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>

namespace strata {

namespace {

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string showShape(llvm::ArrayRef<int64_t> s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/// How a strata parameter is laid out in the transformers tensor.
enum class Layout {
  Same,       // same layout (or a slice of the last dim, see Rule::parts)
  Transposed, // nn.Linear [out, in] vs strata [in, out]
  VocabRows,  // [V, H] vs strata [Vp, H] (padding rows)
  VocabColsT, // [V, H] vs strata [H, Vp] (transposed, padding columns)
  FusedQkvT,  // Falcon's query_key_value [(nh + 2 nkv) D, H], see below
};

struct Rule {
  std::string strata, hf;
  Layout layout = Layout::Same;
  /// GPT-2's fused c_attn: this parameter is part `part` of `parts` equal
  /// slices of the last dim. FusedQkvT: part 0, 1, 2 is q, k, v.
  int part = 0, parts = 1;
};

/// The rules of `c`'s family, in transformers' state-dict order.
std::vector<Rule> rulesOf(const ModelConfig &c) {
  std::vector<Rule> r;
  auto add = [&](std::string s, std::string h, Layout l = Layout::Same,
                 int part = 0, int parts = 1) {
    r.push_back({std::move(s), std::move(h), l, part, parts});
  };
  if (c.isGPT()) {
    add("wte", "transformer.wte.weight", Layout::VocabRows);
    add("wpe", "transformer.wpe.weight");
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string s = "layers." + std::to_string(i) + ".";
      std::string h = "transformer.h." + std::to_string(i) + ".";
      add(s + "ln1.w", h + "ln_1.weight");
      add(s + "ln1.b", h + "ln_1.bias");
      int part = 0;
      for (const char *qkv : {"q", "k", "v"}) {
        add(s + "attn." + qkv + ".w", h + "attn.c_attn.weight", Layout::Same,
            part, 3);
        add(s + "attn." + qkv + ".b", h + "attn.c_attn.bias", Layout::Same,
            part++, 3);
      }
      add(s + "attn.o.w", h + "attn.c_proj.weight");
      add(s + "attn.o.b", h + "attn.c_proj.bias");
      add(s + "ln2.w", h + "ln_2.weight");
      add(s + "ln2.b", h + "ln_2.bias");
      add(s + "mlp.fc1.w", h + "mlp.c_fc.weight");
      add(s + "mlp.fc1.b", h + "mlp.c_fc.bias");
      add(s + "mlp.fc2.w", h + "mlp.c_proj.weight");
      add(s + "mlp.fc2.b", h + "mlp.c_proj.bias");
    }
    add("ln_f.w", "transformer.ln_f.weight");
    add("ln_f.b", "transformer.ln_f.bias");
  } else if (c.isFalcon()) {
    add("wte", "transformer.word_embeddings.weight", Layout::VocabRows);
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string s = "layers." + std::to_string(i) + ".";
      std::string h = "transformer.h." + std::to_string(i) + ".";
      std::string ln1 = c.normsPerBlock == 2 ? "ln_attn" : "input_layernorm";
      add(s + "ln1.w", h + ln1 + ".weight");
      add(s + "ln1.b", h + ln1 + ".bias");
      if (c.normsPerBlock == 2) {
        add(s + "ln2.w", h + "ln_mlp.weight");
        add(s + "ln2.b", h + "ln_mlp.bias");
      }
      int part = 0;
      for (const char *p : {"q", "k", "v"})
        add(s + "attn." + p + ".w", h + "self_attention.query_key_value.weight",
            Layout::FusedQkvT, part++, 3);
      add(s + "attn.o.w", h + "self_attention.dense.weight",
          Layout::Transposed);
      add(s + "mlp.fc1.w", h + "mlp.dense_h_to_4h.weight", Layout::Transposed);
      add(s + "mlp.fc2.w", h + "mlp.dense_4h_to_h.weight", Layout::Transposed);
    }
    add("ln_f.w", "transformer.ln_f.weight");
    add("ln_f.b", "transformer.ln_f.bias");
  } else {
    add("wte", "model.embed_tokens.weight", Layout::VocabRows);
    for (int64_t i = 0; i < c.layers; ++i) {
      std::string s = "layers." + std::to_string(i) + ".";
      std::string h = "model.layers." + std::to_string(i) + ".";
      add(s + "ln1.w", h + "input_layernorm.weight");
      for (const char *p : {"q", "k", "v", "o"})
        add(s + "attn." + p + ".w", h + "self_attn." + p + "_proj.weight",
            Layout::Transposed);
      add(s + "ln2.w", h + "post_attention_layernorm.weight");
      for (const char *p : {"gate", "up", "down"})
        add(s + "mlp." + p + ".w", h + "mlp." + p + "_proj.weight",
            Layout::Transposed);
    }
    add("ln_f.w", "model.norm.weight");
  }
  if (!c.tieEmbeddings)
    add("lm_head.w", "lm_head.weight", Layout::VocabColsT);
  return r;
}

/// The transformers shape of a parameter of strata shape `s`.
Shape hfShape(const Rule &r, llvm::ArrayRef<int64_t> s, const ModelConfig &c) {
  int64_t vocab = c.vocab;
  switch (r.layout) {
  case Layout::Same: {
    Shape h(s.begin(), s.end());
    h.back() *= r.parts;
    return h;
  }
  case Layout::Transposed:
    return {s[1], s[0]};
  case Layout::VocabRows:
    return {vocab, s[1]};
  case Layout::VocabColsT:
    return {vocab, s[0]};
  case Layout::FusedQkvT:
    return {(c.heads + 2 * c.kvHeads) * c.headDim, s[0]};
  }
  return {};
}

/// Calls `fn(strata index, transformers index)` for every element that
/// rule `r` maps between a strata tensor of shape `s` and its transformers
/// tensor (padding elements have no pair).
template <typename Fn>
void forEachPair(const Rule &r, llvm::ArrayRef<int64_t> s, const ModelConfig &c,
                 Fn fn) {
  int64_t vocab = c.vocab;
  switch (r.layout) {
  case Layout::Same: {
    int64_t n = s.back(), rows = 1;
    for (size_t i = 0; i + 1 < s.size(); ++i)
      rows *= s[i];
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < n; ++j)
        fn(i * n + j, (i * r.parts + r.part) * n + j);
    return;
  }
  case Layout::Transposed:
    for (int64_t i = 0; i < s[0]; ++i)
      for (int64_t j = 0; j < s[1]; ++j)
        fn(i * s[1] + j, j * s[0] + i);
    return;
  case Layout::VocabRows:
    for (int64_t i = 0; i < vocab * s[1]; ++i)
      fn(i, i);
    return;
  case Layout::VocabColsT:
    for (int64_t v = 0; v < vocab; ++v)
      for (int64_t h = 0; h < s[0]; ++h)
        fn(h * s[1] + v, v * s[0] + h);
    return;
  case Layout::FusedQkvT: {
    // Rows of query_key_value are [nkv][G + 2][D] with G = nh / nkv: kv
    // group g holds its G query heads, then its key, then its value. This
    // is new_decoder_architecture's layout, and also Falcon-7B's multi-query
    // one (nkv = 1: all queries, k, v) and the multi-head one (nkv = nh:
    // q, k, v per head).
    int64_t D = c.headDim, G = c.heads / c.kvHeads, H = s[0], n = s[1] / D;
    for (int64_t head = 0; head < n; ++head) {
      int64_t g = r.part == 0 ? head / G : head;
      int64_t slot = r.part == 0 ? head % G : G + r.part - 1;
      for (int64_t d = 0; d < D; ++d)
        for (int64_t i = 0; i < H; ++i)
          fn(i * s[1] + head * D + d, ((g * (G + 2) + slot) * D + d) * H + i);
    }
    return;
  }
  }
}

/// Parameter name -> type, from the graph the frontend builds.
llvm::StringMap<TensorType> paramTypes(const ModelConfig &c) {
  Graph g = buildModelGraph(c);
  llvm::StringMap<TensorType> types;
  for (ValueId v : g.inputs())
    if (g.value(v).name != "tokens" && g.value(v).name != "labels")
      types[g.value(v).name] = g.value(v).type;
  return types;
}

/// Buffers transformers may save that are not parameters: GPT-2's causal
/// mask and Llama's rotary frequencies (older versions persisted them).
bool isKnownBuffer(llvm::StringRef name) {
  return name.endswith(".attn.bias") || name.endswith(".attn.masked_bias") ||
         name.endswith(".rotary_emb.inv_freq");
}

} // namespace

llvm::Expected<std::vector<NamedTensor>>
importHfWeights(const ModelConfig &c, const SafetensorsModel &model) {
  llvm::StringMap<TensorType> types = paramTypes(c);
  std::vector<Rule> rules = rulesOf(c);
  if (rules.size() != types.size())
    return fail(llvm::formatv("internal: {0} import rules for {1} parameters",
                              rules.size(), types.size())
                    .str());
  // Checkpoints saved from the base model (GPT2Model, LlamaModel,
  // FalconModel) lack the "transformer." / "model." prefix.
  auto resolve = [&](const std::string &name) {
    if (model.contains(name))
      return name;
    llvm::StringRef base = name;
    if (base.consume_front("transformer.") || base.consume_front("model."))
      if (model.contains(base))
        return base.str();
    return name;
  };
  llvm::StringSet<> used;
  llvm::StringMap<HostTensor> fused; // c_attn, read once for q, k and v
  llvm::StringMap<HostTensor> out;
  for (const Rule &r : rules) {
    auto it = types.find(r.strata);
    if (it == types.end())
      return fail("internal: no parameter " + r.strata);
    const TensorType &st = it->second;
    std::string name = resolve(r.hf);
    const SafetensorsEntry *e = model.lookup(name);
    if (!e)
      return fail(model.fileOf(name) + ": missing tensor '" + name +
                  "' (config.json's " + c.familyName() +
                  " model needs it for " + r.strata + ")");
    Shape want = hfShape(r, st.shape, c);
    if (e->shape != want)
      return fail(model.fileOf(name) + ": tensor '" + name + "' has shape " +
                  showShape(e->shape) + " but config.json implies " +
                  showShape(want));
    used.insert(name);
    auto cached = fused.find(name);
    if (cached == fused.end()) {
      auto t = model.readF32(name);
      if (!t)
        return t.takeError();
      cached = fused.try_emplace(name, std::move(*t)).first;
    }
    HostTensor p(st); // zeros: the padding stays zero
    float *dst = p.data<float>();
    const float *src = cached->second.data<float>();
    forEachPair(r, st.shape, c, [&](int64_t i, int64_t j) { dst[i] = src[j]; });
    if (r.part == r.parts - 1)
      fused.erase(cached);
    out[r.strata] = std::move(p);
  }
  for (const std::string &name : model.names()) {
    if (used.contains(name) || isKnownBuffer(name))
      continue;
    if (c.tieEmbeddings && name == "lm_head.weight") {
      // A tied head saved anyway must be the embedding.
      auto head = model.readF32(name);
      if (!head)
        return head.takeError();
      const HostTensor &wte = out["wte"];
      if (head->type().shape != Shape{c.vocab, c.hidden} ||
          std::memcmp(head->raw(), wte.raw(), head->bytes()) != 0)
        return fail(
            model.fileOf(name) +
            ": tensor 'lm_head.weight' differs from the "
            "embedding but config.json says tie_word_embeddings (set it to "
            "false for an untied head)");
      continue;
    }
    return fail(model.fileOf(name) + ": unexpected tensor '" + name +
                "' (not part of " + "the " + c.familyName() +
                " model config.json describes; a variant "
                "strata does not implement?)");
  }
  std::vector<NamedTensor> result;
  Graph g = buildModelGraph(c);
  for (ValueId v : g.inputs())
    if (auto it = out.find(g.value(v).name); it != out.end())
      result.push_back({it->first().str(), std::move(it->second)});
  return result;
}

llvm::Expected<std::vector<NamedTensor>>
exportHfWeights(const ModelConfig &c,
                const llvm::StringMap<const HostTensor *> &params) {
  llvm::StringMap<TensorType> types = paramTypes(c);
  std::vector<NamedTensor> result;
  llvm::StringMap<size_t> index; // hf name -> position in result
  for (const Rule &r : rulesOf(c)) {
    auto p = params.find(r.strata);
    if (p == params.end())
      return fail("missing parameter '" + r.strata + "'");
    const HostTensor &t = *p->second;
    if (t.type() != types[r.strata])
      return fail("parameter '" + r.strata + "' is " + t.type().str() +
                  ", the model wants " + types[r.strata].str());
    auto [it, fresh] = index.try_emplace(r.hf, result.size());
    if (fresh)
      result.push_back(
          {r.hf, HostTensor(TensorType{DType::F32, hfShape(r, t.shape(), c)})});
    float *dst = result[it->second].tensor.data<float>();
    const float *src = t.data<float>();
    forEachPair(r, t.shape(), c,
                [&](int64_t i, int64_t j) { dst[j] = src[i]; });
  }
  return result;
}

} // namespace strata
