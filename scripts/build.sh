#!/usr/bin/env bash
# Configures and builds Braid in build/ (Release, Ninja, ccache). Used by the
# README's commands; safe to run repeatedly.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BRAID_BUILD_DIR:-$root/build}"
jobs="${BRAID_JOBS:-$(nproc)}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build" -j "$jobs"
