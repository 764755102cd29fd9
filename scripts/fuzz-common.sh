# shellcheck shell=bash
# Shared by scripts/fuzz-onnx.sh and scripts/fuzz-plan.sh (sourced, not run):
# the clang fuzz build folder, the sanitizer environment, and a run of one
# libFuzzer target whose full log goes to a file while the terminal gets a
# summary.
#
# Environment:
#   BRAID_FUZZ_BUILD_DIR  build folder (default build-fuzz/)
#   BRAID_FUZZ_CC, BRAID_FUZZ_CXX   compilers (default clang-14, clang++-14)
#   BRAID_JOBS            build parallelism (default: nproc)

fuzz_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz_build="${BRAID_FUZZ_BUILD_DIR:-$fuzz_root/build-fuzz}"

# fuzz_build_target TARGET: configures the fuzz build folder once (clang,
# -DBRAID_ENABLE_FUZZERS=ON: the Braid libraries instrumented with
# -fsanitize=fuzzer-no-link,address,undefined) and builds only TARGET.
fuzz_build_target() {
  if [ ! -f "$fuzz_build/build.ninja" ]; then
    cmake -S "$fuzz_root" -B "$fuzz_build" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER="${BRAID_FUZZ_CC:-clang-14}" \
      -DCMAKE_CXX_COMPILER="${BRAID_FUZZ_CXX:-clang++-14}" \
      -DBRAID_ENABLE_FUZZERS=ON
  fi
  cmake --build "$fuzz_build" --target "$1" -j "${BRAID_JOBS:-$(nproc)}"
}

# fuzz_sanitizer_environment: reports with stacks; a UBSan report stops the
# run (the fuzz build also compiles with -fno-sanitize-recover=undefined).
fuzz_sanitizer_environment() {
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=1:symbolize=1"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}${UBSAN_OPTIONS:+:}print_stacktrace=1:halt_on_error=1"
  if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
    local s
    for s in llvm-symbolizer-14 llvm-symbolizer; do
      if command -v "$s" > /dev/null; then
        ASAN_SYMBOLIZER_PATH="$(command -v "$s")"
        export ASAN_SYMBOLIZER_PATH
        break
      fi
    done
  fi
}

# fuzz_run NAME WORKDIR ARTIFACTS -- COMMAND...: runs the fuzzer command in
# WORKDIR with its whole output in WORKDIR/fuzz.log, then prints what the
# log says: the first status line, the last one, the final statistics
# (executions, exec/s, peak memory), a failure report if there is one, and
# the new files in ARTIFACTS. Returns 1 for new failing inputs, the
# fuzzer's status if it failed otherwise, else 0.
fuzz_run() {
  local name="$1" work="$2" artifacts="$3"
  shift 4
  local log="$work/fuzz.log" before status=0
  mkdir -p "$work" "$artifacts"
  before="$(ls -1 "$artifacts")"
  echo "$name: fuzzing; log in $log"
  (cd "$work" && "$@") > "$log" 2>&1 || status=$?

  echo
  echo "=== $name summary ==="
  local first last execs rate="" took
  first=$(grep -m 1 -E '^#[0-9]+' "$log" || true)
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
  # Under -fork the final stats are the parent's own (0 executions when the
  # run is interrupted) while the status lines sum the jobs': the larger.
  local from_stats from_status
  from_stats=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  from_status=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<< "$last")
  execs="${from_stats:-$from_status}"
  if [ -n "$from_status" ] && [ -n "$execs" ] && [ "$from_status" -gt "$execs" ]; then
    execs="$from_status"
  fi
  if [ "$execs" = "$from_stats" ]; then
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  fi
  # -fork prints no final stats; its status lines end in "time: <seconds>s".
  took=$(sed -n 's/.* time: \([0-9]*\)s.*/\1/p' <<< "$last")
  if [ -z "$rate" ] && [ -n "$execs" ] && [ -n "$took" ] && [ "$took" -gt 0 ]; then
    rate=$((execs / took))
  fi
  echo "first status: ${first:-none}"
  echo "last status:  ${last:-none}"
  grep -E '^stat::' "$log" | sed 's/^/  /' || true
  echo "executions:   ${execs:-unknown} (${rate:-?} exec/s on average${took:+ over ${took} s})"
  # A failure: the sanitizer's or libFuzzer's report and what it saved.
  grep -m 1 -A 40 -E '^==[0-9]+==ERROR|runtime error:|^braid fuzz target:|uncaught exception' "$log" || true
  grep -E '^SUMMARY|Test unit written to' "$log" || true
  local new
  new=$(comm -13 <(sort <<< "$before") <(ls -1 "$artifacts" | sort))
  if [ -n "$new" ]; then
    echo "new failing inputs in $artifacts:"
    sed 's/^/  /' <<< "$new"
    return 1
  fi
  if [ "$status" -ne 0 ]; then
    echo "the fuzzer exited with status $status"
    return "$status"
  fi
  echo "no failures"
}
