#!/usr/bin/env python3
"""Reference inputs and outputs for the models of examples/models/.

For each model: a random input (numpy seed REF_SEED; token ids in [0, vocab)),
run through onnxruntime (CPU, graph optimizations off, so the graph is run as
written) on <name>/model.onnx; the input and the output are written in ONNX's
test-data layout:

    <name>/test_data_set_0/input_0.pb    TensorProto named as the graph input
    <name>/test_data_set_0/output_0.pb   TensorProto named as the graph output

The reference is only written if onnxruntime agrees with the original torch
model (rebuilt by export.py's `build`, same seed so same weights) on that input
and on a few more inputs (EXTRA_SEEDS, not written): max |ort - torch| over
max |torch| must be at most REL_TOL.  The extra inputs differ from the one the
exporter traced with, which catches graphs specialised to the trace input
(e.g. Mixtral's per-expert loop).

    .venv-export/bin/python examples/models/make_reference.py          # all
    .venv-export/bin/python examples/models/make_reference.py mixtral  # some
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402

HERE = export.HERE
REF_SEED = 0
EXTRA_SEEDS = (1, 2, 3)
REL_TOL = 1e-4

# directory -> name of the torch model in export.MODELS it was exported from
MODEL_DIRS = {name: name for name in export.MODELS}
MODEL_DIRS["mlp_external"] = "mlp"
# Models that no exporter could export (no folder; the error is in manifest.json).
for _name in export.KNOWN_EXPORT_FAILURES:
    del MODEL_DIRS[_name]


def run_ort(path: str, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


def compare(name: str, got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    if got.shape != want.shape:
        raise RuntimeError(f"{name}: shape {got.shape} from onnxruntime, {want.shape} from torch")
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    scale = float(np.max(np.abs(want)))
    return err, err / max(scale, 1e-30)


def make(dirname: str) -> bool:
    torch_name = MODEL_DIRS[dirname]
    path = os.path.join(HERE, dirname, "model.onnx")
    m = onnx.load(path, load_external_data=False)
    inputs = [i.name for i in m.graph.input]
    outputs = [o.name for o in m.graph.output]
    assert len(inputs) == 1 and len(outputs) == 1, (inputs, outputs)
    model = export.build(torch_name)

    ok = True
    ref_out = None
    for seed in (REF_SEED, *EXTRA_SEEDS):
        x = export.make_input(torch_name, seed)
        (y,) = run_ort(path, {inputs[0]: x})
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        err, rel = compare(dirname, y, want)
        status = "ok" if rel <= REL_TOL else "FAIL"
        print(f"[reference] {dirname:13s} seed {seed}: output {list(y.shape)} {y.dtype}, "
              f"max abs err vs torch {err:.3e}, relative {rel:.3e} {status}", flush=True)
        ok &= rel <= REL_TOL
        if seed == REF_SEED:
            ref_in, ref_out = x, y
    if not ok:
        return False

    d = os.path.join(HERE, dirname, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(ref_in, name=inputs[0]).SerializeToString())
    with open(os.path.join(d, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(ref_out, name=outputs[0]).SerializeToString())

    # Read back what was written, as a consumer of the layout would.
    for fname, arr in (("input_0.pb", ref_in), ("output_0.pb", ref_out)):
        t = onnx.TensorProto()
        with open(os.path.join(d, fname), "rb") as f:
            t.ParseFromString(f.read())
        assert np.array_equal(numpy_helper.to_array(t), arr), fname
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"models (default: all of {', '.join(MODEL_DIRS)})")
    args = ap.parse_args()
    names = args.names or list(MODEL_DIRS)
    failed = []
    for n in names:
        if n not in MODEL_DIRS:
            ap.error(f"unknown model {n!r}")
        if not make(n):
            failed.append(n)
    if failed:
        print(f"[reference] FAILED (onnxruntime disagrees with torch): {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
