"""Llama-3.1 RoPE scaling ("llama3") through import-hf / eval / export-hf.

  hf_rope_scaling.py --strata BIN --out DIR

transformers 4.38.2 (the pinned reference) predates rope_type "llama3", so
the reference is built here: a random tiny LlamaForCausalLM whose rotary
embeddings' inv_freq buffers are overwritten with the llama3 frequencies,
computed below from the published definition (transformers'
_compute_llama3_parameters, Meta's apply_scaling): with f_i =
theta^(-2i/D), wavelength w_i = 2 pi / f_i and L the original context,
  w_i < L / high_freq_factor: f_i;   w_i > L / low_freq_factor: f_i / factor;
  otherwise (1 - a) f_i / factor + a f_i,  a = (L / w_i - low) / (high - low).
head_dim 16, theta 5e5 and L = 64 put the 8 frequencies in all three
regimes (f_0 kept, f_1 blended, f_2.. divided), and positions run to 31.

1. save_pretrained, then config.json gets the rope_scaling object Llama 3.1
   ships (rope_type, factor, low/high_freq_factor,
   original_max_position_embeddings).
2. `strata import-hf` + `eval --dump-logits`: logits equal the patched
   model's within 1e-4 x max|logit| (the tolerance of hf_parity.py: f32 on
   both sides, different summation orders; the reference's f32 inv_freq
   adds ~3e-6 rad at position 31). The unscaled model's logits must be
   farther than 100x that tolerance, so the check cannot pass without the
   scaling.
3. `strata export-hf`: config.json's rope_scaling equals the input's and
   every tensor equals the original's bit for bit (4.38.2's from_pretrained
   refuses rope_type "llama3", so the safetensors are compared directly);
   import(export(x)) is byte-identical.
4. `strata verify` of the imported spec with tp 2 x pp 2 --sp (a sequence
   shard rotates from its global position with the scaled table).
5. For HfGradTest (case llama31): the patched model's loss and every
   gradient on one batch, as hf_parity.py writes them.
6. Greedy `strata generate` (key/value-cache decoder, and --no-kv-cache)
   of a second patched model (byte vocabulary, weights spread as in
   test/generate/hf_generate_test.py so that greedy decoding does not
   repeat one token) equals transformers' generate(), token for token.
"""

import argparse
import filecmp
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import hf_models  # noqa: E402
import tensor_archive  # noqa: E402
from hf_parity import LOGIT_RTOL, check_close, run  # noqa: E402

SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
           "high_freq_factor": 4.0, "original_max_position_embeddings": 64}


def llama3_inv_freq(dim, theta, s):
    """The published llama3 formula, in float64."""
    out = []
    L, lo, hi = s["original_max_position_embeddings"], s["low_freq_factor"], s["high_freq_factor"]
    for i in range(0, dim, 2):
        f = 1.0 / theta ** (i / dim)
        w = 2 * math.pi / f
        if w < L / hi:
            out.append(f)
        elif w > L / lo:
            out.append(f / s["factor"])
        else:
            a = (L / w - lo) / (hi - lo)
            out.append((1 - a) * f / s["factor"] + a * f)
    return torch.tensor(out, dtype=torch.float64)


