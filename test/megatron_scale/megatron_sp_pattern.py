#!/usr/bin/env python3
"""GPT-3 175B at Megatron-LM's layout: tensor-parallel traffic to the byte.

usage: megatron_sp_pattern.py STRATA GPT3_175B_SPEC

Compiles GPT-3 175B (h 12288, 96 heads, 96 layers, seq 2048, vocab 51200,
micro batch 1) with tp 8, sequence parallelism, pp 8, 1F1B and selective
recompute, and checks `strata inspect --json` against Megatron-LM's hand
count of a sequence-parallel transformer layer (Korthikanti et al. 2022,
section 4.2.2): per layer and microbatch the forward does 2 all-gathers and
2 reduce-scatters of the s*b*h activation, the backward 2 re-gathers (the
norm outputs kept sequence-split), 2 all-gathers and 2 reduce-scatters, all of
s*b*h. Besides these only vector-sized all-reduces of the norm weights'
gradients (Megatron's allreduce of sequence-parallel parameters' gradients)
may touch the tp group inside a layer; no tp collective carries a weight-
sized (h x h) tensor. The planned workspace stays below 2 GiB per device:
each microbatch's weight gradients are added into the gradient buffers where
they are made (Megatron's gradient accumulation fusion), not kept in the
workspace until the program ends. The same with dp 8 (micro batch 1 per
data-parallel rank) compiles, with the same tp traffic.
"""
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter

STRATA, SPEC = sys.argv[1], sys.argv[2]
S, H, B, TP = 2048, 12288, 1, 8
# The spec trains in bf16; this test compiles it in f32 (--precision f32)
# and counts f32 bytes. (In bf16 the same collectives carry 2-byte
# elements, except one all-gather in the first stage's backward, which
# carries the embedding's gradient in f32: docs/mixed-precision.md.)
ACTIVATION = S * B * H * 4  # f32 bytes of the whole s*b*h tensor
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def compile_and_inspect(tmp, extra):
    plan = f"{tmp}/p{len(extra)}.plan"
    args = [STRATA, "compile", SPEC, "--tp", str(TP), "--sp", "--pp", "8",
            "--schedule", "1f1b", "--recompute", "selective",
            "--micro-batch", str(B), "--precision", "f32", "-o", plan,
            *extra]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compile failed: {' '.join(args)}\n{r.stderr}")
    r = subprocess.run([STRATA, "inspect", plan, "--json"],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def layer_of(src):
    m = re.match(r"layers\.(\d+)\.", src)
    return int(m.group(1)) if m else None


def check_plan(summary, label, workspace_limit):
    micro = summary["parallel"]["microbatches"]
    stages = summary["parallel"]["stages"]
    pp = max(s["rank"] for s in stages) + 1
    for rank in summary["collectives"]["ranks"]:
        r = rank["rank"]
        layers = sum(s["num_layers"] for s in stages if s["rank"] == r)
        got = Counter()
        for c in rank["collectives"]:
            if c["group"] != "tp":
                continue
            check(c["bytes"] < H * H * 4,
                  f"{label}: rank {r}: a tp {c['op']} of {c['bytes']} bytes "
                  f"carries a weight-sized tensor ({c['src']}: {c['reason']})")
            if c["program"] == "optimizer":
                continue
            check(c["runs_per_step"] == micro,
                  f"{label}: {c['program']} {c['op']} runs "
                  f"{c['runs_per_step']} times, not once per microbatch")
            kind = "F" if c["program"].endswith(" F") else "B"
            if c["op"] == "all_reduce":
                # The norm weights' and biases' gradients (vectors of h
                # floats) and the vocab-parallel loss's per-token scalars.
                check(c["bytes"] in (H * 4, S * B * 4),
                      f"{label}: rank {r}: unexpected all_reduce of "
                      f"{c['bytes']} bytes ({c['src']}: {c['reason']})")
                continue
            # Counted per rank: a collective is named after the node that
            # made the value it moves, so the gradient gathered for a stage's
            # last layer names the next stage's first layer (or ln_f).
            got[(kind, c["op"], c["bytes"])] += 1
        want = Counter({("F", "all_gather", ACTIVATION): 2 * layers,
                        ("F", "reduce_scatter", ACTIVATION): 2 * layers,
                        ("B", "all_gather", ACTIVATION): 4 * layers,
                        ("B", "reduce_scatter", ACTIVATION): 2 * layers})
        if r == 0:
            # The vocab-parallel embedding's output is reduce-scattered
            # along the sequence; its gradient is all-gathered back for the
            # wte gradient, and the wpe gradient (s x h, a sum over the batch
            # of the split gradient) is gathered too. Megatron all-reduces
            # the embedding (2 reduce-scatters' traffic) and gathers its
            # gradient once: the same bytes on the wire.
            want[("F", "reduce_scatter", ACTIVATION)] += 1
            want[("B", "all_gather", ACTIVATION)] += 2
        if r == pp - 1:
            # The head's input is gathered (and re-gathered for its weight
            # gradient); its input gradient is reduce-scattered.
            want[("F", "all_gather", ACTIVATION)] += 1
            want[("B", "all_gather", ACTIVATION)] += 1
            want[("B", "reduce_scatter", ACTIVATION)] += 1
        check(layers > 0 and got == want,
              f"{label}: rank {r} ({layers} layers): tp collectives "
              f"{dict(got)}, Megatron's pattern is {dict(want)}")
    for m in summary["memory"]["ranks"]:
        check(not workspace_limit or m["workspace"] < 2 * 1024**3,
              f"{label}: rank {m['rank']} plans "
              f"{m['workspace'] / 2**30:.2f} GiB of workspace (more than "
              f"2 GiB)")


with tempfile.TemporaryDirectory() as tmp:
    check_plan(compile_and_inspect(tmp, []), "tp 8 sp pp 8", True)
    # With dp 8 the gradients are reduced over dp in place in their buffers
    # (docs/multi-gpu.md): the optimizer holds no reduced copy either.
    check_plan(compile_and_inspect(tmp, ["--dp", "8"]), "tp 8 sp pp 8 dp 8",
               True)

for f in failures[:20]:
    print("FAIL:", f)
if failures:
    sys.exit(f"{len(failures)} checks failed")
print("OK: Megatron's sequence-parallel pattern, to the byte")
