#!/usr/bin/env bash
# Regenerate everything in examples/models/ from scratch: the pinned venv
# (/.venv-export/, git-ignored), the ONNX exports, the reference data, the
# inventory and the training references.  CPU only; needs PyPI.
# Usage: examples/models/regenerate.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${VENV_EXPORT:-$root/.venv-export}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q -r "$here/requirements-export.txt"
"$venv/bin/python" "$here/export.py"
"$venv/bin/python" "$here/make_reference.py"
"$venv/bin/python" "$here/inventory.py" > /dev/null
"$venv/bin/python" "$here/make_training_reference.py"
"$venv/bin/python" "$here/make_bf16_reference.py" gpt2 llama --optimizers adamw,adamw_clip
du -sh "$here"/*/ | sed "s|$here/||"
