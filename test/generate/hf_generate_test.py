#!/usr/bin/env python3
"""strata generate against Hugging Face transformers' own cached generation.

A tiny random GPT-2 and Llama (GQA, rope_theta) are saved with
save_pretrained (no download), imported with `strata import-hf`, and
greedy-decoded by `strata generate --json --tokenizer byte` from several
prompts, batched, with and without the key/value cache. transformers'
`generate(do_sample=False, use_cache=True)` (its own KV cache) from the same
ids must give the same tokens. Weights are redrawn so logits spread over
several units (norm gains near 1, weights ~ N(0, 1/fan_in)): greedy steps
are then far from ties, and float rounding cannot flip a token.

usage: hf_generate_test.py STRATA_BINARY   (run with the test venv's python)
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
import transformers

STRATA = sys.argv[1]
PROMPTS = ["ROMEO:", "To be, or not", "x"]
NEW = 40

CASES = {
    "gpt2": lambda: transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)),
    "llama": lambda: transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        rope_theta=500000.0, rms_norm_eps=1e-5)),
}


def spread_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                base = 1.0 if ("ln" in name or "norm" in name) and "bias" not in name else 0.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))
            else:
                # A tied head reads the token table: a large one makes the
                # model repeat its input token.
                std = 0.25 if ("wte" in name or "embed" in name) else \
                    0.5 if "wpe" in name else min(p.shape) ** -0.5
                p.copy_(std * torch.randn(p.shape, generator=g))


def strata_generate(ckpt, extra):
    args = [STRATA, "generate", ckpt, "--json", "--tokenizer", "byte", "--tokens",
            str(NEW), "--temperature", "0", "--context", "stop", *extra]
    for p in PROMPTS:
        args += ["--prompt", p]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [json.loads(line)["tokens"] for line in r.stdout.strip().split("\n")]


def main():
    torch.manual_seed(0)
    for case, make in CASES.items():
        model = make()
        spread_weights(model, 1)
        model.eval()
        with tempfile.TemporaryDirectory() as tmp:
            model.save_pretrained(os.path.join(tmp, "hf"), safe_serialization=True)
            r = subprocess.run([STRATA, "import-hf", os.path.join(tmp, "hf"), "-o",
                                os.path.join(tmp, "imported")],
                               capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
            ckpt = os.path.join(tmp, "imported", "checkpoint.bin")
            cached = strata_generate(ckpt, [])
            uncached = strata_generate(ckpt, ["--no-kv-cache"])
        for i, prompt in enumerate(PROMPTS):
            ids = torch.tensor([list(prompt.encode())])
            ref = model.generate(ids, attention_mask=torch.ones_like(ids),
                                 max_new_tokens=NEW, do_sample=False, use_cache=True,
                                 pad_token_id=0)[0, ids.shape[1]:].tolist()
            assert cached[i] == ref, (case, prompt, cached[i], ref)
            assert uncached[i] == ref, (case, prompt, uncached[i], ref)
            assert len(set(ref)) > 5, (case, prompt, ref)  # not one repeated token
        print(f"{case}: {len(PROMPTS)} prompts x {NEW} greedy tokens equal transformers")
    print("hf_generate_test: ok")


if __name__ == "__main__":
    main()
