#!/usr/bin/env python3
"""Writes the weights, input and numpy-expected outputs of weight-blocks.mlir.

usage: weight_blocks.py OUTDIR
w is [4, 6]; the program reads two blocks of it, a = w[0:4, 4:6] and
b = w[1:3, 2:6], and returns y1 = x @ a and y2 = y1 @ b. The weights file is
written by hand in the safetensors layout (8-byte header length, JSON header,
raw little-endian data).
"""
import json
import os
import struct
import sys

import numpy as np
from onnx import numpy_helper

out = sys.argv[1]
os.makedirs(os.path.join(out, "data"), exist_ok=True)
rng = np.random.default_rng(11)
w = rng.standard_normal((4, 6)).astype(np.float32)
x = rng.standard_normal((3, 4)).astype(np.float32)

data = w.astype("<f4").tobytes()
header = json.dumps(
    {"w": {"dtype": "F32", "shape": list(w.shape),
           "data_offsets": [0, len(data)]}}).encode()
header += b" " * (-len(header) % 8)
with open(os.path.join(out, "w.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + data)

a = w[0:4, 4:6].astype(np.float64)
b = w[1:3, 2:6].astype(np.float64)
y1 = x.astype(np.float64) @ a
y2 = y1 @ b
with open(os.path.join(out, "data", "input_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())
for i, e in enumerate([y1, y2]):
    with open(os.path.join(out, "data", f"output_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(e.astype(np.float32)).SerializeToString())
