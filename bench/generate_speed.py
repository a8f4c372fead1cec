#!/usr/bin/env python3
"""Generation speed: tokens/s for 512 new tokens with and without the cache.

Trains a character GPT with a 1024-token context for one step on Tiny
Shakespeare (the weights do not matter for speed), then times
`strata generate --tokens 512 --temperature 0` with the key/value cache and
with --no-kv-cache (the whole forward graph per token), checks both give the
same tokens, and prints tokens/s and the ratio. Wall time of the whole
command (checkpoint load and prefill included), best of ROUNDS.

usage: bench/generate_speed.py [--strata PATH] [--rounds N] [--family gpt|llama]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

SPEC = """
name: "gen-bench-{family}"
family: {FAMILY}
vocab_size: 65
hidden: 256
layers: 4
heads: 8
{kv}
seq_len: 1024
micro_batch: 1
training {{ steps: 1 eval_every: 0 }}
data {{ path: "{data}" tokenizer: CHAR }}
"""


def run(cmd):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", default=os.environ.get(
        "STRATA", os.path.join(HERE, "..", "build", "tools", "strata", "strata")))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--family", default="gpt", choices=["gpt", "llama"])
    a = ap.parse_args()
    data = os.path.join(HERE, "..", "..", "shared", "data", "tinyshakespeare.txt")
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "spec.textproto")
        with open(spec, "w") as f:
            f.write(SPEC.format(family=a.family, FAMILY=a.family.upper(),
                                kv="kv_heads: 4" if a.family == "llama" else "",
                                data=os.path.abspath(data)))
        subprocess.run([a.strata, "train", spec, "--out", os.path.join(tmp, "run"),
                        "--sample", "0"], check=True, capture_output=True)
        ckpt = os.path.join(tmp, "run", "checkpoint.bin")
        base = [a.strata, "generate", ckpt, "--prompt", "ROMEO:", "--tokens",
                str(a.tokens), "--temperature", "0", "--json"]
        results = {}
        for name, extra in [("kv-cache", []), ("no-cache", ["--no-kv-cache"])]:
            best, tokens = None, None
            for _ in range(a.rounds):
                secs, out = run(base + extra)
                tokens = json.loads(out)["tokens"]
                best = secs if best is None else min(best, secs)
            results[name] = (best, tokens)
            print(f"{name:9s} {len(tokens)} tokens in {best:7.2f} s: "
                  f"{len(tokens) / best:8.1f} tokens/s", flush=True)
        same = results["kv-cache"][1] == results["no-cache"][1]
        ratio = results["no-cache"][0] / results["kv-cache"][0]
        print(f"speed-up {ratio:.1f}x; same tokens: {same}")
        if not same:
            raise SystemExit("cached and uncached generation differ")


if __name__ == "__main__":
    main()