def patch_rope(model, inv_freq):
    """Every layer's rotary embedding gets `inv_freq`; the cos/sin caches
    (kept for backward compatibility, unused by 4.38's forward) follow."""
    for layer in model.model.layers:
        rot = layer.self_attn.rotary_emb
        rot.inv_freq = inv_freq.to(torch.float32)
        t = torch.arange(rot.max_seq_len_cached, dtype=torch.float32)
        emb = torch.cat([torch.outer(t, rot.inv_freq)] * 2, dim=-1)
        rot._cos_cached, rot._sin_cached = emb.cos(), emb.sin()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    S = a.strata
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    d = lambda *p: os.path.join(a.out, *p)

    model = hf_models.make_model("llama")
    cfg = model.config
    seq, vocab = cfg.max_position_embeddings, cfg.vocab_size
    D = cfg.hidden_size // cfg.num_attention_heads
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (seq,), generator=gen).tolist()
    with torch.no_grad():
        unscaled = model(torch.tensor([ids])).logits[0].numpy()
    inv_freq = llama3_inv_freq(D, cfg.rope_theta, SCALING)
    plain = llama3_inv_freq(D, cfg.rope_theta, dict(SCALING, factor=1.0))
    regimes = ["kept" if f == p else "divided" if abs(f - p / 8) < 1e-15 else "blended"
               for f, p in zip(inv_freq.tolist(), plain.tolist())]
    assert {"kept", "blended", "divided"} <= set(regimes), regimes
    patch_rope(model, inv_freq)

    # 1. The checkpoint Llama 3.1 would ship.
    model.save_pretrained(d("hf"), safe_serialization=True)
    with open(d("hf", "config.json")) as f:
        config = json.load(f)
    config["rope_scaling"] = SCALING
    with open(d("hf", "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    # 2. Import, logits.
    run([S, "import-hf", d("hf"), "-o", d("imported")])
    ckpt = d("imported", "checkpoint.bin")
    run([S, "eval", ckpt, "--dump-logits", d("logits.npy"),
         "--input-ids", ",".join(map(str, ids))])
    with torch.no_grad():
        want = model(torch.tensor([ids])).logits[0].numpy()
    got = np.load(d("logits.npy"))
    check_close("logits (llama3 rope scaling)", got, want, LOGIT_RTOL)
    away = np.abs(got - unscaled).max() / np.abs(want).max()
    print("unscaled model's logits are %.3g x max|logit| away" % away)
    if away < 100 * LOGIT_RTOL:
        sys.exit("FAIL: the scaled and unscaled logits are too close to tell apart")

    # 3. Export and round trip.
    run([S, "export-hf", ckpt, "-o", d("exported")])
    with open(d("exported", "config.json")) as f:
        back = json.load(f)
    if back.get("rope_scaling") != SCALING:
        sys.exit("FAIL: exported rope_scaling %r, expected %r" % (back.get("rope_scaling"), SCALING))
    tensors = load_file(d("exported", "model.safetensors"))
    orig = model.state_dict()
    for name, t in tensors.items():
        if not torch.equal(t, orig[name]):
            sys.exit("FAIL: exported tensor %s differs from the original" % name)
    missing = {n for n in orig if not n.endswith("inv_freq") and "cached" not in n} - set(tensors)
    if missing:
        sys.exit("FAIL: export lacks %s" % sorted(missing))
    print("export-hf: rope_scaling and every tensor equal the original")
    run([S, "import-hf", d("exported"), "-o", d("reimported")])
    if not filecmp.cmp(ckpt, d("reimported", "checkpoint.bin"), shallow=False):
        sys.exit("FAIL: import(export(x)) is not byte-identical to x")
    print("import(export(x)) == x, byte for byte")

    # 4. Parallel = serial with the scaled table.
    par = ["--tp", "2", "--pp", "2", "--sp"]
    r = run([S, "verify", d("imported", "model.textproto")] + par)
    print(" ".join(par) + ": " + r.stdout.strip().splitlines()[-1])

    # 5. Loss and gradients for HfGradTest (no vocab padding).
    run([S, "import-hf", d("hf"), "-o", d("unpadded"), "--vocab-multiple", "1"])
    model.zero_grad()
    tokens = torch.randint(0, vocab, (1, seq), generator=gen)
    labels = torch.randint(0, vocab, (1, seq), generator=gen)
    loss = F.cross_entropy(model(tokens).logits.view(-1, vocab), labels.view(-1))
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    mapped = hf_models.to_strata("llama", grads, cfg.num_hidden_layers, False)
    arch = {"tokens": tokens.to(torch.int32), "labels": labels.to(torch.int32),
            "loss": loss.detach()}
    arch.update({"grad." + k: v for k, v in mapped.items()})
    tensor_archive.write(d("grads"), arch)
    print("wrote %d gradients for HfGradTest" % len(mapped))

    check_generate(S, a.out)


def check_generate(S, out):
    """Step 6: cached and uncached greedy generation against transformers."""
    import transformers
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        rope_theta=500000.0, rms_norm_eps=1e-5, attn_implementation="eager"))
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                std = 0.25 if "embed" in name else min(p.shape) ** -0.5
                p.copy_(std * torch.randn(p.shape, generator=g))
    model.eval()
    patch_rope(model, llama3_inv_freq(16, 500000.0, SCALING))
    model.save_pretrained(os.path.join(out, "gen_hf"), safe_serialization=True)
    with open(os.path.join(out, "gen_hf", "config.json")) as f:
        config = json.load(f)
    config["rope_scaling"] = SCALING
    with open(os.path.join(out, "gen_hf", "config.json"), "w") as f:
        json.dump(config, f)
    run([S, "import-hf", os.path.join(out, "gen_hf"), "-o", os.path.join(out, "gen")])
    prompts, new = ["ROMEO:", "To be, or not"], 24
    for extra in ([], ["--no-kv-cache"]):
        args = [S, "generate", os.path.join(out, "gen", "checkpoint.bin"), "--json",
                "--tokenizer", "byte", "--tokens", str(new), "--temperature", "0",
                "--context", "stop"] + extra
        for p in prompts:
            args += ["--prompt", p]
        r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            sys.exit("FAIL: %s\n%s" % (" ".join(args), r.stderr))
        got = [json.loads(line)["tokens"] for line in r.stdout.strip().split("\n")]
        for i, p in enumerate(prompts):
            ids = torch.tensor([list(p.encode())])
            ref = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                 do_sample=False, use_cache=True,
                                 pad_token_id=0)[0, ids.shape[1]:].tolist()
            if got[i] != ref or len(set(ref)) <= 5:
                sys.exit("FAIL generate %s %r: strata %s, transformers %s"
                         % (extra, p, got[i], ref))
    print("generate (cached and uncached): %d prompts x %d greedy tokens equal transformers"
          % (len(prompts), new))


if __name__ == "__main__":
    main()
