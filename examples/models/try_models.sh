#!/usr/bin/env bash
# Try model folders (model.onnx + test_data_set_0/) with the current compiler:
# for each folder and each parallel preset, compile to a plan with braidc, run
# it with braid-run (under mpirun for several ranks) against the onnxruntime
# reference, and print one table row.  For tp=2 it also counts the collectives
# in the braid IR (braidc --parallel tp=2 -o x.mlir).
#
#   examples/models/try_models.sh [MODEL_DIR...]   # default: every folder here
#
# Presets: 1 rank (no --parallel), tp=2, tp=4, sp=2, dp=2,tp=2, and ep=2 for
# folders whose name contains "moe" or "mixtral".  The rank count of a preset
# is the product of its sizes (sp=2 -> 2, dp=2,tp=2 -> 4).
#
# Environment: BRAID_BIN (default: build/bin of this checkout), TRY_OUT
# (scratch folder; default a new mktemp -d), TRY_TIMEOUT (seconds per command,
# default 300), PRESETS (space-separated, overrides the list above; "1" is the
# single-rank run).
#
# Columns: model | preset | import (braidc to braid IR, no --parallel) |
# result (PASS, FAIL, compile error, run error: first line) | max abs err
# (largest over ranks, from braid-run --expected) | collectives in the tp=2
# braid IR: all_reduce all_gather all_to_all reduce_scatter.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${BRAID_BIN:-$root/build/bin}"
out="${TRY_OUT:-$(mktemp -d /tmp/try_models.XXXXXX)}"
tmo="${TRY_TIMEOUT:-300}"
mkdir -p "$out"

if [ $# -eq 0 ]; then
  set --
  for d in "$here"/*/; do
    [ -f "$d/model.onnx" ] && [ -d "$d/test_data_set_0" ] && set -- "$@" "${d%/}"
  done
fi

mpirun_env=()
[ "$(id -u)" = 0 ] && mpirun_env=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)

# First line of a log that says what went wrong (an "error" line if there is
# one), without the path prefix braidc puts before a diagnostic nor its
# leading "error: ", cut to 200 characters.
first_error() {
  local line
  line="$(grep -m1 -iE 'error|fail|abort|exception|terminate' "$1" 2>/dev/null)"
  [ -z "$line" ] && line="$(grep -m1 -vE '^\s*$' "$1" 2>/dev/null)"
  [ -z "$line" ] && line="(no output)"
  printf '%s' "$line" | sed -E 's|^[^ ]*/model\.onnx:[0-9:]* ||; s|^error: ||' | cut -c1-200
}

ranks_of() {  # "dp=2,tp=2" -> 4; "1" -> 1
  local n=1 part v
  [ "$1" = 1 ] && { echo 1; return; }
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    v="${part#*=}"
    [ "$v" = "$part" ] && v=2
    n=$((n * v))
  done
  echo "$n"
}

count() { grep -c "braid\.$1" "$2" 2>/dev/null || true; }

printf '| model | preset | import | result | max abs err | all_reduce | all_gather | all_to_all | reduce_scatter |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for m in "$@"; do
  m="${m%/}"
  name="$(basename "$m")"
  w="$out/$name"
  mkdir -p "$w"
  if timeout "$tmo" "$bin/braidc" "$m/model.onnx" -o "$w/import.mlir" --progress=false >"$w/import.log" 2>&1; then
    import=ok
  else
    import="error: $(first_error "$w/import.log")"
  fi
  presets="${PRESETS:-1 tp=2 tp=4 sp=2 dp=2,tp=2}"
  if [ -z "${PRESETS:-}" ]; then
    case "$name" in *moe*|*mixtral*) presets="$presets ep=2" ;; esac
  fi
  for p in $presets; do
    tag="${p//[=,]/_}"
    n="$(ranks_of "$p")"
    par=()
    [ "$p" != 1 ] && par=(--parallel "$p")
    plan="$w/$tag.bplan"
    result="" err="-"
    if ! timeout "$tmo" "$bin/braidc" "$m/model.onnx" "${par[@]}" --emit=plan -o "$plan" \
        --progress=false >"$w/$tag.compile.log" 2>&1; then
      result="compile error: $(first_error "$w/$tag.compile.log")"
    else
      run=("$bin/braid-run" "$plan" --inputs "$m/test_data_set_0" --expected "$m/test_data_set_0"
           --timeout-s "$tmo")
      if [ "$n" = 1 ]; then
        timeout "$tmo" "${run[@]}" >"$w/$tag.run.log" 2>&1
      else
        timeout "$tmo" "${mpirun_env[@]}" mpirun --oversubscribe -n "$n" "${run[@]}" >"$w/$tag.run.log" 2>&1
      fi
      rc=$?
      errs="$(grep -oE 'max abs err [^ ,]+' "$w/$tag.run.log" | awk '{print $4}')"
      [ -n "$errs" ] && err="$(printf '%s\n' $errs | sort -g | tail -n1)"
      npass="$(grep -cE '^(\[rank [0-9]+\] )?PASS$' "$w/$tag.run.log")"
      nfail="$(grep -cE '^(\[rank [0-9]+\] )?FAIL$' "$w/$tag.run.log")"
      if [ "$rc" = 0 ] && [ "$npass" = "$n" ]; then
        result=PASS
      elif [ "$nfail" -gt 0 ] && [ "$rc" = 1 ]; then
        result="FAIL ($nfail of $n ranks)"
      elif [ "$rc" = 124 ]; then
        result="run timeout (${tmo}s)"
      else
        result="run error (rc $rc): $(first_error "$w/$tag.run.log")"
      fi
    fi
    cols="| - | - | - | -"
    if [ "$p" = tp=2 ]; then
      if timeout "$tmo" "$bin/braidc" "$m/model.onnx" --parallel tp=2 -o "$w/tp2.mlir" --progress=false \
          >"$w/tp2.mlir.log" 2>&1; then
        cols="| $(count all_reduce "$w/tp2.mlir") | $(count all_gather "$w/tp2.mlir") | $(count all_to_all "$w/tp2.mlir") | $(count reduce_scatter "$w/tp2.mlir")"
      else
        cols="| (tp=2 IR: $(first_error "$w/tp2.mlir.log")) | | |"
      fi
    fi
    printf '| %s | %s | %s | %s | %s %s |\n' "$name" "$p" "$import" "$result" "$err" "$cols"
  done
done
echo "(logs and plans in $out)" >&2
