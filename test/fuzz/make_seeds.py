#!/usr/bin/env python3
"""Seeds and dictionaries for the fuzz targets that are made, not committed.

  make_seeds.py --strata build/tools/strata/strata \
                --strata-opt build/tools/strata-opt/strata-opt --out DIR

writes into DIR:
  plan/            plans `strata compile` writes for the tiny specs of
                   test/fuzz/corpus/model_spec, cut to one block where the
                   layout allows (serial with fused kernels; without fusion:
                   tp x dp with sp, pp with microbatches, serial, Llama with
                   the distributed optimizer)
  checkpoint/      checkpoints of one `strata train` step of those specs
  pass_pipeline/   `<pipeline>\\n<IR>` for each strata-opt RUN line of the lit
                   tests and each `# -----` case of its file
  *.dict           libFuzzer dictionaries: op names (ir/Ops.def), spec field
                   and enum names (proto/model_spec.proto), pass names, JSON
                   keys of checkpoints and tensor archives
Generated from the real CLI and sources so they cannot drift from them.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPECS = os.path.join(ROOT, "test", "fuzz", "corpus", "model_spec")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit("make_seeds: error: %s failed (rc %d):\n%s" %
                 (" ".join(cmd), r.returncode, r.stderr))
    return r.stdout


def one_layer(spec, scratch):
    """`spec` with one block: a plan's size (and the time the fuzzer spends
    loading it) grows with the blocks."""
    text = re.sub(r"^layers: \d+$", "layers: 1", open(spec).read(), flags=re.M)
    path = os.path.join(scratch, "1layer_" + os.path.basename(spec))
    with open(path, "w") as f:
        f.write(text)
    return path


def plans(strata, out, scratch):
    gpt = os.path.join(SPECS, "tiny_gpt.textproto")
    gpt1 = one_layer(gpt, scratch)
    llama1 = one_layer(os.path.join(SPECS, "tiny_llama.textproto"), scratch)
    # Small plans keep the fuzzer fast (a valid plan is loaded, verified and
    # its kernels rendered on every run): one block where the layout allows
    # it, and fused kernels (whose C++ source dominates a plan) in one seed.
    variants = {
        "gpt_serial": [gpt1],
        "gpt_tp2_dp2_sp": [gpt1, "--tp", "2", "--dp", "2", "--sp", "--no-fusion"],
        "gpt_pp2_mb2": [gpt, "--pp", "2", "--microbatches", "2", "--no-fusion"],
        "gpt_no_fusion": [gpt1, "--no-fusion"],
        "llama_dp2_zero1": [llama1, "--dp", "2", "--distributed-optimizer",
                            "--no-fusion"],
    }
    os.makedirs(out, exist_ok=True)
    for name, args in variants.items():
        run([strata, "compile", *args, "-o", os.path.join(out, name + ".plan")])


def checkpoints(strata, out, scratch):
    os.makedirs(out, exist_ok=True)
    text = os.path.join(scratch, "text.txt")
    with open(text, "w") as f:
        f.write("a bad cab faced a deaf bee. " * 40)  # 9 characters < vocab 16
    for name in ["tiny_gpt", "tiny_llama"]:
        run_dir = os.path.join(scratch, name)
        run([strata, "train", os.path.join(SPECS, name + ".textproto"),
             "--data", text, "--steps", "1", "--sample", "0", "--out", run_dir])
        os.replace(os.path.join(run_dir, "checkpoint.bin"),
                   os.path.join(out, name + ".ckpt"))


def pass_pipelines(out):
    os.makedirs(out, exist_ok=True)
    lit = os.path.join(ROOT, "test", "lit")
    n = 0
    for dirpath, _, files in os.walk(lit):
        if "Inputs" in dirpath.split(os.sep):
            continue
        for f in sorted(files):
            if not f.endswith(".ir"):
                continue
            text = open(os.path.join(dirpath, f)).read()
            pipelines = sorted(set(
                p.strip("'\"") for p in re.findall(
                    r"RUN:.*strata-opt.*--passes=('[^']*'|\S+)", text)))
            cases = re.split(r"^# -----.*\n", text, flags=re.M)
            for p in pipelines:
                for case in cases:
                    with open(os.path.join(out, "%03d" % n), "w") as o:
                        o.write(p + "\n" + case)
                    n += 1


def dicts(strata_opt, out):
    def write(name, words):
        with open(os.path.join(out, name + ".dict"), "w") as f:
            for w in sorted(set(words)):
                f.write('"%s"\n' % w.replace("\\", "\\\\").replace('"', '\\"'))

    ops = re.findall(r'^OP\(\w+, "(\w+)"',
                     open(os.path.join(ROOT, "ir", "Ops.def")).read(), re.M)
    dtypes = ["f32", "bf16", "f16", "f64", "i32", "i64", "i1"]
    write("ir", ops + dtypes + [
        "graph @", "mesh<", "partitioned", "%", "param", "shard=[", "partial=[",
        "return ", " : ", "{", "}", "# ", "true", "false", "init=", "std="])

    proto = open(os.path.join(ROOT, "proto", "model_spec.proto")).read()
    fields = re.findall(r"^\s*(?:optional |repeated )?\w+ (\w+) = \d+", proto, re.M)
    enums = re.findall(r"^\s*([A-Z][A-Z0-9_]*) = \d+;", proto, re.M)
    write("model_spec", [f + ": " for f in fields] + enums +
          ["training {", "data {", "inf", "nan", "-1", "1048576"])

    passes = re.findall(r"^\s+(\S+) - ", run([strata_opt, "--list-passes"]), re.M)
    write("pass_pipeline", passes + ["{", "}", ",", "=", "tp=", "dp=", "sp=",
                                     "pp=", "mode=", "layers=", "budget="])

    keys = ['"meta"', '"data_bytes"', '"tensors"', '"name"', '"dtype"',
            '"shape"', '"offset"', '"crc32"']
    write("checkpoint", keys + ['"%s"' % d for d in dtypes] + ["STRATACK"])
    write("tensor_archive", keys + ['"%s"' % d for d in dtypes])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strata", required=True)
    ap.add_argument("--strata-opt", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--targets", default="plan checkpoint",
                    help="make the plan and checkpoint seeds (which need a "
                    "working strata) only for these targets")
    a = ap.parse_args()
    targets = a.targets.split()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        if "plan" in targets:
            plans(a.strata, os.path.join(a.out, "plan"), scratch)
        if "checkpoint" in targets:
            checkpoints(a.strata, os.path.join(a.out, "checkpoint"), scratch)
    pass_pipelines(os.path.join(a.out, "pass_pipeline"))
    dicts(a.strata_opt, a.out)


if __name__ == "__main__":
    main()
