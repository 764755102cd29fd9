#!/usr/bin/env bash
# The test command of the README and of CI: installs dependencies, builds, and
# runs every test suite (runtime and dialect unit tests, lit tests) under ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build="${BRAID_BUILD_DIR:-$root/build}"
ctest --test-dir "$build" --output-on-failure -j "${BRAID_JOBS:-$(nproc)}"
