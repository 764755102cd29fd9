#!/usr/bin/env bash
# Removes what setup.sh made (the veth pair goes with its namespaces).
# Idempotent.
set -uo pipefail
for ns in braid0 braid1; do
  ip netns list | grep -qw "^$ns" && ip netns del "$ns"
done
echo "teardown: namespaces braid0, braid1 removed"
