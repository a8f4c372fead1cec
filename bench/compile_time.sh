#!/usr/bin/env bash
# Compile time of `strata compile` (pp 1, fusion on) by layer count, on
# GPT-3 175B's layer shape (hidden 12288, 96 heads, seq 2048, vocab 51200,
# micro batch 1): seconds and peak memory per layer count, and the ratio of
# each time to the previous one (2.0 per doubling is linear).
# LAYERS="24 48 96" overrides the counts; STRATA=path picks the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
S=${STRATA:-build/tools/strata/strata}
[ -x "$S" ] || scripts/setup.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
prev=""
printf '%8s %10s %10s %8s\n' layers seconds peak_MiB ratio
for L in ${LAYERS:-24 48 96 192 384}; do
  cat > "$dir/g$L.textproto" <<SPEC
name: "gpt3-shape-$L" family: GPT vocab_size: 51200 hidden: 12288 layers: $L
heads: 96 seq_len: 2048 micro_batch: 1
SPEC
  /usr/bin/time -f "%e %M" -o "$dir/time" "$S" compile "$dir/g$L.textproto" -o "$dir/g.plan" > /dev/null
  read -r secs kib < "$dir/time"
  ratio=$([ -n "$prev" ] && awk -v a="$secs" -v b="$prev" 'BEGIN{printf "%.2f", a/b}' || echo -)
  printf '%8s %10s %10d %8s\n' "$L" "$secs" $((kib / 1024)) "$ratio"
  prev=$secs
done
