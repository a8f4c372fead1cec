"""Tiny random transformers models for the import/export tests.

Each case is a transformers config (no download) whose weights are drawn
from a seeded generator and perturbed so that every bias and norm weight is
non-trivial (a swapped or dropped tensor changes the logits). `to_strata`
is this test's own statement of docs/hf.md's parameter mapping, written
from transformers' module definitions (GPT-2's Conv1D is [in, out]; nn.Linear
is [out, in]), used to compare gradients by strata's names.
"""

import torch
import transformers

# name -> (model_type, config kwargs)
CASES = {
    "gpt2": ("gpt2", dict(vocab_size=300, n_positions=32, n_embd=64, n_layer=2,
                          n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)),
    "gpt2_untied": ("gpt2", dict(vocab_size=300, n_positions=32, n_embd=64, n_layer=2,
                                 n_head=4, n_inner=96, resid_pdrop=0.0, embd_pdrop=0.0,
                                 attn_pdrop=0.0, tie_word_embeddings=False,
                                 layer_norm_epsilon=1e-6)),
    # Llama-3 style: GQA, rope_theta 500000.
    "llama": ("llama", dict(vocab_size=300, hidden_size=64, intermediate_size=96,
                            num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2, max_position_embeddings=32,
                            rope_theta=500000.0, rms_norm_eps=1e-5)),
    # Llama-1/2 style MHA with a tied head (CodeLlama: rope_theta 1e6).
    "llama_tied": ("llama", dict(vocab_size=300, hidden_size=64, intermediate_size=128,
                                 num_hidden_layers=2, num_attention_heads=4,
                                 max_position_embeddings=32, rope_theta=1e6,
                                 tie_word_embeddings=True)),
    # Mistral: Llama with sliding-window attention (window 8 < seq 32).
    "mistral": ("mistral", dict(vocab_size=300, hidden_size=64, intermediate_size=96,
                                num_hidden_layers=2, num_attention_heads=4,
                                num_key_value_heads=2, max_position_embeddings=32,
                                sliding_window=8, rope_theta=10000.0)),
    # Falcon-7B layout: multi-query (one KV head), one LayerNorm per block.
    "falcon": ("falcon", dict(vocab_size=300, hidden_size=64, num_hidden_layers=2,
                              num_attention_heads=4, multi_query=True,
                              new_decoder_architecture=False, parallel_attn=True,
                              bias=False, alibi=False, max_position_embeddings=32,
                              hidden_dropout=0.0, attention_dropout=0.0)),
    # Falcon-40B layout: new_decoder_architecture, 2 KV groups, ln_attn and
    # ln_mlp, untied head.
    "falcon_new": ("falcon", dict(vocab_size=300, hidden_size=64, num_hidden_layers=2,
                                  num_attention_heads=4, num_kv_heads=2,
                                  new_decoder_architecture=True, bias=False, alibi=False,
                                  max_position_embeddings=32, rope_theta=20000.0,
                                  hidden_dropout=0.0, attention_dropout=0.0,
                                  tie_word_embeddings=False)),
}


def make_model(case, seed=0):
    model_type, kwargs = CASES[case]
    torch.manual_seed(seed)
    if model_type == "gpt2":
        cfg = transformers.GPT2Config(**kwargs)
        model = transformers.GPT2LMHeadModel(cfg)
    elif model_type == "falcon":
        cfg = transformers.FalconConfig(attn_implementation="eager", **kwargs)
        model = transformers.FalconForCausalLM(cfg)
    elif model_type == "mistral":
        cfg = transformers.MistralConfig(attn_implementation="eager", **kwargs)
        model = transformers.MistralForCausalLM(cfg)
    else:
        cfg = transformers.LlamaConfig(attn_implementation="eager", **kwargs)
        model = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model.float().eval()


