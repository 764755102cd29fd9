#!/usr/bin/env bash
# Fuzzes the ONNX importer with libFuzzer for a while:
#
#   scripts/fuzz-onnx.sh [seconds] [extra libFuzzer flags...]   (default 60 s)
#
# Configures build-fuzz/ (clang, -DBRAID_ENABLE_FUZZERS=ON: the Braid
# libraries instrumented with -fsanitize=fuzzer-no-link,address,undefined),
# builds only onnx-import-fuzzer, seeds a corpus from test/frontend/onnx/*.onnxtxt
# and examples/models/**/*.onnx plus a few tiny models written here, and runs
# the fuzzer. Crashing, leaking, out-of-memory and timing-out inputs are kept
# in tools/fuzz/crashes/ (crash-*, leak-*, oom-*, timeout-*); reproduce one with
#   build-fuzz/bin/onnx-import-fuzzer tools/fuzz/crashes/crash-<sha1>
# Exits 1 when the run found any.
#
# Environment (and those of scripts/fuzz-common.sh: build folder, compilers,
# build parallelism):
#   BRAID_FUZZ_ARTIFACTS  where failing inputs go (default tools/fuzz/crashes/)
#   BRAID_FUZZ_FORK       N > 0: fuzz in N child processes (-fork=N) and keep
#                         going after crashes, OOMs and timeouts, so the run
#                         lasts the time given (default 1); 0: one process
#                         that stops at the first failure
set -euo pipefail
# shellcheck source=scripts/fuzz-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/fuzz-common.sh"
root="$fuzz_root"
seconds="${1:-60}"
shift $(( $# > 0 ? 1 : 0 ))
case "$seconds" in
  '' | *[!0-9]*) echo "usage: $0 [seconds] [libFuzzer flags...]" >&2; exit 2 ;;
esac
build="$fuzz_build"
artifacts="${BRAID_FUZZ_ARTIFACTS:-$root/tools/fuzz/crashes}"
fork="${BRAID_FUZZ_FORK:-1}"
max_seed_bytes=$((1 << 20)) # the fuzzer skips larger inputs

# --- build ------------------------------------------------------------------
fuzz_build_target onnx-import-fuzzer
fuzzer="$build/bin/onnx-import-fuzzer"

# --- seed corpus ---------------------------------------------------------------
work="$build/fuzz/onnx-import"
seeds="$work/seeds"   # rebuilt every run, read only for the fuzzer
corpus="$work/corpus" # kept between runs; the fuzzer adds what it finds here
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"

add_seed() { # file, name in the seed folder
  local size
  size=$(stat -c %s "$1")
  if [ "$size" -gt "$max_seed_bytes" ]; then
    echo "fuzz-onnx: skipping seed $1 ($size bytes > $max_seed_bytes)"
    return
  fi
  cp "$1" "$seeds/$2"
}

shopt -s nullglob globstar
for f in "$root"/test/frontend/onnx/*.onnxtxt; do
  add_seed "$f" "test-$(basename "$f")"
done
for f in "$root"/examples/models/**/*.onnx; do
  rel="${f#"$root"/examples/models/}"
  add_seed "$f" "example-${rel//\//_}"
done
shopt -u nullglob globstar
found=$(find "$seeds" -type f | wc -l)

# A few tiny models of our own: small inputs mutate fast and reach the
# importer's op handlers and constant folder in few steps.
cat > "$seeds/tiny-mlp.onnxtxt" <<'EOF'
<
  ir_version: 8,
  opset_import: ["" : 17]
>
tiny_mlp (float[2,4] x) => (float[2,3] y)
<float[4,3] w = {1.0,2.0,3.0,4.0,5.0,6.0,7.0,8.0,9.0,10.0,11.0,12.0}, float[3] b = {0.5,-0.5,0.25}>
{
  h = MatMul(x, w)
  z = Add(h, b)
  y = Relu(z)
}
EOF
cat > "$seeds/tiny-attention.onnxtxt" <<'EOF'
<
  ir_version: 8,
  opset_import: ["" : 18]
>
tiny_attention (float[1,4,8] x) => (float[1,4,8] y)
<float[8] gamma = {1.0,1.0,1.0,1.0,1.0,1.0,1.0,1.0}, float[8] beta = {0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0}>
{
  n = LayerNormalization <axis: int = -1, epsilon: float = 0.00001> (x, gamma, beta)
  s = Shape(n)
  two = Constant <value: tensor = int64[1] {2}> ()
  zero = Constant <value: tensor = int64[1] {0}> ()
  d = Gather <axis: int = 0> (s, two)
  t = Transpose <perm: ints = [0, 2, 1]> (n)
  scores = MatMul(n, t)
  p = Softmax <axis: int = -1> (scores)
  o = MatMul(p, n)
  m = ReduceMean <keepdims: int = 1> (o, zero)
  shape = Concat <axis: int = 0> (zero, d)
  y = Sub(o, m)
}
EOF
cat > "$seeds/tiny-shapes.onnxtxt" <<'EOF'
<
  ir_version: 8,
  opset_import: ["" : 17]
>
tiny_shapes (float[2,3,4] x) => (float[6,4] y, int64[3] r, float[2,2,4] s)
{
  sh = Shape(x)
  i0 = Constant <value: tensor = int64[1] {0}> ()
  i1 = Constant <value: tensor = int64[1] {1}> ()
  i2 = Constant <value: tensor = int64[1] {2}> ()
  i3 = Constant <value: tensor = int64[1] {3}> ()
  a = Slice(sh, i0, i2, i0)
  a0 = Gather <axis: int = 0> (a, i0)
  a1 = Gather <axis: int = 0> (a, i1)
  b = Mul(a0, a1)
  c = Slice(sh, i2, i3, i0)
  ns = Concat <axis: int = 0> (b, c)
  y = Reshape(x, ns)
  st = Constant <value: tensor = int64 {0}> ()
  lim = Constant <value: tensor = int64 {3}> ()
  dl = Constant <value: tensor = int64 {1}> ()
  r = Range(st, lim, dl)
  s = Slice(x, i0, i2, i1)
}
EOF
# The tiny MLP again as binary protobuf (the importer's usual input), encoded
# by hand so that no onnx Python package is needed.
if command -v python3 > /dev/null; then
  python3 - "$seeds/tiny-mlp-binary.onnx" <<'EOF'
import struct, sys

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)

