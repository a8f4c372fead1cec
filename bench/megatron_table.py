#!/usr/bin/env python3
"""Predicted vs published: `strata estimate` on Megatron-LM's GPT runs.

Usage: bench/megatron_table.py [STRATA] (default build/tools/strata/strata)

Runs `strata estimate` on examples/megatron/*.textproto with the layouts of
Narayanan et al. 2021 (Table 1, and the 1536-GPU PTD-P row of Table 2 for
GPT-3 175B) on the a100-80gb cluster: bf16 mixed precision, full activation
recomputation, the 1F1B schedule, micro-batch size 1. The paper reports
hardware teraFLOP/s per GPU with recomputation counted (its eq. 3), which is
strata's HFU times the 312 TFLOP/s bf16 peak. Prints a Markdown table with
the error of each prediction and how long each estimate took (compile and
simulation together).
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STRATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    ROOT, "build/tools/strata/strata")

# spec, tp, pp, GPUs, global batch, published TFLOP/s per GPU (source).
RUNS = [
    ("gpt_1.7b", 1, 1, 32, 512, 137, "Table 1"),
    ("gpt_3.6b", 2, 1, 64, 512, 138, "Table 1"),
    ("gpt_7.5b", 4, 1, 128, 512, 142, "Table 1"),
    ("gpt_18.4b", 8, 1, 256, 1024, 135, "Table 1"),
    ("gpt_39.1b", 8, 2, 512, 1536, 138, "Table 1"),
    ("gpt_76.1b", 8, 4, 1024, 1792, 140, "Table 1"),
    ("gpt_145.6b", 8, 8, 1536, 2304, 148, "Table 1"),
    ("gpt_310.1b", 8, 16, 1920, 2160, 155, "Table 1"),
    ("gpt_529.6b", 8, 35, 2520, 2520, 163, "Table 1"),
    ("gpt_1008b", 8, 64, 3072, 3072, 163, "Table 1"),
    ("gpt3_175b", 8, 12, 1536, 1536, 141, "Table 2"),
]

print("| model | tp | pp | dp | GPUs | published TFLOP/s | predicted "
      "TFLOP/s | error | predicted MFU | step time | peak memory (f32 plan) "
      "| estimate took |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for spec, tp, pp, gpus, batch, published, source in RUNS:
    dp = gpus // (tp * pp)
    args = [STRATA, "estimate",
            os.path.join(ROOT, "examples/megatron", spec + ".textproto"),
            "--cluster", "a100-80gb", "--tp", str(tp), "--pp", str(pp),
            "--dp", str(dp), "--recompute", "full", "--precision", "bf16",
            "--json"]
    start = time.time()
    r = subprocess.run(args, capture_output=True, text=True)
    took = time.time() - start
    if r.returncode != 0:
        print("| %s | %d | %d | %d | %d | %d | failed: %s |" %
              (spec, tp, pp, dp, gpus, published, r.stderr.strip()))
        continue
    e = json.loads(r.stdout)
    predicted = e["hfu"] * e["peak_flops_per_device"] / 1e12
    print("| %s (%s) | %d | %d | %d | %d | %d | %.0f | %+.0f%% | %.1f%% | "
          "%.2f s | %.1f GiB | %.1f s |" %
          (spec, source, tp, pp, dp, gpus, published, predicted,
           100 * (predicted - published) / published, 100 * e["mfu"],
           e["step_time_s"], e["peak_memory_bytes"] / 2**30, took))
