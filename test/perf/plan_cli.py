"""`strata plan` end to end (issue 17).

usage: plan_cli.py STRATA REPO

- GPT-3 175B (examples/megatron/gpt3_175b.textproto, whose spec trains in
  bf16: the test checks it does, and that plan compiles, simulates and
  memory-checks the candidates at that precision, on the hardware's bf16
  rate by default) on 1536 A100-80GB at global batch 1536: the winner's predicted MFU is at least what
  `strata estimate` predicts for the configuration Narayanan et al. 2021
  published for that setting (Table 2's PTD-P row: tp 8, pp 12, dp 16,
  micro batch 1, full recomputation; the better of 1F1B and interleaved V=2,
  since the table does not say which schedule), and every plan it prints
  fits: `strata estimate` of the winner's layout, run on its own, says
  fits with the same step time and peak memory;
- -o compiles the winner: `strata inspect --json` of the file has its
  layout;
- bad input fails in strata's error form.
"""
import json
import os
import subprocess
import sys
import tempfile

STRATA, REPO = sys.argv[1], sys.argv[2]
GPT3 = os.path.join(REPO, "examples/megatron/gpt3_175b.textproto")
TINY = os.path.join(REPO, "examples/gpt_tiny.textproto")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg)


def run(*args):
    return subprocess.run([STRATA, *args], capture_output=True, text=True)


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def estimate(spec, *flags):
    r = run("estimate", spec, "--cluster", "a100-80gb", "--precision", "bf16",
            "--json", *flags)
    check(r.returncode == 0, "estimate %s failed: %s" % (flags, r.stderr))
    return json.loads(r.stdout)


def layout_flags(p):
    flags = ["--tp", str(p["tp"]), "--pp", str(p["pp"]), "--dp", str(p["dp"]),
             "--micro-batch", str(p["micro_batch"]),
             "--microbatches", str(p["microbatches"]),
             "--schedule", p["schedule"], "--recompute", p["recompute"]]
    if p["sp"]:
        flags.append("--sp")
    if p["distributed_optimizer"]:
        flags.append("--distributed-optimizer")
    if p["recompute"] == "auto":
        flags += ["--memory-budget", str(80 << 30)]
    return flags


with open(GPT3) as f:
    check("precision: BF16" in f.read(),
          "the GPT-3 175B example no longer trains in bf16")
# No --precision: a bf16 spec runs at the hardware's bf16 rate.
r = run("plan", GPT3, "--cluster", "a100-80gb", "--gpus", "1536",
        "--global-batch", "1536", "--top", "3", "--json")
check(r.returncode == 0, "plan failed: " + r.stderr)
plan = json.loads(r.stdout)
check(plan["training_precision"] == "bf16" and plan["precision"] == "bf16",
      "plan of the bf16 spec: training %s on the %s rate"
      % (plan["training_precision"], plan["precision"]))
best = plan["plans"][0]
published = max(
    estimate(GPT3, "--tp", "8", "--pp", "12", "--dp", "16", "--micro-batch",
             "1", "--microbatches", "96", "--recompute", "full",
             "--schedule", s)["mfu"] for s in ["1f1b", "interleaved:2"])
check(best["mfu"] >= published,
      "winner %s MFU %.3f < the published layout's %.3f"
      % (best["layout"], best["mfu"], published))
# The search must stay interactive (issue: under 10 s for 1024 GPUs on this
# 2-core machine). CPU time, since wall time on a shared test machine says
# more about the other jobs; 15 s leaves room for a slower machine. The
# sanitizer build sets STRATA_CPU_SLOWDOWN (test/perf/CMakeLists.txt).
slowdown = float(os.environ.get("STRATA_CPU_SLOWDOWN", "1"))
check(plan["cpu_seconds"] < 15 * slowdown, "plan took %.1f s of CPU" %
      plan["cpu_seconds"])
for p in plan["plans"]:
    check(p["peak_memory_bytes"] <= 80 << 30,
          "%s needs %d bytes" % (p["layout"], p["peak_memory_bytes"]))
e = estimate(GPT3, *layout_flags(best))
check(e["fits"], "estimate says the winner %s does not fit" % best["layout"])
check(close(e["step_time_s"], best["step_time_s"]),
      "estimate of the winner: %s s, plan said %s s"
      % (e["step_time_s"], best["step_time_s"]))
check(e["peak_memory_bytes"] == best["peak_memory_bytes"],
      "estimate's peak memory of the winner differs from plan's")
reasons = {d["reason"] for d in plan["dropped"]}
check("indivisible" in reasons, "no indivisible layouts reported")

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "best.plan")
    r = run("plan", TINY, "--cluster", "a100-80gb", "--gpus", "2",
            "--global-batch", "24", "--json", "-o", out)
    check(r.returncode == 0, "plan -o failed: " + r.stderr)
    if r.returncode == 0:
        w = json.loads(r.stdout)["plans"][0]
        i = run("inspect", out, "--json")
        check(i.returncode == 0, "inspect failed: " + i.stderr)
        par = json.loads(i.stdout).get("parallel", {})
        for k in ["tp", "pp", "dp"]:
            check(int(par.get(k, 1)) == w[k],
                  "plan file %s = %s, winner %s" % (k, par.get(k), w[k]))

for args, what in [
        (["--gpus", "0", "--global-batch", "8"], "--gpus"),
        (["--gpus", "2", "--global-batch", "8", "--cluster", "nope"],
         "unknown cluster"),
        (["--gpus", "3", "--global-batch", "7"], "no layout")]:
    cluster = [] if "--cluster" in args else ["--cluster", "a100-80gb"]
    r = run("plan", TINY, *cluster, *args)
    check(r.returncode != 0, "%s: exit 0" % what)
    check(r.stderr.startswith("strata plan: error: ") and what in r.stderr,
          "%s: stderr %r" % (what, r.stderr))

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
