"""A SentencePiece tokenizer through import-hf and export-hf.

  hf_sentencepiece.py --strata BIN --out DIR

For a BPE and a unigram SentencePiece model trained here (python3-sentencepiece,
Llama's settings: byte fallback, identity normalization, digits split) on a
seeded multi-script text: a tiny random Llama saved by transformers with the
model as tokenizer.model is imported (the checkpoint embeds the model) and
exported. The export must hold the same tokenizer.model bytes, and
transformers' AutoTokenizer (LlamaTokenizer and LlamaTokenizerFast, both built
from the exported tokenizer.model and tokenizer_config.json) must encode a
Unicode-rich text to the ids SentencePiece gives (plus its BOS), as
`strata tokenizer encode` does. A BPE model with its own special pieces and
ids gets a warning that only the slow tokenizer applies, which must still
encode equally. A Llama trained by `strata train --tokenizer sp.model`
exports the same way. A byte tokenizer exports with a warning and
no tokenizer files; an embedded model that is not base64 or not a
SentencePiece model is an error naming the checkpoint, with no directory
left.
"""

import argparse
import base64
import glob
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import zlib

import sentencepiece as spm
import torch
import transformers

WORDS = ["the", "model", "trains", "über", "straße", "naïve", "café", "λόγος",
         "θάλασσα", "Москва", "привет", "東京", "学习", "모델", "नमस्ते", "مرحبا",
         "שלום", "2026", "3.14", "x=y+1", "🙂", "🚀", "(ok)", "e.g.", "Ångström"]
# Text the models never saw: rare scripts (byte fallback), runs of spaces,
# digits, a tab and a newline, combining marks.
PROBE = ("  Zoë's café — 東京タワー 🚀🙂 naïve λόγος,  Ωμέγα\t12345 ١٢٣ "
         "e\u0301 ﬁ ℌ 𝔘𝔫𝔦 ☃ Москва!\nnew line  end ")

FAILURES = []


