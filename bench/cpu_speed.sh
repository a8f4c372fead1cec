#!/usr/bin/env bash
# CPU training throughput on nanoGPT's Shakespeare configuration
# (examples/gpt_tiny.textproto): strata (with fusion and, when available,
# without), and a PyTorch eager reference of the same model run in this same
# script with the same BLAS kernels and thread count. Prints tokens/s (the
# median of ROUNDS rounds, default 3) and the
# ratio strata / PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
S=${STRATA:-build/tools/strata/strata}  # STRATA=build-x/tools/strata/strata
[ -x "$S" ] || scripts/setup.sh
data=../shared/data/tinyshakespeare.txt
steps=${STEPS:-60}
threads=${THREADS:-$(nproc)}
# Same BLAS kernels for every contender (strata would pick them itself; see
# runtime/cpu/ProcessEnv.h): OpenBLAS's AVX-512 kernels where the CPU has
# them. PyTorch's idle OpenMP workers spin ~100 us then sleep, as strata's
# own pool does (runtime/kernels/Parallel.cpp).
if grep -qw avx512bw /proc/cpuinfo; then core=SkylakeX; else core=Haswell; fi
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$core} GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-2000}
# strata tiles GEMMs over its own threads (OpenBLAS single-threaded);
# PyTorch gets OpenBLAS's and OpenMP's thread pools of the same size.
export STRATA_NUM_THREADS=$threads

strata_tok_s() {  # mean tokens/s over the last 3/4 of the steps
  local out; out=$(mktemp -d)
  "$S" train examples/gpt_tiny.textproto --data "$data" --steps "$steps" --eval-every 0 \
    --sample 0 --out "$out" "$@" > /dev/null
  /usr/bin/python3 -c "import json,sys; r=[json.loads(l)['tokens_per_s'] for l in open(sys.argv[1])]; r=r[len(r)//4:]; print(round(sum(r)/len(r)))" "$out/metrics.jsonl"
  rm -rf "$out"
}

# PyTorch's OpenMP pool and OpenBLAS's pthreads pool can fight over the
# cores when OpenMP workers spin: it runs both ways and keeps its best.
torch_tok_s() {
  env "$@" OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads /usr/bin/python3 \
    bench/torch_train_speed.py --data "$data" --steps "$steps" --threads "$threads" | awk '{print $2}'
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# ROUNDS rounds, the contenders back to back in each, medians reported: a
# shared machine's load comes and goes, and hits every contender alike.
rounds=${ROUNDS:-3}
fusion_flag=$("$S" train --help | grep -c -- --no-fusion || true)
F=() U=() TS=() TP=()
for ((r = 0; r < rounds; ++r)); do
  F+=("$(strata_tok_s)")
  if [ "$fusion_flag" -gt 0 ]; then U+=("$(strata_tok_s --no-fusion)"); fi
  TS+=("$(torch_tok_s)")
  TP+=("$(torch_tok_s OMP_WAIT_POLICY=passive)")
done
fused=$(median "${F[@]}")
torch_spin=$(median "${TS[@]}") torch_passive=$(median "${TP[@]}")
torch=$(( torch_spin > torch_passive ? torch_spin : torch_passive ))
echo "strata (default)      $fused tokens/s   (rounds: ${F[*]})"
if [ "$fusion_flag" -gt 0 ]; then
  echo "strata --no-fusion    $(median "${U[@]}") tokens/s   (rounds: ${U[*]})"
fi
echo "pytorch eager         $torch tokens/s   (torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), BLAS core $OPENBLAS_CORETYPE; spinning ${TS[*]}, passive ${TP[*]})"
/usr/bin/python3 -c "print(f'ratio strata/pytorch  {$fused/$torch:.2f}x   (medians of $rounds rounds; load average now: $(cut -d' ' -f1-3 /proc/loadavg))')"
