#!/usr/bin/env bash
# nanoGPT's CPU Shakespeare recipe (char-level, 4 layers, 4 heads, 128 wide,
# block 64, batch 12, lr 1e-3 -> 1e-4, warmup 100, 2000 iterations, beta2
# 0.99, weight decay 0.1, clip 1.0, no dropout) trained by strata; prints the
# final validation loss (nanoGPT reports 1.88) and the mean tokens/s.
# Takes several minutes on 2 cores: a benchmark, not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
S=${STRATA:-build/tools/strata/strata}  # STRATA=build-x/tools/strata/strata
[ -x "$S" ] || scripts/setup.sh
out=${OUT:-out/bench-shakespeare}
rm -rf "$out"
"$S" train examples/gpt_tiny.textproto --out "$out" \
  --eval-iters 200 --log-every 100 --sample 300 "$@"
/usr/bin/python3 - "$out/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
val = [r for r in rows if "val_loss" in r]
tok = [r["tokens_per_s"] for r in rows if "tokens_per_s" in r]
print(f"final val loss {val[-1]['val_loss']:.4f} at step {val[-1]['step']} "
      f"(nanoGPT: 1.88; target <= 1.90)")
print(f"mean throughput {sum(tok)/len(tok):.0f} tokens/s over {len(tok)} steps")
scaled = [r for r in rows if "loss_scale" in r]
if scaled:  # --precision fp16 (or --loss-scale): Megatron's loss scaling
    skipped = [r["step"] for r in scaled if r["skipped"]]
    print(f"loss scale {scaled[-1]['loss_scale']:g} at the end; "
          f"{len(skipped)} skipped steps {skipped[:20]}")
sys.exit(0 if val[-1]["val_loss"] <= 1.90 else 1)
PY
