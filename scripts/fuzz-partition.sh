#!/usr/bin/env bash
# A long campaign of braid-fuzz-partition: random seeds for $1 seconds
# (default 600), in rounds of 2000 cases. Every round's output goes to
# build/fuzz/partition/<seed>.log and minimized reproducers to
# build/fuzz/partition/cases/; a summary of all rounds is printed and
# appended to build/fuzz/partition/summary.log. Extra arguments go to the
# fuzzer (e.g. --features=attention,mlp --mesh=tp=4). Exits 1 if any round
# found a mismatch or a crash.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-600}"
shift || true
build="${BRAID_BUILD_DIR:-$root/build}"
fuzzer="$build/bin/braid-fuzz-partition"
work="$build/fuzz/partition"
if [ ! -x "$fuzzer" ]; then
  cmake --build "$build" --target braid-fuzz-partition -j "${BRAID_JOBS:-2}"
fi
mkdir -p "$work/cases"
export OPENBLAS_NUM_THREADS=1

end=$((SECONDS + seconds))
rounds=0 cases=0 passed=0 rejected=0 mismatches=0 crashes=0
failing_logs=()
while [ "$SECONDS" -lt "$end" ]; do
  # Seeds far apart, so that rounds do not overlap.
  seed=$(( (RANDOM << 30 | RANDOM << 15 | RANDOM) * 4096 ))
  left=$((end - SECONDS))
  log="$work/$seed.log"
  status=0
  "$fuzzer" --seed="$seed" --count=2000 --time-limit="$left" \
    --max-minimize=5 --minimize-time=60 --save-dir="$work/cases" "$@" \
    >"$log" 2>&1 || status=$?
  line="$(grep '^braid-fuzz-partition: ' "$log" | tail -1 || true)"
  if [ -z "$line" ]; then
    echo "round with seed $seed ended without a summary (status $status):"
    tail -20 "$log"
    failing_logs+=("$log")
    crashes=$((crashes + 1))
    rounds=$((rounds + 1))
    continue
  fi
  read -r n p r m c < <(echo "$line" | sed -E \
    's/.*: ([0-9]+) configurations, ([0-9]+) passed, ([0-9]+) rejected.*, ([0-9]+) mismatches, ([0-9]+) crashes.*/\1 \2 \3 \4 \5/')
  rounds=$((rounds + 1))
  cases=$((cases + n)) passed=$((passed + p)) rejected=$((rejected + r))
  mismatches=$((mismatches + m)) crashes=$((crashes + c))
  if [ $((m + c)) -gt 0 ]; then
    failing_logs+=("$log")
  fi
done

summary="$(date -u +%FT%TZ) braid-fuzz-partition campaign: $seconds s, $rounds rounds, $cases configurations, $passed passed, $rejected rejected, $mismatches mismatches, $crashes crashes"
echo "$summary" | tee -a "$work/summary.log"
for log in "${failing_logs[@]+"${failing_logs[@]}"}"; do
  echo "  failures in $log"
done
[ $((mismatches + crashes)) -eq 0 ]