def check(ok, what):
    print("%s: %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        FAILURES.append(what)


def run(strata, args, **kw):
    r = subprocess.run([strata] + args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit("strata %s failed (%d):\n%s" % (args[0], r.returncode, r.stderr))
    return r


def corpus(path):
    rng = random.Random(0)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(3000):
            f.write(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + "\n")


def rewrite_tokenizer(src, dst, tokenizer):
    """Copies checkpoint `src` to `dst` with `tokenizer(meta["tokenizer"])`
    as its tokenizer (runtime/io/Checkpoint.h: magic, version, CRC-32 and
    length of the JSON header, the header padded to 64 bytes, then the
    tensor data)."""
    with open(src, "rb") as f:
        raw = f.read()
    version, _, length = struct.unpack_from("<IIQ", raw, 8)
    header = json.loads(raw[24:24 + length])
    data = raw[(24 + length + 63) // 64 * 64:]
    header["meta"]["tokenizer"] = tokenizer(header["meta"]["tokenizer"])
    text = json.dumps(header).encode()
    pad = (24 + len(text) + 63) // 64 * 64 - 24 - len(text)
    with open(dst, "wb") as f:
        f.write(raw[:8] + struct.pack("<IIQ", version, zlib.crc32(text), len(text)))
        f.write(text + b"\0" * pad + data)


def one_model(strata, out, case, model_type, layout):
    """`layout`: the trainer's special pieces and ids; {} is Llama's."""
    d = lambda *p: os.path.join(out, case, *p)  # noqa: E731
    os.makedirs(d())
    corpus(d("corpus.txt"))
    spm.SentencePieceTrainer.train(
        input=d("corpus.txt"), model_prefix=d("sp"), vocab_size=350,
        model_type=model_type, byte_fallback=True, split_digits=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        character_coverage=1.0, minloglevel=2, **layout)
    sp = spm.SentencePieceProcessor(model_file=d("sp.model"))
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=sp.get_piece_size(), hidden_size=32, intermediate_size=64,
        num_hidden_layers=1, num_attention_heads=4, max_position_embeddings=16)
    transformers.LlamaForCausalLM(cfg).save_pretrained(d("hf"), safe_serialization=True)
    shutil.copy(d("sp.model"), d("hf", "tokenizer.model"))
    run(strata, ["import-hf", d("hf"), "-o", d("imported")])
    r = run(strata, ["export-hf", d("imported", "checkpoint.bin"), "-o", d("exported")])
    if layout:
        check("warning: " in r.stderr and "load it with use_fast=False" in r.stderr,
              "%s: export-hf warns that the fast conversion assumes Llama's ids (%s)"
              % (case, r.stderr.strip()))
    else:
        check("warning" not in r.stderr, "%s: export-hf without warnings (%s)"
              % (case, r.stderr.strip()))
    with open(d("sp.model"), "rb") as a, open(d("exported", "tokenizer.model"), "rb") as b:
        check(a.read() == b.read(), "%s: tokenizer.model is the trained model's bytes" % case)

    want = sp.encode(PROBE)
    bos = sp.bos_id()
    with open(d("probe.txt"), "w", encoding="utf-8") as f:
        f.write(PROBE)
    got = run(strata, ["tokenizer", "encode", "--tokenizer", d("exported", "tokenizer.model"),
                       d("probe.txt")]).stdout.split()
    check([int(i) for i in got] == want, "%s: strata tokenizer encode == sentencepiece (%d ids)"
          % (case, len(want)))
    # Byte fallback must be exercised, or the probe tests little.
    check(any(sp.id_to_piece(i).startswith("<0x") for i in want),
          "%s: the probe uses byte-fallback pieces" % case)
    # LlamaTokenizerFast's conversion puts <unk>, <s>, </s> at 0, 1, 2.
    for fast in (False, True) if not layout else (False,):
        tok = transformers.AutoTokenizer.from_pretrained(d("exported"), use_fast=fast)
        name = type(tok).__name__
        check(name == ("LlamaTokenizerFast" if fast else "LlamaTokenizer"),
              "%s: AutoTokenizer(use_fast=%s) is %s" % (case, fast, name))
        ids = tok.encode(PROBE)
        check(ids == [bos] + want, "%s: %s encode == [bos] + sentencepiece" % (case, name))
        # LlamaTokenizer (slow) drops the first of the probe's leading spaces
        # when it decodes (its convert_tokens_to_string strips the prefix
        # "▁"), so only the fast one must give SentencePiece's text back.
        if fast:
            check(tok.decode(ids, skip_special_tokens=True) == sp.decode(want),
                  "%s: %s decode == sentencepiece decode" % (case, name))
        check((tok.bos_token, tok.eos_token, tok.unk_token) ==
              tuple(sp.id_to_piece(i) for i in (bos, sp.eos_id(), sp.unk_id())) and
              tok.pad_token == (sp.id_to_piece(sp.pad_id()) if sp.pad_id() >= 0 else None),
              "%s: %s special tokens are the model's" % (case, name))
    return d("imported", "checkpoint.bin")


def trained_case(strata, out):
    """`strata train --tokenizer sp.model` embeds the model as import does;
    its export loads in transformers with the same tokenizer."""
    d = lambda *p: os.path.join(out, "bpe", *p)  # noqa: E731
    spec = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                        "examples", "llama_tiny.textproto")
    run(strata, ["train", spec, "--data", d("corpus.txt"), "--tokenizer", d("sp.model"),
                 "--steps", "1", "--eval-every", "0", "--sample", "0", "--out", d("run")])
    run(strata, ["export-hf", d("run", "checkpoint.bin"), "-o", d("run_exported")])
    with open(d("sp.model"), "rb") as a, open(d("run_exported", "tokenizer.model"), "rb") as b:
        check(a.read() == b.read(), "trained: tokenizer.model is the --tokenizer file's bytes")
    sp = spm.SentencePieceProcessor(model_file=d("sp.model"))
    model = transformers.AutoModelForCausalLM.from_pretrained(d("run_exported"))
    check(model.config.vocab_size == sp.get_piece_size(),
          "trained: the exported model's vocab_size is the tokenizer's")
    tok = transformers.AutoTokenizer.from_pretrained(d("run_exported"))
    check(tok.encode(PROBE) == [sp.bos_id()] + sp.encode(PROBE),
          "trained: %s encode == [bos] + sentencepiece" % type(tok).__name__)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    ckpt = None
    for case, model_type, layout in (
            ("bpe", "bpe", {}), ("unigram", "unigram", {}),
            # Not Llama's layout: pieces read from the model at its own ids.
            ("bpe_layout", "bpe", dict(pad_id=0, unk_id=1, bos_id=2, eos_id=3,
                                       pad_piece="[PAD]", unk_piece="[UNK]",
                                       bos_piece="[BOS]", eos_piece="[EOS]"))):
        ckpt = one_model(a.strata, a.out, case, model_type, layout)
    trained_case(a.strata, a.out)

    # A tokenizer without a Hugging Face form: a warning, no tokenizer files.
    byte = os.path.join(a.out, "byte.bin")
    rewrite_tokenizer(ckpt, byte, lambda t: {"kind": "byte"})
    out = os.path.join(a.out, "byte_export")
    r = subprocess.run([a.strata, "export-hf", byte, "-o", out], capture_output=True, text=True)
    check(r.returncode == 0 and "warning: %s: the byte tokenizer has no Hugging Face form" % byte
          in r.stderr, "byte tokenizer: exported with a warning (%s)" % r.stderr.strip())
    check(sorted(os.listdir(out)) == ["config.json", "model.safetensors"],
          "byte tokenizer: no tokenizer files (%s)" % os.listdir(out))
    # An embedded model that is not base64, or not a SentencePiece model.
    for what, b64 in (("not base64", "not*base64"),
                      ("not a model", base64.b64encode(b"\x0a\x03abc\xff").decode())):
        bad = os.path.join(a.out, "bad.bin")
        rewrite_tokenizer(ckpt, bad, lambda t: dict(t, content_base64=b64))
        out = os.path.join(a.out, "bad_export")
        r = subprocess.run([a.strata, "export-hf", bad, "-o", out], capture_output=True,
                           text=True)
        check(r.returncode == 1 and r.stderr.startswith("strata export-hf: error: %s: " % bad)
              and "tokenizer" in r.stderr,
              "%s: error naming the checkpoint and its tokenizer (%s)" % (what, r.stderr.strip()))
        check(not os.path.exists(out) and not glob.glob(out + ".tmp.*"),
              "%s: no directory left" % what)
    if FAILURES:
        sys.exit("FAILED:\n  " + "\n  ".join(FAILURES))


if __name__ == "__main__":
    main()
