"""Bad inputs to `strata import-hf`, `export-hf` and `eval`.

  hf_bad_inputs.py --strata BIN --out DIR

Each case breaks a valid model directory (saved by transformers) in one way
and checks that strata exits with 1, prints `strata <verb>: error: <file>:
...` naming the file and the field or tensor at fault, and leaves no output
directory (nor its staging directory) behind.
"""

import argparse
import glob
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models  # noqa: E402

FAILURES = []


def expect_error(strata, args, needles, out=None):
    r = subprocess.run([strata] + args, capture_output=True, text=True)
    verb = args[0]
    why = None
    if r.returncode != 1:
        why = "exit code %d, expected 1" % r.returncode
    elif not r.stderr.startswith("strata %s: error: " % verb):
        why = "stderr does not start with 'strata %s: error: '" % verb
    else:
        missing = [n for n in needles if n not in r.stderr]
        if missing:
            why = "stderr lacks %r" % missing
    if out and (os.path.exists(out) or glob.glob(out + ".tmp.*")):
        why = "left %s (or its staging directory) behind" % out
    print("%s: %s" % ("FAIL" if why else "ok", " ".join(args[:1] + needles[:2])))
    if why:
        FAILURES.append("%s\n  %s\n  stderr: %s" % (" ".join(args), why, r.stderr.strip()))


def edit_config(d, **changes):
    p = os.path.join(d, "config.json")
    with open(p) as f:
        c = json.load(f)
    for k, v in changes.items():
        if v is None and k in c:
            del c[k]
        else:
            c[k] = v
    with open(p, "w") as f:
        json.dump(c, f)


