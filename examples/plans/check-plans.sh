#!/usr/bin/env bash
# Runs every plan of examples/plans/manifest.tsv with braid-run and checks
# its outputs against expected/ with the manifest's tolerances.
#
#   check-plans.sh [BRAID-RUN [braid-run options...]]
#
# BRAID-RUN defaults to build/bin/braid-run; further options go to every
# braid-run (e.g. --backend cuda). Exit status 0 when every plan passes.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run=${1:-$here/../../build/bin/braid-run}
shift || true
[[ -x $run ]] || { echo "error: braid-run not found at $run" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failed=0 count=0
while IFS=$'\t' read -r name dtype rtol atol description; do
  [[ -z $name || $name == \#* ]] && continue
  count=$((count + 1))
  dir=$here/$name
  log=$tmp/$name.log
  if "$run" "$dir/plan.bplan" --inputs "$dir/inputs" --outputs "$tmp/$name" \
      --expected "$dir/expected" --rtol "$rtol" --atol "$atol" "$@" \
      > "$log" 2>&1; then
    echo "PASS $name ($dtype, rtol $rtol, atol $atol): $(grep -m1 '^output 0' "$log" || true)"
  else
    failed=$((failed + 1))
    echo "FAIL $name ($dtype, rtol $rtol, atol $atol):"
    sed 's/^/    /' "$log"
  fi
done < "$here/manifest.tsv"

if ((count == 0)); then
  echo "error: no plans in $here/manifest.tsv" >&2
  exit 2
fi
echo "$((count - failed)) of $count plans passed"
((failed == 0))
