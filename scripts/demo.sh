#!/usr/bin/env bash
# The README's main job on the bundled default: installs and builds, then
#  1. compiles the bundled ONNX GPT-2 (examples/models/gpt2) to braid IR with
#     its weights (attention raised to braid.attention) and to a plan, and
#  2. runs the plan with braid-run on the bundled input, checking the logits
#     against onnxruntime's reference output (and, on a machine with an
#     NVIDIA GPU, again with --backend cuda as a CUDA graph);
#  3. partitions it over 2 ranks (Megatron tensor parallelism), splits the
#     sequence into two ISO chunks whose all-reduces overlap compute, and
#     runs it under mpirun on 2 ranks against the same reference, with the
#     overlap report for a DGX-H100;
#  4. takes the hand-written tensor-parallel GPT-2 block
#     (examples/ir/gpt2_block_tp2.mlir) through braid-opt: verify, round-trip,
#     canonicalize, dimension mappings and cost.
# Pass another model folder (model.onnx + test_data_set_0/) as $1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >/dev/null
build="${BRAID_BUILD_DIR:-$root/build}"
bin="$build/bin"
model_dir="${1:-$root/examples/models/gpt2}"
out="$build/demo"
mkdir -p "$out"

echo "== compile $model_dir/model.onnx"
"$bin/braidc" "$model_dir/model.onnx" -o "$out/model.mlir" --progress=false
echo "braid IR: $out/model.mlir ($(grep -c 'braid.weight' "$out/model.mlir") weights in $out/model.safetensors)"
echo "ops by kind:"
grep -oE '^ *(%[^=]*= )?braid\.[a-z_]+' "$out/model.mlir" |
  grep -oE 'braid\.[a-z_]+' | sort | uniq -c | sort -rn | head -12 | sed 's/^/  /'
"$bin/braid-opt" "$out/model.mlir" --braid-cost-report=per-op=false \
  -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 |
  sed -n 's/.*remark: total: /cost: /p'

echo "== compile to a plan and run it with braid-run (CPU) vs onnxruntime"
"$bin/braidc" "$model_dir/model.onnx" --emit=plan -o "$out/model.bplan" --progress=false
"$bin/braid-run" "$out/model.bplan" --inputs "$model_dir/test_data_set_0" \
  --expected "$model_dir/test_data_set_0" --trace "$out/trace.json" | tail -n 4
echo "Chrome trace (open in Perfetto): $out/trace.json"
# The same plan on the GPU when there is one (and the CUDA backend was built).
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "== the same plan on the GPU (CUDA backend, replayed as a CUDA graph)"
  "$bin/braid-run" "$out/model.bplan" --backend cuda --cuda-graph --repeat 5 \
    --inputs "$model_dir/test_data_set_0" \
    --expected "$model_dir/test_data_set_0" | tail -n 3
else
  echo "(no GPU here: skipping braid-run --backend cuda)"
fi

echo "== tensor parallel (tp=2) with ISO sequence chunks, 2 MPI ranks"
# The example is tiny: the cost model estimates two chunks slower than one
# (braidc would keep the un-chunked program and warn); --force-overlap
# shows the pipelined plan anyway.
"$bin/braidc" "$model_dir/model.onnx" --parallel tp=2 --overlap seq=2 \
  --force-overlap -o "$out/model-tp2.mlir" --progress=false
"$bin/braid-opt" "$out/model-tp2.mlir" --braid-overlap-report=hw=dgx-h100 \
  -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 |
  sed -n 's/.*remark: makespan/estimated on DGX-H100: makespan/p'
"$bin/braidc" "$model_dir/model.onnx" --parallel tp=2 --overlap seq=2 \
  --force-overlap --emit=plan -o "$out/model-tp2.bplan" --progress=false
mpirun_root=()
[ "$(id -u)" = 0 ] && mpirun_root=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
"${mpirun_root[@]}" mpirun --oversubscribe -n 2 "$bin/braid-run" "$out/model-tp2.bplan" \
  --inputs "$model_dir/test_data_set_0" --expected "$model_dir/test_data_set_0" |
  grep -E '^\[rank [0-9]+\] (PASS|FAIL)'

ir="$root/examples/ir/gpt2_block_tp2.mlir"
echo "== $ir (tensor parallel, tp=2, async all-reduces)"
"$bin/braid-opt" "$ir" -o "$out/roundtrip-1.mlir"
"$bin/braid-opt" "$out/roundtrip-1.mlir" -o "$out/roundtrip-2.mlir"
if cmp -s "$out/roundtrip-1.mlir" "$out/roundtrip-2.mlir"; then
  echo "round-trip: parse -> print -> parse -> print is stable"
else
  echo "round-trip: printed forms differ (see $out/roundtrip-*.mlir)" >&2
  exit 1
fi
"$bin/braid-opt" "$ir" --canonicalize --cse -o "$out/canonical.mlir"
echo "collectives (async on a stream / total):" \
  "$(grep -c 'braid.async on' "$out/canonical.mlir") /" \
  "$(grep -cE 'braid\.(all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|broadcast) ' "$out/canonical.mlir")"
"$bin/braid-opt" "$ir" --braid-print-dimension-mapping -o /dev/null 2>/dev/null &&
  echo "dimension mappings: consistent on every op"
"$bin/braid-opt" "$ir" --braid-cost-report=per-op=false \
  -mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 |
  sed -n 's/.*remark: total: /cost: /p'
