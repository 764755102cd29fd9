#!/usr/bin/env bash
# Installs every dependency of Braid by package name. Idempotent: a second run
# installs nothing and takes a few seconds.
set -euo pipefail

DEBIAN_PACKAGES=(
  # compilers and build
  build-essential cmake ninja-build ccache git pkg-config
  # LLVM / MLIR 22 (bookworm-security)
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # ONNX frontend
  libonnx-dev libprotobuf-dev protobuf-compiler
  # runtime
  libopenmpi-dev openmpi-bin libdnnl-dev libopenblas-dev nlohmann-json3-dev
  # tests
  libgtest-dev libgmock-dev
  # python for test oracles
  python3 python3-pip python3-venv
  # bench/veth: network namespaces, veth and tbf (ip, tc)
  iproute2
)

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python packages for test oracles, pinned, in a project-local virtualenv so the
# system interpreter is never touched.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
req="$root/scripts/requirements.txt"
stamp="$venv/.requirements.sha"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing pinned Python packages into .venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r "$req"
  echo "$want" > "$stamp"
fi
echo "setup: all dependencies present"
