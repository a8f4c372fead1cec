#!/usr/bin/env bash
# The cuda-interpret verify matrix of issue 16: `strata verify --device
# cuda-interpret` (NCCL emulated over Gloo) against the serial CPU plan,
# every tensor within verify's 1e-5 relative (the loss and gradients of a
# microbatch, each step's loss, AdamW's moments after the steps), over
# tp 1/2/4 x sp x dp 1/2 x ZeRO-1 x pp 1/2 x 1F1B/interleaved, GPT and
# Llama. By default each layout runs in one process (N emulated GPUs); with
# --launch as `strata launch --nproc N -- strata verify ...`, one process per
# emulated GPU, each of which checks the tensors gathered from all ranks
# against the serial plan it runs itself (every rank must print OK).
# Prints one line per layout (PASS / FAIL, seconds, verify's largest
# difference) and a summary; exits non-zero if any layout failed. Long
# (each layout compiles and runs its kernels in interpret mode): run it under
# nice on a quiet machine.
#
#   [STRATA=BINARY] scripts/nccl_verify_matrix.sh [--launch] [BUILD_DIR] [FILTER_REGEX]
#
# FILTER_REGEX selects layouts by their name (e.g. 'gpt.*pp2').
set -uo pipefail
cd "$(dirname "$0")/.."
launch=0
if [ "${1:-}" = --launch ]; then
  launch=1
  shift
fi
build=${1:-build}
filter=${2:-.}
strata=${STRATA:-$build/tools/strata/strata}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The models of test/cuda/NcclVerifyTest.cpp: 4 blocks so that pp 2
# interleaved:2 has a block per virtual stage; vocab padded to 32, hidden 32,
# 4 heads (Llama: 2 KV heads), so tp 4 divides every dimension.
head -c 20000 README.md > "$work/text.txt"
for family in GPT LLAMA; do
  extra=""
  [ $family = LLAMA ] && extra="kv_heads: 2 ffn: 64"
  cat > "$work/$family.textproto" <<EOF
name: "m" family: $family vocab_size: 30 make_vocab_size_divisible_by: 16
hidden: 32 layers: 4 heads: 4 seq_len: 16 micro_batch: 4 dropout: 0.1 $extra
data { path: "$work/text.txt" }
training { steps: 4 lr: 1e-2 min_lr: 1e-3 warmup: 1 decay_iters: 4
  eval_every: 4 seed: 3 grad_clip: 1.0 }
EOF
done

pass=0
fail=0
largest=0
total=$(date +%s)
failed=()
for family in GPT LLAMA; do
  for tp in 1 2 4; do
    for sp in 0 1; do
      [ $tp = 1 ] && [ $sp = 1 ] && continue
      for dp in 1 2; do
        for zero in 0 1; do
          [ $dp = 1 ] && [ $zero = 1 ] && continue
          for pipe in pp1 1f1b interleaved; do
            name="${family,,}_tp${tp}$([ $sp = 1 ] && echo _sp)_dp${dp}$([ $zero = 1 ] && echo _zero1)"
            flags=(--tp $tp --dp $dp)
            [ $sp = 1 ] && flags+=(--sp)
            [ $zero = 1 ] && flags+=(--distributed-optimizer)
            case $pipe in
            pp1) ;;
            1f1b)
              name+="_pp2_1f1b"
              flags+=(--pp 2 --microbatches 4 --schedule 1f1b) ;;
            interleaved)
              name+="_pp2_interleaved2"
              flags+=(--pp 2 --microbatches 4 --schedule interleaved:2) ;;
            esac
            [[ $name =~ $filter ]] || continue
            start=$(date +%s)
            verify=("$strata" verify "$work/$family.textproto" "${flags[@]}"
              --steps 2 --device cuda-interpret)
            ranks=1
            if [ $launch = 1 ]; then
              stages=2
              [ $pipe = pp1 ] && stages=1
              ranks=$((tp * dp * stages))
              verify=("$strata" launch --nproc $ranks --master-port 0 --
                "${verify[@]}")
            fi
            # Every rank's verdict: `OK: ...` alone, `[rank r] OK: ...`
            # under launch.
            "${verify[@]}" > "$work/out" 2>&1
            code=$?
            oks=$(grep -c "OK: " "$work/out")
            secs=$(($(date +%s) - start))
            if [ $code = 0 ] && [ "$oks" = $ranks ]; then
              pass=$((pass + 1))
              ok=$(grep -m1 "OK: " "$work/out")
              worst=$(sed -n 's/.*largest difference \([0-9.e+-]*\),.*/\1/p' \
                <<< "$ok")
              largest=$(awk -v a="$largest" -v b="${worst:-0}" \
                'BEGIN { print (b + 0 > a + 0) ? b : a }')
              echo "PASS $name $secs s: ${ok#*OK: }"
            else
              fail=$((fail + 1))
              failed+=("$name")
              echo "FAIL $name $secs s (exit $code, $oks of $ranks ranks OK):" \
                "$(grep -m3 -E "DIVERGES|error" "$work/out" | tr '\n' ' ')"
            fi
          done
        done
      done
    done
  done
done
echo "nccl_verify_matrix$([ $launch = 1 ] && echo " --launch"):" \
  "$pass passed, $fail failed${failed:+: ${failed[*]}};" \
  "largest difference $largest; $(($(date +%s) - total)) s"
[ $fail = 0 ] && [ $pass -gt 0 ]
