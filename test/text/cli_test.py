"""`strata tokenizer train|encode|decode` against Hugging Face tokenizers.

- train: strata's byte-level BPE trainer learns the same vocabulary and
  merges as tokenizers' BpeTrainer on the same files and settings, and HF
  loads strata's tokenizer.json and encodes with it as strata does;
- encode/decode: the CLI prints HF's ids and text;
- bad input: a clear error and exit code 1, no output file;
- strata train --tokenizer FILE, then generate from the checkpoint alone.

usage: cli_test.py STRATA SHAKESPEARE REFS_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

from tokenizers import Tokenizer, pre_tokenizers, trainers, models, decoders

STRATA, SHAKESPEARE, REFS = sys.argv[1:4]
TORTURE = os.path.join(REFS, "torture.txt")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def strata(*args, stdin=None):
    return subprocess.run([STRATA, "tokenizer", *args], input=stdin,
                          capture_output=True, timeout=300)


def hf_trained(vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([SHAKESPEARE, TORTURE], trainer)
    return json.loads(tok.to_str())


def train_and_generate(tmp, tokenizer_file):
    """strata train --tokenizer FILE: the checkpoint carries the file, so
    generate decodes without it; resuming with another tokenizer fails."""
    run = os.path.join(tmp, "run")
    spec = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                        "examples", "gpt_tiny.textproto")
    moved = os.path.join(tmp, "tok.json")  # gone before generate runs
    with open(tokenizer_file, "rb") as src, open(moved, "wb") as dst:
        dst.write(src.read())
    train = [STRATA, "train", spec, "--data", SHAKESPEARE, "--tokenizer",
             moved, "--steps", "2", "--eval-every", "0", "--sample", "0",
             "--out", run]
    r = subprocess.run(train, capture_output=True, timeout=300)
    check(r.returncode == 0, "train --tokenizer FILE failed: " + r.stderr.decode())
    vocab = max(json.load(open(moved))["model"]["vocab"].values()) + 1
    check(("vocab %d" % vocab) in r.stdout.decode(),
          "training did not take the tokenizer's vocabulary of %d" % vocab)
    os.remove(moved)
    r = subprocess.run([STRATA, "generate", os.path.join(run, "checkpoint.bin"),
                        "--prompt", "ROMEO:", "--tokens", "5", "--json"],
                       capture_output=True, timeout=300)
    check(r.returncode == 0, "generate failed: " + r.stderr.decode())
    if r.returncode == 0:
        out = json.loads(r.stdout.decode().splitlines()[0])
        hf = Tokenizer.from_file(tokenizer_file)
        check(out["text"] == hf.decode(out["tokens"], skip_special_tokens=False),
              "generate's text is not HF's decoding of its tokens")
    resume = [a if a != moved else "byte" for a in train] + ["--resume"]
    r = subprocess.run(resume, capture_output=True, timeout=300)
    check(r.returncode == 1 and "tokenizer differs" in r.stderr.decode(),
          "resuming with another tokenizer: " + r.stderr.decode())


def main():
    tmp = tempfile.mkdtemp(prefix="strata-tok-")
    out = os.path.join(tmp, "tokenizer.json")
    r = strata("train", "--vocab-size", "1000", "-o", out, SHAKESPEARE, TORTURE)
    check(r.returncode == 0, "train failed: " + r.stderr.decode())
    mine = json.load(open(out))
    ref = hf_trained(1000)
    check(mine["model"]["vocab"] == ref["model"]["vocab"],
          "trained vocabulary differs from tokenizers' BpeTrainer")
    check(mine["model"]["merges"] == ref["model"]["merges"],
          "trained merges differ from tokenizers' BpeTrainer (first: %s)" %
          next(((i, a, b) for i, (a, b) in enumerate(
              zip(mine["model"]["merges"], ref["model"]["merges"])) if a != b),
               None))
    check(mine["added_tokens"][0]["content"] == "<|endoftext|>",
          "the special token is not added")

    hf = Tokenizer.from_file(out)  # HF loads what strata wrote
    text = open(TORTURE, encoding="utf-8", newline="").read() + \
        open(SHAKESPEARE, encoding="utf-8").read()[:20000] + "<|endoftext|>"
    sample = os.path.join(tmp, "sample.txt")
    with open(sample, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    want = hf.encode(text).ids
    r = strata("encode", "--tokenizer", out, sample)
    got = [int(x) for x in r.stdout.split()]
    check(r.returncode == 0 and got == want,
          "encode differs from HF with strata's tokenizer.json: " +
          r.stderr.decode())
    r = strata("decode", "--tokenizer", out, stdin=" ".join(map(str, want)).encode())
    check(r.stdout.decode("utf-8") == hf.decode(want, skip_special_tokens=False),
          "decode differs from HF")
    r = strata("decode", "--tokenizer", out, "--skip-special-tokens",
               *map(str, want[-3:]))
    check(r.stdout.decode("utf-8") == hf.decode(want[-3:]),
          "decode --skip-special-tokens differs from HF")

    llama3 = os.path.join(REFS, "llama3.json")
    r = strata("encode", "--tokenizer", llama3, "--add-special-tokens",
               stdin=b"Hello world")
    check([int(x) for x in r.stdout.split()] ==
          Tokenizer.from_file(llama3).encode("Hello world").ids,
          "encode --add-special-tokens differs from HF (BOS)")

    # Bad input: exit 1, a message naming the file and what is wrong.
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"model": {"type": "Unigram", "vocab": []}}')
    for args, message in [
        (["encode", "--tokenizer", os.path.join(tmp, "missing.json")],
         "missing.json: cannot read tokenizer file (No such file"),
        (["encode", "--tokenizer", bad], 'model.type: unsupported "Unigram"'),
        (["train", "-o", os.path.join(tmp, "x.json"), SHAKESPEARE],
         "train needs --vocab-size N"),
        (["train", "--vocab-size", "100", "-o", os.path.join(tmp, "x.json"),
          SHAKESPEARE], "--vocab-size 100 is below the 257 special and byte"),
        (["decode", "--tokenizer", out, "12", "x"], "'x' is not a token id"),
        (["frobnicate"], "unknown action 'frobnicate'"),
    ]:
        r = strata(*args, stdin=b"")
        err = r.stderr.decode()
        check(r.returncode == 1 and message in err,
              "%s: expected exit 1 and '%s', got %d: %s" %
              (args, message, r.returncode, err))
    check(not os.path.exists(os.path.join(tmp, "x.json")),
          "a failed train left an output file")

    train_and_generate(tmp, llama3)

    if failures:
        sys.exit("%d check(s) failed" % len(failures))
    print("ok")


if __name__ == "__main__":
    main()
