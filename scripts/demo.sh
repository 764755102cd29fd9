#!/usr/bin/env bash
# The README's main job on the bundled default: installs, builds, then takes the
# hand-written tensor-parallel GPT-2 block (examples/ir/gpt2_block_tp2.mlir)
# through braid-opt: verify, round-trip, canonicalize, and report its cost and
# dimension mappings. Grows into "compile and run a bundled ONNX model" as the
# frontend and runtime land.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >/dev/null
build="${BRAID_BUILD_DIR:-$root/build}"
opt="$build/bin/braid-opt"
model="${1:-$root/examples/ir/gpt2_block_tp2.mlir}"
out="$build/demo"
mkdir -p "$out"

echo "== $model"
"$opt" "$model" -o "$out/roundtrip-1.mlir"
"$opt" "$out/roundtrip-1.mlir" -o "$out/roundtrip-2.mlir"
if cmp -s "$out/roundtrip-1.mlir" "$out/roundtrip-2.mlir"; then
  echo "round-trip: parse -> print -> parse -> print is stable"
else
  echo "round-trip: printed forms differ (see $out/roundtrip-*.mlir)" >&2
  exit 1
fi
"$opt" "$model" --canonicalize --cse -o "$out/canonical.mlir"
echo "canonicalized: $out/canonical.mlir"
echo "ops by kind:"
grep -oE '^ *(%[^=]*= )?braid\.[a-z_]+' "$out/canonical.mlir" |
  grep -oE 'braid\.[a-z_]+' | sort | uniq -c | sort -rn | sed 's/^/  /'
echo "collectives (async on a stream / total):"
echo "  $(grep -c 'braid.async on' "$out/canonical.mlir") / $(grep -cE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' "$out/canonical.mlir")"
"$opt" "$model" --braid-print-dimension-mapping -o /dev/null 2>/dev/null &&
  echo "dimension mappings: consistent on every op"
"$opt" "$model" --braid-cost-report=per-op=false \
  -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 |
  sed -n 's/.*remark: total: /cost: /p'