def field(num, value):  # int -> varint field, bytes/str -> length-delimited
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint(num << 3 | 2) + varint(len(value)) + value

FLOAT = 1
def value_info(name, dims):
    shape = b"".join(field(1, field(1, d)) for d in dims)
    tensor_type = field(1, FLOAT) + field(2, shape)
    return field(1, name) + field(2, field(1, tensor_type))

def initializer(name, dims, values):
    return (b"".join(field(1, d) for d in dims) + field(2, FLOAT) +
            field(8, name) + field(9, struct.pack("<%df" % len(values), *values)))

def node(op, inputs, outputs):
    return (b"".join(field(1, i) for i in inputs) +
            b"".join(field(2, o) for o in outputs) + field(4, op))

graph = (field(1, node("MatMul", ["x", "w"], ["h"])) +
         field(1, node("Add", ["h", "b"], ["z"])) +
         field(1, node("Relu", ["z"], ["y"])) +
         field(2, "tiny_mlp_binary") +
         field(5, initializer("w", [4, 3], [float(i) for i in range(12)])) +
         field(5, initializer("b", [3], [0.5, -0.5, 0.25])) +
         field(11, value_info("x", [2, 4])) +
         field(12, value_info("y", [2, 3])))
model = field(1, 8) + field(7, graph) + field(8, field(2, 17))
open(sys.argv[1], "wb").write(model)
EOF
fi
echo "fuzz-onnx: $found seed models from test/ and examples/, $(( $(find "$seeds" -type f | wc -l) - found )) tiny ones"

# --- run -------------------------------------------------------------------------
flags=(
  -max_total_time="$seconds"
  -rss_limit_mb=4096
  -timeout=10
  -artifact_prefix="$artifacts/"
  -dict="$root/tools/fuzz/onnx.dict"
  -print_final_stats=1
  # Measured (docs/results.md, Fuzzing): entropic scheduling and 1 MB
  # seeds took most of the time; without them, 10x the executions.
  -entropic=0
  -max_len=65536
)
if [ "$fork" -gt 0 ]; then
  flags+=(-fork="$fork" -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
fi
fuzz_sanitizer_environment
fuzz_run fuzz-onnx "$work" "$artifacts" -- \
  "$fuzzer" "${flags[@]}" "$@" "$corpus" "$seeds"
