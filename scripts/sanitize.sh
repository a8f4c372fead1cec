#!/usr/bin/env bash
# Builds everything with AddressSanitizer + UBSan (STRATA_SANITIZE=ON) into
# build-asan and runs the whole default test suite (ctest -LE gpu) under
# them: a memory error, a leak or undefined behaviour fails its test. Prints
# ctest's summary and each sanitizer report found in the test output.
#   scripts/sanitize.sh [ctest args]
# Environment: SANITIZE_TARGETS (build only these, in this order, e.g.
# "strata cli_test run_safety_test"; pass ctest a matching -L/-R), SANITIZE_JOBS
# (ninja -j, default 2), STRATA_BUILD_LOCK (a file to flock around the build,
# on a shared machine: it is taken for SANITIZE_CHUNK (default 6) objects of a
# target at a time, then for the target's link, so other builds run in between
# and a cold build of an hour never holds it for more than a few minutes).
# Every target is then built once more (what others' edits made stale during
# the build); a target that does not build loses its old binary, so no test
# runs a stale one.
# Build type Sanitize (-O1 -g1): ASan's recommended optimization level, with
# line tables for the reports; RelWithDebInfo's -O2 -g takes much longer to
# compile and link on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-asan
if [ ! -f $build/build.ninja ]; then
  cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
    "-DCMAKE_CXX_FLAGS_SANITIZE=-O1 -g1 -DNDEBUG" \
    "-DCMAKE_C_FLAGS_SANITIZE=-O1 -g1 -DNDEBUG" -DSTRATA_SANITIZE=ON >/dev/null
fi
# The Python references (STRATA_TEST_PYTHON) live in the default build's venv.
[ -e $build/venv ] || ln -s ../build/venv $build/venv
start=$SECONDS
build_rc=0
# -k 0: a target that does not build fails the run, the others' tests still run.
build() {
  ninja -C $build -k 0 -j "${SANITIZE_JOBS:-2}" "$@" >>$build/build.log 2>&1 || build_rc=$?
}
: >$build/build.log
if [ -n "${SANITIZE_TARGETS:-}" ]; then
  targets=$SANITIZE_TARGETS
else
  # Executables: the tools (many tests run them) first, the benchmarks (no
  # test runs them) last; gtest_discover_tests' [1]_tests.cmake outputs share
  # their link edges and are left out.
  targets=$(ninja -C $build -t targets all | sed -n 's/: CXX_EXECUTABLE_LINKER.*//p' |
    grep -v '\[' | awk '/^tools\//{print; next} /^bench\//{b = b $0 "\n"; next}
      {t = t $0 "\n"} END{printf "%s%s", t, b}')
fi
locked_build() {
  if [ -n "${STRATA_BUILD_LOCK:-}" ]; then
    exec 9>"$STRATA_BUILD_LOCK"
    flock 9
    build "$@"
    exec 9>&-
  else
    build "$@"
  fi
}
chunk=${SANITIZE_CHUNK:-6}
failed=()
for round in 1 2; do
  for t in $targets; do
    build_rc_before=$build_rc
    if [ "$round" -eq 1 ] && [ -n "${STRATA_BUILD_LOCK:-}" ]; then
      # The target's objects not built yet, a few per lock hold.
      mapfile -t objs < <(ninja -C $build -t inputs "$t" | grep '\.o$' |
        while read -r o; do [ -e "$build/$o" ] || echo "$o"; done)
      for ((i = 0; i < ${#objs[@]}; i += chunk)); do
        locked_build "${objs[@]:i:chunk}"
      done
    fi
    locked_build "$t" # links; round 2: rebuilds what changed meanwhile
    if [ "$build_rc" -ne "$build_rc_before" ]; then
      echo "sanitize: $t failed to build (round $round)"
      [ "$round" -eq 2 ] && failed+=("$t")
    fi
    echo "sanitize: round $round: $t at $((SECONDS - start)) s"
  done
  # Round 2 decides; a target that failed in round 1 gets another try.
  [ "$round" -eq 1 ] && build_rc=0
done
if [ -z "${SANITIZE_TARGETS:-}" ]; then
  locked_build # what is left (custom targets)
fi
for t in "${failed[@]}"; do rm -f "$build/$t"; done # no stale binary runs
echo "sanitize: built in $((SECONDS - start)) s (rc $build_rc, log: $build/build.log)"
grep -E "^FAILED:" $build/build.log || true

# A report aborts (SIGABRT), so a test that expects its command to fail
# (lit's `not`, the CLI's bad-input tests) fails on it too instead of taking
# the sanitizer's exit code 1 for the expected error. ASan and LeakSanitizer
# reports also go to files under $reports, so one in a passing test's output
# is counted as well (UBSan next to ASan ignores log_path: its reports abort
# the test and are in ctest's output).
reports=$build/sanitizer-reports
rm -rf $reports && mkdir -p $reports
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:log_path=$PWD/$reports/asan}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
log=$build/sanitize.log
start=$SECONDS
rc=0
# gpu_bundle packs the build into the GPU bundle and checks its 64 MiB
# limit: a sanitizer build's binaries (about 390 MB) are not what it ships.
ctest --test-dir $build -LE gpu -E '^gpu_bundle$' -j2 --output-on-failure "$@" \
  >"$log" 2>&1 || rc=$?
echo "sanitize: ctest ran in $((SECONDS - start)) s (log: $log)"
# A file with only ASan's makecontext warning (interpret mode's fibers) is
# not a report.
echo "sanitize: $(grep -l 'ERROR:' $reports/* 2>/dev/null | wc -l) ASan/LSan report files in $reports;" \
  "$(grep -c 'runtime error:' "$log" || true) UBSan reports in $log"
cat $reports/* "$log" 2>/dev/null |
  grep -E "^(ERROR: AddressSanitizer|ERROR: LeakSanitizer|SUMMARY: (Address|Leak|UndefinedBehavior)Sanitizer)|runtime error:" |
  sort | uniq -c | sort -rn | head -40 || true
sed -n '/tests passed/,$p' "$log"
[ "$build_rc" -eq 0 ] || exit "$build_rc"
exit $rc
