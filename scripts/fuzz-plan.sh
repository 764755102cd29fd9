#!/usr/bin/env bash
# Fuzzes the runtime's readers of untrusted files with libFuzzer:
#
#   scripts/fuzz-plan.sh [plan|weights] [seconds] [libFuzzer flags...]
#
#   plan     (default) tools/fuzz/plan-loader-fuzzer: .bplan bytes through the
#            plan loader, then decoded as a backend does
#   weights  tools/fuzz/safetensors-fuzzer: .safetensors bytes through the
#            weights reader, then loaded by a plan made for its tensors
#   seconds  how long (default 60); 0: no limit, e.g. with -runs=10000000
#
# Uses the clang build folder of scripts/fuzz-onnx.sh (build-fuzz/) and
# builds only the fuzzer. Seeds are rebuilt every run from real files: the
# example plans (examples/plans) and, when the normal build has braidc,
# plans and weights it compiles from examples/models with several
# --parallel/--overlap choices; the weights fuzzer also gets a few small
# files written here (every dtype, metadata, a scalar, an empty tensor).
# The fuzzer's corpus is kept between runs in build-fuzz/fuzz/<target>/.
# The whole log goes to build-fuzz/fuzz/<target>/fuzz.log (protobuf's own
# logging is silenced in the fuzzer); the terminal gets the statistics,
# exec/s included. Failing inputs land in build-fuzz/fuzz/<target>/artifacts
# and make the script exit 1; once fixed, copy them to
# runtime/unittests/exec/fuzz-regressions/ (plan-* / weights-*), which the
# unit tests replay. One process on one core: run it with `nice -n 19` on a
# shared machine.
set -euo pipefail
# shellcheck source=scripts/fuzz-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/fuzz-common.sh"
root="$fuzz_root"
target=plan
case "${1:-}" in
  plan | weights) target="$1"; shift ;;
esac
seconds="${1:-60}"
shift $(( $# > 0 ? 1 : 0 ))
case "$seconds" in
  '' | *[!0-9]*) echo "usage: $0 [plan|weights] [seconds] [libFuzzer flags...]" >&2; exit 2 ;;
esac
if [ "$target" = plan ]; then
  fuzzer=plan-loader-fuzzer
else
  fuzzer=safetensors-fuzzer
fi
# The fuzzers skip inputs over 1 MiB. Weights files are mostly tensor data,
# which only gets copied, so large ones are slow to run and their mutations
# rarely touch the header: their seeds stop at 256 KiB.
max_seed_bytes=$((1 << 20))
if [ "$target" = weights ]; then
  max_seed_bytes=$((1 << 18))
fi

fuzz_build_target "$fuzzer"

work="$fuzz_build/fuzz/$fuzzer"
seeds="$work/seeds"   # rebuilt every run, read only for the fuzzer
corpus="$work/corpus" # kept between runs; the fuzzer adds what it finds here
compiled="$work/compiled"
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$compiled"

add_seed() { # file, name in the seed folder
  if [ "$(stat -c %s "$1")" -le "$max_seed_bytes" ]; then
    cp "$1" "$seeds/$2"
  fi
}

# Real plans and the weights braidc writes beside them.
braidc="$root/build/bin/braidc"
if [ -x "$braidc" ]; then
  while read -r model options; do
    name="$model${options:+-}${options//[^a-z0-9]/}"
    if [ ! -f "$compiled/$name.bplan" ]; then
      # shellcheck disable=SC2086 # options are words
      "$braidc" "$root/examples/models/$model/model.onnx" $options \
        --progress=false -o "$compiled/$name.bplan" 2> /dev/null ||
        echo "fuzz-plan: braidc $model $options failed; seed left out"
    fi
  done <<'EOF'
mlp
gpt2 --parallel=tp=2 --overlap=domino=2 --force-overlap
gpt2 --parallel=dp=2,tp=2 --overlap=schedule
llama --parallel=tp=2 --overlap=seq=2 --force-overlap
llama --parallel=cp=2 --overlap=ring
mixtral --parallel=ep=2 --overlap=comet=2
EOF
else
  echo "fuzz-plan: no $braidc; seeding from examples/plans only"
fi
# Small real weights files: braid-translate imports the ONNX importer's test
# models and writes their initializers.
translate="$root/build/bin/braid-translate"
if [ "$target" = weights ] && [ -x "$translate" ]; then
  for model in "$root"/test/frontend/onnx/*.onnxtxt; do
    name="onnx-test-$(basename "$model" .onnxtxt)"
    [ -f "$compiled/$name.safetensors" ] ||
      "$translate" --import-onnx --raw "$model" --progress=false \
        --weights "$compiled/$name.safetensors" -o /dev/null 2> /dev/null ||
      true
    [ -f "$compiled/$name.safetensors" ] &&
      add_seed "$compiled/$name.safetensors" "$name.safetensors"
  done
fi
shopt -s nullglob
for plan in "$root"/examples/plans/*/plan.bplan "$compiled"/*.bplan; do
  name="$(basename "$(dirname "$plan")")-$(basename "$plan" .bplan)"
  if [ "$target" = plan ]; then
    add_seed "$plan" "$name.bplan"
  elif [ -f "${plan%.bplan}.safetensors" ]; then
    add_seed "${plan%.bplan}.safetensors" "$name.safetensors"
  fi
done
shopt -u nullglob

# -entropic=0: libFuzzer's entropic bookkeeping took a third of the time
# (docs/results.md, Fuzzing); a plan's structure fits in 16 KiB.
flags=(-max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 -entropic=0)
if [ "$target" = plan ]; then
  flags+=(-max_len=16384)
fi
if [ "$target" = weights ]; then
  # Small files mutate fast and reach every branch of the header parser.
  python3 - "$seeds" <<'EOF'
import json, struct, sys

def write(name, tensors, metadata=None, data=b""):
    header = dict(tensors)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(f"{sys.argv[1]}/{name}.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)

sizes = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "BOOL": 1,
         "F64": 8, "I16": 2, "I8": 1, "U8": 1, "U16": 2, "U32": 4, "U64": 8,
         "F8_E4M3": 1, "F8_E5M2": 1}
tensors, offset = {}, 0
for dtype, size in sizes.items():
    tensors[dtype.lower()] = {"dtype": dtype, "shape": [2, 3],
                              "data_offsets": [offset, offset + 6 * size]}
    offset += 6 * size
write("every-dtype", tensors, {"format": "pt"}, (bytes(range(256)) * 2)[:offset])
write("scalar-and-empty", {
    "scalar": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},
    "empty": {"dtype": "BF16", "shape": [4, 0, 2], "data_offsets": [4, 4]},
    "row": {"dtype": "I64", "shape": [1, 3], "data_offsets": [4, 28]}},
    data=bytes(range(28)))
write("split-and-block", {
    "w": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]},
    "b": {"dtype": "F16", "shape": [3], "data_offsets": [64, 70]}},
    data=bytes(range(70)))
EOF
  flags+=(-dict="$root/tools/fuzz/safetensors.dict")
fi
echo "fuzz-plan: $(ls "$seeds" | wc -l) seeds, $(ls "$corpus" | wc -l) corpus inputs"

fuzz_sanitizer_environment
fuzz_run "fuzz-plan ($fuzzer)" "$work" "$work/artifacts" -- \
  "$fuzz_build/bin/$fuzzer" "${flags[@]}" "$@" "$corpus" "$seeds"
