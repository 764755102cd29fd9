#!/usr/bin/env bash
# Fuzzes the runtime's plan loader with libFuzzer for $1 seconds (default 60),
# seeded with plans compiled from the example models. Uses the clang build
# folder of scripts/fuzz-onnx.sh (build-fuzz/); new failing inputs are kept in
# build-fuzz/fuzz/plan-loader/artifacts and make the script exit 1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
fuzz_build="$root/build-fuzz"
work="$fuzz_build/fuzz/plan-loader"
if [ ! -f "$fuzz_build/build.ninja" ]; then
  cmake -S "$root" -B "$fuzz_build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DBRAID_ENABLE_FUZZERS=ON >/dev/null
fi
cmake --build "$fuzz_build" --target plan-loader-fuzzer -j "${BRAID_JOBS:-2}"
mkdir -p "$work/corpus" "$work/artifacts"
# Seeds: real plans from the normal build's compiler, when it is there.
if [ -x "$root/build/bin/braidc" ]; then
  for model in "$root"/examples/models/*/model.onnx; do
    name="$(basename "$(dirname "$model")")"
    "$root/build/bin/braidc" "$model" --emit=plan --progress=false \
      -o "$work/seed-$name.bplan" 2>/dev/null &&
      cp "$work/seed-$name.bplan" "$work/corpus/" || true
  done
fi
before=$(ls "$work/artifacts" | wc -l)
"$fuzz_build/bin/plan-loader-fuzzer" "$work/corpus" \
  -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 2>&1 |
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|^#[0-9]+ *DONE|ERROR|SUMMARY" || true
after=$(ls "$work/artifacts" | wc -l)
echo "plan-loader fuzzing: $seconds s, new failing inputs: $((after - before))"
[ "$after" -eq "$before" ]
