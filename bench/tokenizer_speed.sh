#!/usr/bin/env bash
# Single-threaded encode speed (MB/s) of strata's tokenizers against Hugging
# Face tokenizers 0.15.2 on the same text (Tiny Shakespeare and the Unicode
# torture text of test/text) and the same tokenizer.json files, trained here
# as test/text/make_references.py trains them: GPT-2 style and Llama 3 regex
# byte-level BPE and Llama 2 style byte-fallback BPE. Also the SentencePiece
# .model against python sentencepiece. Prints MB/s and strata / reference,
# for one call over the whole 4.6 MB text ("encode") and one call per
# "\n\n"-separated paragraph ("paragraphs", as documents are encoded;
# tokenizers is slow on one huge string).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
PY=$B/venv/bin/python
flock /tmp/strata-build.lock ninja -C "$B" tokenizer_bench > /dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" test/text/make_references.py ../shared/data/tinyshakespeare.txt "$work" > /dev/null
# Four copies of the corpus: a 4.6 MB text, long enough to time.
for i in 1 2 3 4; do cat ../shared/data/tinyshakespeare.txt "$work/torture.txt"; done > "$work/text.txt"
names="gpt2.json llama3.json llama2.json sp_bpe.model"

# The references, on one thread (RAYON_NUM_THREADS; one encode() call is
# sequential anyway): the best of 5 calls.
RAYON_NUM_THREADS=1 "$PY" - "$work" $names > "$work/ref.txt" <<'PY'
import sys, time
import sentencepiece as spm
from tokenizers import Tokenizer
work, names = sys.argv[1], sys.argv[2:]
text = open(work + "/text.txt", encoding="utf-8").read()
paragraphs = text.split("\n\n")
mb = len(text.encode()) / 1e6
def seconds(run):
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0
for name in names:
    if name.endswith(".model"):
        sp = spm.SentencePieceProcessor(model_file=work + "/" + name)
        one = lambda t: sp.encode(t)
    else:
        tok = Tokenizer.from_file(work + "/" + name)
        one = lambda t: tok.encode(t, add_special_tokens=False)
    whole = min(seconds(lambda: one(text)) for _ in range(3))
    each = min(seconds(lambda: [one(p) for p in paragraphs]) for _ in range(3))
    print("encode/" + name, mb / whole)
    print("paragraphs/" + name, mb / each)
PY

files=""
for n in $names; do files="$files $work/$n"; done
STRATA_BENCH_TOKENIZERS="$files" STRATA_BENCH_TEXT="$work/text.txt" STRATA_NUM_THREADS=1 \
  "$B/bench/tokenizer_bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_format=json > "$work/strata.json"

"$PY" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
ref = dict(l.split() for l in open(work + "/ref.txt"))
runs = json.load(open(work + "/strata.json"))["benchmarks"]
print("%-26s %12s %12s %8s" % ("tokenizer", "strata MB/s", "ref MB/s", "ratio"))
for b in runs:
    if b.get("aggregate_name") != "median":
        continue
    name = b["run_name"]
    mine = b["bytes_per_second"] / 1e6
    other = float(ref[name])
    print("%-26s %12.2f %12.2f %7.2fx" % (name, mine, other, mine / other))
print("(reference: HF tokenizers 0.15.2 for .json, python sentencepiece for .model)")
PY