def to_strata(model_type, named, layers, tied, falcon_cfg=None):
    """transformers tensors (name -> tensor, no padding) -> strata names and
    layouts (docs/models.md), for gradients."""
    out = {}
    if model_type == "gpt2":
        t = lambda n: named["transformer." + n]
        out["wte"] = t("wte.weight")
        out["wpe"] = t("wpe.weight")
        for i in range(layers):
            h, s = "h.%d." % i, "layers.%d." % i
            out[s + "ln1.w"], out[s + "ln1.b"] = t(h + "ln_1.weight"), t(h + "ln_1.bias")
            w, b = t(h + "attn.c_attn.weight"), t(h + "attn.c_attn.bias")
            for j, p in enumerate("qkv"):
                n = w.shape[1] // 3
                out[s + "attn.%s.w" % p] = w[:, j * n:(j + 1) * n]
                out[s + "attn.%s.b" % p] = b[j * n:(j + 1) * n]
            out[s + "attn.o.w"], out[s + "attn.o.b"] = t(h + "attn.c_proj.weight"), t(h + "attn.c_proj.bias")
            out[s + "ln2.w"], out[s + "ln2.b"] = t(h + "ln_2.weight"), t(h + "ln_2.bias")
            out[s + "mlp.fc1.w"], out[s + "mlp.fc1.b"] = t(h + "mlp.c_fc.weight"), t(h + "mlp.c_fc.bias")
            out[s + "mlp.fc2.w"], out[s + "mlp.fc2.b"] = t(h + "mlp.c_proj.weight"), t(h + "mlp.c_proj.bias")
        out["ln_f.w"], out["ln_f.b"] = t("ln_f.weight"), t("ln_f.bias")
    elif model_type == "falcon":
        t = lambda n: named["transformer." + n]
        cfg = falcon_cfg
        nh, D = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
        nkv = cfg.num_kv_heads if cfg.new_decoder_architecture else (1 if cfg.multi_query else nh)
        G = nh // nkv
        out["wte"] = t("word_embeddings.weight")
        for i in range(layers):
            h, s = "h.%d." % i, "layers.%d." % i
            if cfg.new_decoder_architecture:
                out[s + "ln1.w"], out[s + "ln1.b"] = t(h + "ln_attn.weight"), t(h + "ln_attn.bias")
                out[s + "ln2.w"], out[s + "ln2.b"] = t(h + "ln_mlp.weight"), t(h + "ln_mlp.bias")
            else:
                out[s + "ln1.w"] = t(h + "input_layernorm.weight")
                out[s + "ln1.b"] = t(h + "input_layernorm.bias")
            # query_key_value rows: [kv group][G queries, key, value][D].
            w = t(h + "self_attention.query_key_value.weight").reshape(nkv, G + 2, D, -1)
            out[s + "attn.q.w"] = w[:, :G].reshape(nh * D, -1).T
            out[s + "attn.k.w"] = w[:, G].reshape(nkv * D, -1).T
            out[s + "attn.v.w"] = w[:, G + 1].reshape(nkv * D, -1).T
            out[s + "attn.o.w"] = t(h + "self_attention.dense.weight").T
            out[s + "mlp.fc1.w"] = t(h + "mlp.dense_h_to_4h.weight").T
            out[s + "mlp.fc2.w"] = t(h + "mlp.dense_4h_to_h.weight").T
        out["ln_f.w"], out["ln_f.b"] = t("ln_f.weight"), t("ln_f.bias")
    else:
        t = lambda n: named["model." + n]
        out["wte"] = t("embed_tokens.weight")
        for i in range(layers):
            h, s = "layers.%d." % i, "layers.%d." % i
            out[s + "ln1.w"] = t(h + "input_layernorm.weight")
            for p in "qkvo":
                out[s + "attn.%s.w" % p] = t(h + "self_attn.%s_proj.weight" % p).T
            out[s + "ln2.w"] = t(h + "post_attention_layernorm.weight")
            for p in ("gate", "up", "down"):
                out[s + "mlp.%s.w" % p] = t(h + "mlp.%s_proj.weight" % p).T
        out["ln_f.w"] = t("norm.weight")
    if not tied:
        out["lm_head.w"] = named["lm_head.weight"].T
    return {k: v.detach().contiguous().float() for k, v in out.items()}
