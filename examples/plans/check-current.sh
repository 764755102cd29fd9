#!/usr/bin/env bash
# Checks that the committed plans are what make-plans.sh makes from today's
# compiler: regenerates them into a temporary folder and compares every file
# byte for byte (plans are reproducible: same IR, same bytes).
#
#   examples/plans/check-current.sh [BIN_DIR]     (default build/bin)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT

bin=$(cd "${1:-${BRAID_BIN:-$here/../../build/bin}}" && pwd)
BRAID_BIN=$bin BRAID_PLANS_OUT=$fresh \
  "$here/make-plans.sh" > "$fresh.log" 2>&1 || {
  cat "$fresh.log" >&2
  rm -f "$fresh.log"
  exit 1
}
rm -f "$fresh.log"

stale=0
if ! cmp -s "$fresh/manifest.tsv" "$here/manifest.tsv"; then
  echo "manifest.tsv differs from a fresh make-plans.sh" >&2
  stale=1
fi
while IFS=$'\t' read -r name _; do
  if ! diff -rq "$fresh/$name" "$here/$name" >&2; then
    echo "$name: the committed plan differs from a fresh make-plans.sh" >&2
    stale=1
  fi
done < "$fresh/manifest.tsv"
if ((stale)); then
  echo "FAIL: run examples/plans/make-plans.sh and commit the result" >&2
  exit 1
fi
echo "PASS: $(wc -l < "$fresh/manifest.tsv") committed plans are current"