def read_st(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_st(path, header, data):
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    S = a.strata
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    good = os.path.join(a.out, "good")
    hf_models.make_model("gpt2").save_pretrained(good, safe_serialization=True)
    sharded = os.path.join(a.out, "sharded")
    hf_models.make_model("llama").save_pretrained(sharded, safe_serialization=True,
                                                  max_shard_size="100KB")
    falcon = os.path.join(a.out, "falcon")
    hf_models.make_model("falcon").save_pretrained(falcon, safe_serialization=True)
    n = [0]

    def case(base=good):
        n[0] += 1
        d = os.path.join(a.out, "case%d" % n[0])
        shutil.copytree(base, d)
        return d, os.path.join(a.out, "out%d" % n[0])

    d, o = case()
    os.remove(os.path.join(d, "config.json"))
    expect_error(S, ["import-hf", d, "-o", o], [os.path.join(d, "config.json"), "cannot read"], o)

    d, o = case()
    edit_config(d, model_type="bert")
    expect_error(S, ["import-hf", d, "-o", o],
                 ["config.json: field \"model_type\"", "unsupported architecture \"bert\""], o)

    d, o = case()
    edit_config(d, my_new_feature=True)
    expect_error(S, ["import-hf", d, "-o", o], ["field \"my_new_feature\"", "not supported"], o)

    d, o = case()
    edit_config(d, activation_function="relu")
    expect_error(S, ["import-hf", d, "-o", o], ["field \"activation_function\"", "\"relu\""], o)

    # rope_scaling: only Llama-3.1's "llama3", complete and with nothing else.
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    for scaling, needles in [
            ({"type": "linear", "factor": 2.0}, ["unsupported rope_type \"linear\""]),
            ({"rope_type": "dynamic", "factor": 2.0}, ["unsupported rope_type \"dynamic\""]),
            ({"rope_type": "yarn", "factor": 4.0}, ["unsupported rope_type \"yarn\""]),
            ({"factor": 2.0}, ["no \"rope_type\""]),
            (dict(llama3, type="linear"), ["\"type\" \"linear\"", "disagree"]),
            ({k: v for k, v in llama3.items() if k != "low_freq_factor"},
             ["missing \"low_freq_factor\""]),
            (dict(llama3, factor=0), ["key \"factor\"", "positive"]),
            (dict(llama3, original_max_position_embeddings=8192.5),
             ["key \"original_max_position_embeddings\"", "integer"]),
            (dict(llama3, attention_factor=1.0), ["key \"attention_factor\""]),
            (dict(llama3, high_freq_factor=1.0), ["high_freq_factor", "greater than low_freq_factor"])]:
        d, o = case(sharded)
        edit_config(d, rope_scaling=scaling)
        expect_error(S, ["import-hf", d, "-o", o], ["field \"rope_scaling\""] + needles, o)
    # Falcon reads rope_scaling the same way.
    d, o = case(falcon)
    edit_config(d, rope_scaling={"type": "dynamic", "factor": 2.0})
    expect_error(S, ["import-hf", d, "-o", o],
                 ["field \"rope_scaling\"", "unsupported rope_type \"dynamic\""], o)

    d, o = case(sharded)
    edit_config(d, num_key_value_heads=3)
    expect_error(S, ["import-hf", d, "-o", o], ["config.json", "kv_heads"], o)

    d, o = case(falcon)
    edit_config(d, alibi=True)
    expect_error(S, ["import-hf", d, "-o", o], ["field \"alibi\"", "rotary"], o)

    d, o = case(falcon)
    edit_config(d, parallel_attn=False)
    expect_error(S, ["import-hf", d, "-o", o], ["field \"parallel_attn\"", "in parallel"], o)

    d, o = case()
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        f.write("{not json")
    expect_error(S, ["import-hf", d, "-o", o], [os.path.join(d, "tokenizer.json") + ": ",
                                                "--no-tokenizer"], o)

    d, o = case()
    os.remove(os.path.join(d, "model.safetensors"))
    expect_error(S, ["import-hf", d, "-o", o],
                 [os.path.join(d, "model.safetensors") + ": no such file"], o)

    d, o = case(sharded)
    shard = sorted(glob.glob(os.path.join(d, "model-*.safetensors")))[1]
    os.remove(shard)
    expect_error(S, ["import-hf", d, "-o", o],
                 ["model.safetensors.index.json: shard '%s'" % os.path.basename(shard),
                  "is missing"], o)

    d, o = case(sharded)
    shard = sorted(glob.glob(os.path.join(d, "model-*.safetensors")))[0]
    with open(shard, "r+b") as f:
        f.truncate(os.path.getsize(shard) - 8)
    expect_error(S, ["import-hf", d, "-o", o], [shard + ": ", "data bytes"], o)

    # A header that lies about offsets: one tensor claims the next one's bytes.
    d, o = case()
    p = os.path.join(d, "model.safetensors")
    header, data = read_st(p)
    first = min((k for k in header if k != "__metadata__"),
                key=lambda k: header[k]["data_offsets"][0])
    header[first]["data_offsets"] = [x + 4 for x in header[first]["data_offsets"]]
    write_st(p, header, data)
    expect_error(S, ["import-hf", d, "-o", o], [p + ": tensor '", "data_offsets"], o)

    # A shape the config does not imply.
    d, o = case()
    edit_config(d, n_inner=128)
    expect_error(S, ["import-hf", d, "-o", o],
                 ["model.safetensors: tensor 'transformer.h.0.mlp.c_fc.weight' has shape",
                  "config.json implies [64, 128]"], o)

    # A tensor no part of the model: a variant strata does not implement.
    d, o = case()
    p = os.path.join(d, "model.safetensors")
    header, data = read_st(p)
    header["transformer.h.0.attn.extra"] = {"dtype": "F32", "shape": [1],
                                            "data_offsets": [len(data), len(data) + 4]}
    write_st(p, header, data + b"\0\0\0\0")
    expect_error(S, ["import-hf", d, "-o", o],
                 ["unexpected tensor 'transformer.h.0.attn.extra'"], o)

    # Output directory not empty: untouched.
    d, o = case()
    os.makedirs(o)
    with open(os.path.join(o, "keep"), "w") as f:
        f.write("x")
    expect_error(S, ["import-hf", d, "-o", o], [o + ": the output directory exists"])
    if not os.path.exists(os.path.join(o, "keep")):
        FAILURES.append("import-hf touched a non-empty output directory")

    # export-hf and eval on things that are not checkpoints, and bad ids.
    expect_error(S, ["export-hf", os.path.join(good, "config.json"), "-o",
                     os.path.join(a.out, "exp")], ["config.json", "not a strata checkpoint"],
                 os.path.join(a.out, "exp"))
    ok = os.path.join(a.out, "ok")
    subprocess.run([S, "import-hf", good, "-o", ok], check=True, capture_output=True)
    ck = os.path.join(ok, "checkpoint.bin")
    expect_error(S, ["eval", ck, "--dump-logits", os.path.join(a.out, "x.npy"),
                     "--input-ids", "1,300"], ["token id 300 at position 1", "[0, 300)"])
    expect_error(S, ["eval", ck, "--data", good + "/config.json"],
                 [ck + ": the checkpoint has no tokenizer"])

    if FAILURES:
        sys.exit("FAILED:\n" + "\n".join(FAILURES))
    print("all bad inputs rejected")


if __name__ == "__main__":
    main()
