#!/usr/bin/env bash
# Regenerates the precompiled example plans in examples/plans/ from
# examples/models/ with build/bin/braidc (and braid-opt, braid-translate for
# the one-rank tensor-parallel plans), then checks every plan on the CPU
# backend (check-plans.sh). See README.md. Run from anywhere:
#
#   examples/plans/make-plans.sh
#
# Environment: BRAID_BIN (default build/bin), PYTHON (default .venv/bin/python),
# BRAID_PLANS_OUT (default: this folder; elsewhere, the CPU check is skipped).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${BRAID_BIN:-$root/build/bin}
# BRAID_PLANS_OUT: write the plans elsewhere (the test that the committed
# plans are current regenerates them into a temporary folder).
out=${BRAID_PLANS_OUT:-$here}
mkdir -p "$out"
python=${PYTHON:-$root/.venv/bin/python}
models=$root/examples/models
hw=dgx-h100

for tool in braidc braid-opt braid-translate braid-run; do
  [[ -x $bin/$tool ]] || { echo "error: $bin/$tool not found (build first)" >&2; exit 2; }
done
[[ -x $python ]] || { echo "error: $python not found" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Tolerances against expected/: f32 plans against the f32 onnxruntime
# reference; bf16 plans against the same f32 reference (onnxruntime's CPU
# provider has no bf16 kernels for these models), so they cover bf16
# rounding of weights, inputs, every intermediate and the output.
f32_rtol=1e-4 f32_atol=1e-5
bf16_rtol=1e-2 bf16_atol=1e-2

manifest=$tmp/manifest.tsv
: > "$manifest"

# new_plan NAME: an empty examples/plans/NAME/ with inputs/ and expected/.
new_plan() {
  rm -rf "${out:?}/$1"
  mkdir -p "$out/$1/inputs" "$out/$1/expected"
}

# braidc_plan MODEL.onnx NAME [braidc options]
braidc_plan() {
  local onnx=$1 name=$2
  shift 2
  # From the model's folder, so that locations name the file without a
  # machine-specific path (the plans are committed and must reproduce).
  (cd "$(dirname "$onnx")" &&
    "$bin/braidc" "$(basename "$onnx")" --emit=plan \
      -o "$out/$name/plan.bplan" --progress=false "$@")
}

describe() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$manifest"; }

declare -A what=(
  [mlp]="MLP (LayerNorm, Linear 64->256, GELU erf, Linear, residual), x[4,64]"
  [gpt2]="GPT-2, 2 layers, n_embd 64, 4 heads, vocab 1000, ids[2,16]"
  [llama]="LLaMA, 2 layers, hidden 64, 4 heads / 2 kv heads, RoPE, ids[2,16]"
  [mixtral]="Mixtral, 2 layers, hidden 64, 4 experts top-2 (MoE), ids[2,16]"
)

for m in mlp gpt2 llama mixtral; do
  src=$models/$m
  ref=$src/test_data_set_0

  # float32: the model as exported; expected = the onnxruntime reference.
  name=${m}_f32
  echo "== $name"
  new_plan "$name"
  braidc_plan "$src/model.onnx" "$name"
  cp "$ref/input_0.pb" "$out/$name/inputs/input_0.pb"
  cp "$ref/output_0.pb" "$out/$name/expected/output_0.pb"
  describe "$name" f32 "$f32_rtol" "$f32_atol" \
    "${what[$m]}; single rank, one stream; braidc model.onnx"

  # bfloat16: every float of the model converted by to_bf16.py.
  name=${m}_bf16
  echo "== $name"
  new_plan "$name"
  "$python" "$here/to_bf16.py" "$src/model.onnx" "$tmp/${m}_bf16.onnx"
  braidc_plan "$tmp/${m}_bf16.onnx" "$name"
  "$python" "$here/to_bf16.py" --tensor "$ref/input_0.pb" \
    "$out/$name/inputs/input_0.pb"
  # onnxruntime on the bf16 model where it can run it, else the f32 reference.
  if "$python" - "$tmp/${m}_bf16.onnx" "$out/$name/inputs/input_0.pb" \
      "$out/$name/expected/output_0.pb" 2>/dev/null <<'EOF'
import sys
import onnx, onnxruntime as ort
from onnx import numpy_helper
model, inp, out = sys.argv[1:]
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
x = numpy_helper.to_array(onnx.load_tensor(inp))
y = s.run(None, {s.get_inputs()[0].name: x})[0]
onnx.save_tensor(numpy_helper.from_array(y, s.get_outputs()[0].name), out)
EOF
  then
    expected="onnxruntime on the bf16 model"
  else
    cp "$ref/output_0.pb" "$out/$name/expected/output_0.pb"
    expected="the f32 onnxruntime reference (onnxruntime cannot run the bf16 model)"
  fi
  describe "$name" bf16 "$bf16_rtol" "$bf16_atol" \
    "${what[$m]}; bf16 (to_bf16.py); expected: $expected"
done

# One rank, tensor parallel over a mesh axis of size 1: two streams
# (compute, comm) with events, all_reduce/all_gather on groups of one, and an
# overlap pass. braidc --parallel tp=1 is refused (nothing to partition), so:
# braidc --emit=braid, split fused projections, annotate_tp1.py (mesh
# tp = 1, column-parallel annotations), partition + overlap + schedule +
# braid-to-exec in braid-opt, then braid-translate --exec-to-plan.
# tp1_plan MODEL NAME COLUMN-REGEX OVERLAP-PASS DESCRIPTION
tp1_plan() {
  local m=$1 name=$2 column=$3 overlap=$4 description=$5
  local src=$models/$m
  echo "== $name"
  new_plan "$name"
  # In $tmp with relative names: locations must not carry the temp path.
  (
    cd "$tmp"
    cp "$src/model.onnx" "$m.onnx"
    "$bin/braidc" "$m.onnx" --emit=braid -o "$name.mlir" --progress=false
    "$bin/braid-opt" "$name.mlir" \
      --pass-pipeline='builtin.module(braid-split-fused-projections)' \
      -o "$name.split.mlir"
    "$python" "$here/annotate_tp1.py" "$name.split.mlir" "$name.tp1.mlir" \
      --column "$column"
    "$bin/braid-opt" "$name.tp1.mlir" -o "$name.exec.mlir" --pass-pipeline="builtin.module(braid-partition,$overlap,braid-schedule{hw=$hw},braid-verify-collectives,braid-to-exec)"
    cp "$name.safetensors" "$out/$name/plan.safetensors"
    cp "$name.exec.mlir" "$out/$name/"
    (cd "$out/$name" &&
      "$bin/braid-translate" --exec-to-plan "$name.exec.mlir" \
        -o plan.bplan --weights plan.safetensors &&
      rm "$name.exec.mlir")
  )
  cp "$src/test_data_set_0/input_0.pb" "$out/$name/inputs/input_0.pb"
  cp "$src/test_data_set_0/output_0.pb" "$out/$name/expected/output_0.pb"
  describe "$name" f32 "$f32_rtol" "$f32_atol" "${what[$m]}; $description"
}

tp1_plan gpt2 gpt2_tp1_domino2 \
  'lm\.transformer\.h\.\d+\.(attn\.c_attn|mlp\.c_fc)\.weight' \
  "braid-domino{split=rows chunks=2 force=true hw=$hw}" \
  "one rank, mesh tp=1, Megatron annotations, domino=2 (rows): streams compute+comm, 16 events, 8 all_reduce"
# LLaMA (dynamo export): q, k, v, gate and up weights of both layers.
tp1_plan llama llama_tp1_seq2 \
  'val_(59|62|64|291|293|299|301|303|521|523)' \
  "braid-seq-pipeline{chunks=2 force=true hw=$hw}" \
  "one rank, mesh tp=1, Megatron annotations, seq=2 (ISO): streams compute+comm, 24 events, 8 all_reduce + 4 all_gather"

mv "$manifest" "$out/manifest.tsv"
echo "== wrote $(wc -l < "$out/manifest.tsv") plans, $(du -sh "$out" | cut -f1) in $out"
if [[ $out == "$here" ]]; then
  "$here/check-plans.sh" "$bin/braid-run"
fi
