#!/usr/bin/env python3
"""Writes random q, k, v [1, 16, 2, 8] (batch, sequence, heads, head size) as
input_0..2.pb in ONNX test-data layout, for context-parallel attention.

usage: attention_inputs.py OUTDIR
"""
import os
import sys

import numpy as np
from onnx import numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
for i in range(3):
    tensor = rng.standard_normal((1, 16, 2, 8)).astype(np.float32)
    with open(os.path.join(out, f"input_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(tensor, f"x{i}").SerializeToString())
