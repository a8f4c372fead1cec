#!/usr/bin/env python3
"""`strata estimate` end to end (usage: estimate_cli.py STRATA GPT_TINY_SPEC).

Checks the JSON against quantities computed here from the spec and against
`strata inspect --json` of the same layout compiled to a plan: tokens per
step = micro_batch * dp * microbatches * seq_len, tokens_per_s = tokens /
step_time, the breakdown sums to the step time, 0 < mfu <= hfu < 1, the peak
memory is the plan's; the spec and the compiled plan estimate alike; the
trace is Chrome's format with a row per device; bad input fails with
strata's error form.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

STRATA, SPEC = sys.argv[1], sys.argv[2]
LAYOUT = ["--tp", "2", "--dp", "2", "--pp", "2", "--microbatches", "4"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([STRATA, *args], capture_output=True, text=True)


def close(a, b, rel=1e-9):
    # JSON doubles round-trip to ~1e-15; 1e-9 leaves room for the sums.
    return abs(a - b) <= rel * max(abs(a), abs(b))


def spec_field(name):
    m = re.search(r"^%s:\s*(\d+)" % name, open(SPEC).read(), re.M)
    return int(m.group(1))


with tempfile.TemporaryDirectory() as tmp:
    trace = os.path.join(tmp, "trace.json")
    r = run("estimate", SPEC, "--cluster", "a100-80gb", *LAYOUT, "--json",
            "--trace", trace, "--precision", "bf16")
    check(r.returncode == 0, "estimate failed: " + r.stderr)
    e = json.loads(r.stdout)
    for field in ["step_time_s", "tokens_per_s", "mfu", "hfu",
                  "peak_memory_bytes", "breakdown", "devices"]:
        check(field in e, "missing field " + field)
    # micro_batch is per data-parallel rank (dp 2 here), as Megatron-LM's.
    tokens = spec_field("micro_batch") * 2 * 4 * spec_field("seq_len")
    check(e["tokens_per_step"] == tokens,
          "tokens_per_step %s, the spec says %d" % (e["tokens_per_step"],
                                                   tokens))
    check(close(e["tokens_per_s"] * e["step_time_s"], tokens),
          "tokens_per_s * step_time_s != tokens per step")
    check(close(sum(e["breakdown"].values()), e["step_time_s"]),
          "the breakdown does not sum to the step time")
    check(0 < e["mfu"] <= e["hfu"] < 1, "mfu/hfu out of (0,1)")
    check(e["devices"] == 8, "devices %s, want 8" % e["devices"])
    check(close(e["mfu"], e["model_flops_per_step"] /
                (e["step_time_s"] * 8 * 312e12)),
          "mfu is not model FLOPs / (step time * devices * bf16 peak)")

    plan = os.path.join(tmp, "tiny.plan")
    r = run("compile", SPEC, "-o", plan, *LAYOUT)
    check(r.returncode == 0, "compile failed: " + r.stderr)
    inspect = json.loads(run("inspect", plan, "--json").stdout)
    peaks = [rank["peak"] for rank in inspect["memory"]["ranks"]]
    check(e["peak_memory_bytes"] == max(peaks),
          "peak memory %d, inspect says %d" % (e["peak_memory_bytes"],
                                               max(peaks)))
    check(e["peak_memory_per_rank"] == peaks, "per-rank peaks differ")
    check(e["model_flops_per_step"] == inspect["flops"]["model_per_step"],
          "model FLOPs differ from inspect's")
    r = run("estimate", plan, "--cluster", "a100-80gb", "--json",
            "--precision", "bf16")
    check(r.returncode == 0, "estimate of the plan failed: " + r.stderr)
    check(close(json.loads(r.stdout)["step_time_s"], e["step_time_s"]),
          "the plan and its spec estimate differently")

    t = json.load(open(trace))
    spans = [ev for ev in t["traceEvents"] if ev["ph"] == "X"]
    check({ev["pid"] for ev in spans} == set(range(8)),
          "trace rows are not the 8 devices")
    programs = [ev for ev in spans if ev["cat"] == "program"]
    # Each device: 4 F, 4 B and the optimizer.
    check(len(programs) == 8 * 9, "%d program spans, want 72" % len(programs))
    end = max(ev["ts"] + ev["dur"] for ev in spans)
    check(abs(end - e["step_time_s"] * 1e6) <= 2,  # microsecond rounding
          "the trace ends at %d us, the step at %g s" % (end,
                                                        e["step_time_s"]))

    errors = [
        (["--cluster", "a100"], "unknown cluster 'a100'"),
        (["--cluster", "a100-80gb", "--nodes", "1", "--dp", "4", "--tp",
          "4"], "the layout needs 16 devices"),
        (["--cluster", "v100-dgx2h", "--precision", "tf32"], "has no tf32"),
        (["--cluster", "a100-80gb", "--precision", "fp8"],
         "--precision must be f32, tf32 or bf16"),
    ]
    for args, want in errors:
        r = run("estimate", SPEC, *args)
        check(r.returncode == 1 and r.stderr.startswith(
            "strata estimate: error: ") and want in r.stderr,
              "%s: rc %d, stderr %r" % (args, r.returncode, r.stderr))
    r = run("estimate", plan, "--cluster", "a100-80gb", "--tp", "2")
    check(r.returncode == 1 and "--tp applies to a model spec" in r.stderr,
          "a layout flag with a plan: " + r.stderr)
    bad = os.path.join(tmp, "bad.textproto")
    open(bad, "w").write("name: \"x\"\naccelerator { peak_f32_flops: -1 }\n")
    r = run("estimate", SPEC, "--cluster", bad)
    check(r.returncode == 1 and "must be > 0" in r.stderr,
          "a bad hardware file: " + r.stderr)
    open(bad, "w").write("name: \"x\"\nbogus: 3\n")
    r = run("estimate", SPEC, "--cluster", bad)
    check(r.returncode == 1 and r.stderr.startswith(
        "strata estimate: error: %s:2:" % bad) and
          "unknown field 'bogus'" in r.stderr,
          "an unknown field: " + r.stderr)

for f in failures:
    print("FAIL:", f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
