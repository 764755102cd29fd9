#!/bin/sh
# The installed CMake package, as a project outside the tree uses it:
#   run.sh BUILD_DIR SOURCE_DIR WORK_DIR MLIR_OPT
# installs BUILD_DIR into WORK_DIR/prefix, builds test/cmake-package against
# it with find_package(Braid), and checks that its program, the installed
# braid-opt and mlir-opt-22 with the installed plugins all run Domino on the
# same input and print the same program.
set -eu
build=$1 source=$2 work=$3 mlir_opt=$4
prefix=$work/prefix
input=$source/test/passes/braid-domino.mlir
pipeline='braid-domino{chunks=2 force=true}'
fail() { echo "cmake-package: $*" >&2; exit 1; }

rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > "$work.install.log" ||
  fail "cmake --install failed (log: $work.install.log)"
launcher=
command -v ccache > /dev/null && launcher=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
cmake -S "$source/test/cmake-package" -B "$work/consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" $launcher \
  > "$work.configure.log" 2>&1 ||
  { cat "$work.configure.log" >&2; fail "configuring against $prefix failed"; }
cmake --build "$work/consumer" > "$work.build.log" 2>&1 ||
  { tail -40 "$work.build.log" >&2; fail "building against $prefix failed"; }

"$work/consumer/braid-consumer" "$input" "$pipeline" > "$work/consumer.mlir"
# Domino with two row chunks: each of the input's two all-reduces becomes two.
"$work/consumer/braid-consumer" "$input" "" > "$work/unchanged.mlir"
before=$(grep -c 'braid.all_reduce' "$work/unchanged.mlir" || true)
after=$(grep -c 'braid.all_reduce' "$work/consumer.mlir" || true)
[ "$before" -gt 0 ] && [ "$after" -eq $((2 * before)) ] ||
  fail "braid-consumer: expected $((2 * before)) all-reduces after Domino, found $after"

"$prefix/bin/braid-opt" "$input" --pass-pipeline="builtin.module($pipeline)" \
  > "$work/braid-opt.mlir"
cmp -s "$work/consumer.mlir" "$work/braid-opt.mlir" ||
  fail "the installed braid-opt and braid-consumer disagree"

dialect_plugin=$(sed -n 1p "$work/consumer/plugins.txt")
pass_plugin=$(sed -n 2p "$work/consumer/plugins.txt")
case $dialect_plugin in "$prefix"/*) ;; *) fail "plugin outside the prefix: $dialect_plugin" ;; esac
"$mlir_opt" "$input" --load-dialect-plugin="$dialect_plugin" \
  --load-pass-plugin="$pass_plugin" --pass-pipeline="builtin.module($pipeline)" \
  > "$work/mlir-opt.mlir"
cmp -s "$work/consumer.mlir" "$work/mlir-opt.mlir" ||
  fail "mlir-opt-22 with the installed plugins and braid-consumer disagree"
echo "cmake-package: find_package(Braid) at $prefix: consumer, braid-opt and mlir-opt-22 agree ($after all-reduces)"
