#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-14, ASan + UBSan; test/fuzz) into
# build-fuzz and runs each for SECONDS (default 60) from its seed corpus and
# dictionary, then prints executions, exec/s and findings per target. Exits
# 1 on any finding; the reproducer stays in build-fuzz/fuzz/findings/<target>/
# (rerun it with `build-fuzz/test/fuzz/fuzz_<target> <file>`; then fix the
# reader and add the file to test/fuzz/regressions/<target>/ with a .msg,
# see docs/fuzzing.md).
#
#   scripts/fuzz.sh [SECONDS]
# Environment: FUZZ_TARGETS (default: all six), FUZZ_RUNS (stop a target
# after this many executions, if that comes before SECONDS), FUZZ_RSS_MB (2048),
# FUZZ_JOBS (ninja -j, default 2), STRATA_BUILD_LOCK (a file to flock
# around the build, on a shared machine). Seeds made from the real CLI
# (plans, checkpoints) need the default build in ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
read -r -a targets <<<"${FUZZ_TARGETS:-ir model_spec plan checkpoint tensor_archive pass_pipeline}"
rss_mb=${FUZZ_RSS_MB:-2048}
build=build-fuzz
work=$build/fuzz

if [ ! -f $build/build.ninja ]; then
  cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DSTRATA_FUZZ=ON >/dev/null
fi
lock=()
[ -n "${STRATA_BUILD_LOCK:-}" ] && lock=(flock "$STRATA_BUILD_LOCK")
build_start=$SECONDS
"${lock[@]}" ninja -C $build -j "${FUZZ_JOBS:-2}" "${targets[@]/#/fuzz_}" >/dev/null
# The seeds of plan and checkpoint need strata; every target's dictionary
# needs strata-opt.
cli=(strata-opt)
[[ " ${targets[*]} " =~ " plan "|" checkpoint " ]] && cli+=(strata)
for c in "${cli[@]}"; do
  [ -x build/tools/$c/$c ] || "${lock[@]}" ninja -C build "$c" >/dev/null
done
echo "fuzz: built ${#targets[@]} targets in $((SECONDS - build_start)) s"

rm -rf $work/seeds
test/fuzz/make_seeds.py --strata build/tools/strata/strata \
  --strata-opt build/tools/strata-opt/strata-opt --out $work/seeds --targets "${targets[*]}"

# Seed folders (read only; new inputs go to $work/corpus/<target>), the
# longest input, and the dictionary of each target.
seeds() {
  case $1 in
  ir) echo test/corpus test/fuzz/regressions/ir ;;
  model_spec) echo examples test/fuzz/corpus/model_spec test/fuzz/regressions/model_spec ;;
  plan | checkpoint | pass_pipeline) echo $work/seeds/$1 test/fuzz/regressions/$1 ;;
  tensor_archive) echo test/fuzz/corpus/tensor_archive test/fuzz/regressions/tensor_archive ;;
  esac
}
max_len() {
  case $1 in
  plan) echo 262144 ;;
  checkpoint) echo 98304 ;;
  *) echo 16384 ;;
  esac
}

export TMPDIR=/dev/shm  # the plan, checkpoint and archive readers take files
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
runs=()
[ -n "${FUZZ_RUNS:-}" ] && runs=(-runs="$FUZZ_RUNS")
status=0
summary=()
for t in "${targets[@]}"; do
  rm -rf $work/findings/$t
  mkdir -p $work/corpus/$t $work/findings/$t
  dirs=()
  for d in $(seeds $t); do [ -d "$d" ] && dirs+=("$d"); done
  dict=()
  [ -f $work/seeds/$t.dict ] && dict=(-dict=$work/seeds/$t.dict)
  log=$work/$t.log
  rc=0
  $build/test/fuzz/fuzz_$t $work/corpus/$t "${dirs[@]}" "${dict[@]}" \
    -max_total_time="$seconds" "${runs[@]}" -rss_limit_mb="$rss_mb" -timeout=10 \
    -max_len="$(max_len $t)" -print_final_stats=1 \
    -artifact_prefix=$work/findings/$t/ >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  found=$(find $work/findings/$t -type f | wc -l)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  line=$(printf '%-15s %10s execs %7s exec/s %6s s  %s findings' "$t" "${execs:-?}" \
    "${rate:-?}" "${took:-$seconds}" "$found")
  summary+=("$line")
  echo "fuzz: $line"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    status=1
    grep -E "ERROR|SUMMARY|invariant|Test unit written" "$log" | head -5 || true
    echo "fuzz: $t: reproduce with $build/test/fuzz/fuzz_$t $(find $work/findings/$t -type f | head -1) (log: $log)"
  fi
done
echo "fuzz: summary (${seconds} s per target)"
printf '  %s\n' "${summary[@]}"
exit $status
