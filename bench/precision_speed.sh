#!/usr/bin/env bash
# bf16 vs f32 training throughput on the CPU (issue 14's benchmark, not a
# test): gpt_tiny (nanoGPT's Shakespeare configuration) and a GPT-2 124M
# shaped model (bench/gpt2_124m_char.textproto: 12 x 768, character
# vocabulary) at a short sequence (SEQ, default 128, micro batch 4). f32
# and bf16 runs alternate, ROUNDS rounds (default 3) of STEPS steps
# (default 40 for gpt_tiny, 8 for the 124M shape); each run's tokens/s is
# the mean over its last 3/4 of steps; prints the medians and the ratio
# bf16 / f32. On a shared machine only the ratio within one run means much.
set -euo pipefail
cd "$(dirname "$0")/.."
S=${STRATA:-build/tools/strata/strata}
data=${DATA:-../shared/data/tinyshakespeare.txt}
rounds=${ROUNDS:-3}
seq=${SEQ:-128}

tok_s() {  # SPEC STEPS FLAGS...: mean tokens/s over the last 3/4 of the steps
  local spec=$1 steps=$2 out; shift 2; out=$(mktemp -d)
  "$S" train "$spec" --data "$data" --steps "$steps" --eval-every 0 \
    --sample 0 --log-every 1000 --out "$out" "$@" > /dev/null
  /usr/bin/python3 -c "import json,sys; r=[json.loads(l)['tokens_per_s'] for l in open(sys.argv[1]) if 'tokens_per_s' in l]; r=r[len(r)//4:]; print(round(sum(r)/len(r)))" "$out/metrics.jsonl"
  rm -rf "$out"
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

compare() {  # NAME SPEC STEPS FLAGS...
  local name=$1 spec=$2 steps=$3 f=() b=(); shift 3
  for ((i = 0; i < rounds; ++i)); do
    f+=("$(tok_s "$spec" "$steps" --precision f32 "$@")")
    b+=("$(tok_s "$spec" "$steps" --precision bf16 "$@")")
  done
  local mf mb; mf=$(median "${f[@]}"); mb=$(median "${b[@]}")
  printf '%-28s f32 %7s tok/s  bf16 %7s tok/s  bf16/f32 %.2f  (f32: %s; bf16: %s)\n' \
    "$name" "$mf" "$mb" "$(echo "$mb / $mf" | bc -l)" "${f[*]}" "${b[*]}"
}

compare gpt_tiny examples/gpt_tiny.textproto "${STEPS:-40}" --warmup 4
compare "gpt2-124m shape, seq $seq" bench/gpt2_124m_char.textproto \
  "${STEPS_124M:-8}" --seq "$seq" --micro-batch 4 --warmup 1
