#!/usr/bin/env python3
"""Writes the inputs and numpy's expected output of scatter-add.mlir in ONNX
test-data layout (input_N.pb, output_N.pb): random updates [4, 6, 8] and
token ids [4, 6] into 10 rows, with repeated and negative ids, and the rows
np.add.at sums. With --bad, the ids hold one out of range (10).

usage: scatter_add_data.py OUTDIR [--bad]
"""
import os
import sys

import numpy as np
from onnx import numpy_helper

out = sys.argv[1]
bad = "--bad" in sys.argv[2:]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(18)
updates = rng.standard_normal((4, 6, 8)).astype(np.float32)
ids = rng.integers(-10, 10, size=(4, 6)).astype(np.int64)
# Row 3 named three times, twice as -7; row 9 as 9 and -1.
ids[0, 0], ids[1, 2], ids[3, 5] = 3, -7, -7
ids[2, 1], ids[2, 4] = 9, -1
expected = np.zeros((10, 8), dtype=np.float64)
np.add.at(expected, ids, updates.astype(np.float64))
if bad:
    ids[1, 1] = 10


def write(name, array):
    with open(os.path.join(out, name), "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


write("input_0.pb", updates)
write("input_1.pb", ids)
if not bad:
    write("output_0.pb", expected.astype(np.float32))
