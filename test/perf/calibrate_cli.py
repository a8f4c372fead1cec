"""`strata calibrate` end to end (issue 17).

usage: calibrate_cli.py STRATA SPEC

- `calibrate --quick --threads-per-device 1` writes a pb.Hardware text proto
  with its tables, a device per core, one node; it parses as the proto's
  text format (checked here by reading the fields back by hand);
- the GEMM table's times grow with the FLOPs at one shape family (a kernel
  that computes twice the products cannot take less than ~half the time:
  a measurement that is not of the kernel would not show it), and
  peak_f32_flops is the best of the table;
- `strata estimate SPEC --cluster FILE` reads it, and its step time is the
  sum of the programs it predicts from those tables (positive, and the
  JSON's breakdown sums to it);
- `calibrate --device cuda-interpret --quick --base h200` runs the CUDA
  backend's path (perf/CalibrateDevice.h) on the host: f32 and bf16 (`half`)
  GEMM and attention samples, bandwidth and launch; the links, node size
  and GEMM tiles are h200's; `estimate --precision bf16` reads it;
- bad input fails in strata's error form and writes nothing.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

STRATA, SPEC = sys.argv[1], sys.argv[2]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg)


def run(*args):
    return subprocess.run([STRATA, *args], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "cpu.textproto")
    r = run("calibrate", "--quick", "--threads-per-device", "1", "-o", out)
    check(r.returncode == 0, "calibrate failed: " + r.stderr)
    text = open(out).read()
    check("proto-message: strata.pb.Hardware" in text, "no proto header")
    check(re.search(r'^name: "cpu"$', text, re.M) is not None, "name")
    cores = os.cpu_count()
    dpn = int(re.search(r"^devices_per_node: (\d+)", text, re.M).group(1))
    check(dpn == cores, "devices_per_node %d, %d cores" % (dpn, cores))
    gemms = []
    for b in re.findall(r"gemm_table \{([^}]*)\}", text):
        f = dict(re.findall(r"(\w+): (\S+)", b))
        gemms.append(f)
    check(len(gemms) >= 27, "%d GEMM samples" % len(gemms))
    nn = {(int(g["m"]), int(g["n"]), int(g["k"])): float(g["seconds"])
          for g in gemms if "transpose_a" not in g and "transpose_b" not in g}
    # 4x the depth k at m x 512: at least 1.5x the time (ideal 4x; small
    # shapes lose some to fixed costs, and a loaded machine only slows the
    # shorter call less than proportionally).
    for m, k in [(256, 32), (256, 128), (1024, 32)]:
        a, b = nn.get((m, 512, k)), nn.get((m, 512, 4 * k))
        check(a and b and b > 1.5 * a,
              "GEMM %dx512x%d %s s, x%d %s s" % (m, k, a, 4 * k, b))
    best = max(2.0 * int(g["m"]) * int(g["n"]) * int(g["k"]) /
               float(g["seconds"]) for g in gemms)
    peak = float(re.search(r"peak_f32_flops: (\S+)", text).group(1))
    check(abs(peak - best) <= 1e-6 * best, "peak %g, best sample %g"
          % (peak, best))
    for field in ["attention_table", "bandwidth_table", "kernel_launch_s",
                  "intra_node", "nic"]:
        check(field in text, "missing " + field)
    # The op table covers both reference blocks' memory-bound kernels:
    # GPT's layer norm and gelu, Llama's rms norm, silu and rope.
    ops = set(re.findall(r'op_table \{\s*op: "([^"]+)"', text))
    for op in ["layer_norm", "gelu", "rms_norm", "silu", "rope",
               "rms_norm_grad", "silu_grad"]:
        check(op in ops, "no op_table entry for %s (has %s)"
              % (op, sorted(ops)))

    r = run("estimate", SPEC, "--cluster", out, "--json")
    check(r.returncode == 0, "estimate with the calibrated file: " + r.stderr)
    if r.returncode == 0:
        e = json.loads(r.stdout)
        check(e["step_time_s"] > 0, "step time %s" % e["step_time_s"])
        total = sum(e["breakdown"].values())
        check(abs(total - e["step_time_s"]) <= 1e-9 * total,
              "breakdown sums to %s, step %s" % (total, e["step_time_s"]))

    gpu = os.path.join(tmp, "gpu.textproto")
    r = run("calibrate", "--quick", "--device", "cuda-interpret", "--base",
            "h200", "-o", gpu)
    check(r.returncode == 0, "calibrate cuda-interpret failed: " + r.stderr)
    if r.returncode == 0:
        text = open(gpu).read()
        blocks = [dict(re.findall(r"(\w+): (\S+)", b))
                  for b in re.findall(r"gemm_table \{([^}]*)\}", text)]
        half = [b for b in blocks if b.get("half") == "true"]
        # 3 transposes x 2 m x 2 n x 2 k in each dtype (the quick grid).
        check(len(blocks) == 48 and len(half) == 24,
              "%d GEMM samples, %d bf16" % (len(blocks), len(half)))
        check(all(float(b["seconds"]) > 0 for b in blocks), "GEMM seconds")
        attn = re.findall(r"attention_table \{([^}]*)\}", text)
        check(len(attn) == 4 and sum("half: true" in a for a in attn) == 2,
              "attention samples %r" % attn)
        h200 = open(os.path.join(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))),
            "hardware", "h200.textproto")).read()
        for field in ["devices_per_node", "nics_per_node"]:
            want = re.search(r"^%s: (\d+)" % field, h200, re.M).group(1)
            got = re.search(r"^%s: (\d+)" % field, text, re.M)
            check(got and got.group(1) == want,
                  "%s %s, h200 has %s" % (field, got and got.group(1), want))
        check("links, node size and GEMM tiles from h200" in text, "source")
        r = run("estimate", SPEC, "--cluster", gpu, "--precision", "bf16",
                "--json")
        check(r.returncode == 0, "estimate bf16 on the GPU file: " + r.stderr)

    for args, what in [
            (["-o", os.path.join(tmp, "no/such/dir/x.textproto")],
             "does not exist"),
            (["-o", os.path.join(tmp, "y.textproto"), "--device", "tpu"],
             "--device"),
            (["-o", os.path.join(tmp, "z.textproto"), "--device",
              "cuda-interpret"], "--base"),
            (["-o", os.path.join(tmp, "v.textproto"), "--device",
              "cuda-interpret", "--base", "no-such-gpu"], "no-such-gpu"),
            (["-o", os.path.join(tmp, "u.textproto"), "--base", "h200"],
             "--base"),
            (["-o", os.path.join(tmp, "w.textproto"), "--threads-per-device",
              "9999"], "--threads-per-device")]:
        r = run("calibrate", "--quick", *args)
        check(r.returncode != 0, "%s: exit 0" % what)
        check(any(l.startswith("strata calibrate: error: ") and what in l
                  for l in r.stderr.splitlines()),
              "%s: stderr %r" % (what, r.stderr))
    check(sorted(os.listdir(tmp)) == ["cpu.textproto", "gpu.textproto"],
          "files left: %s" % os.listdir(tmp))

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
