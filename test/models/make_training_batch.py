"""Writes one training batch of the data contract as ONNX test data.

    make_training_batch.py TOKENS.bin STEP BATCH SEQ OUT_DIR [LOSS_FILE]

Step t, row b reads window w = t*B + b of the uint16 token file:
x = tokens[w*S : w*S + S + 1], input_ids = x[:-1], labels = x[1:]
(docs/training.md). Writes input_0.pb (input_ids, int64 [B, S]),
input_1.pb (labels) and, with LOSS_FILE (one number), output_0.pb (the
expected scalar float32 loss).
"""
import os
import sys

import numpy as np
from onnx import numpy_helper


def main():
    tokens_path, step, batch, seq, out = sys.argv[1:6]
    step, batch, seq = int(step), int(batch), int(seq)
    tokens = np.fromfile(tokens_path, dtype="<u2").astype(np.int64)
    ids = np.empty((batch, seq), np.int64)
    labels = np.empty((batch, seq), np.int64)
    for b in range(batch):
        w = step * batch + b
        x = tokens[w * seq: w * seq + seq + 1]
        if len(x) != seq + 1:
            sys.exit(f"{tokens_path}: too short for step {step}")
        ids[b], labels[b] = x[:-1], x[1:]
    os.makedirs(out, exist_ok=True)
    for i, array in enumerate([ids, labels]):
        with open(os.path.join(out, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(array).SerializeToString())
    if len(sys.argv) > 6:
        loss = np.array(float(open(sys.argv[6]).read().split()[0]), np.float32)
        with open(os.path.join(out, "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(loss).SerializeToString())


if __name__ == "__main__":
    main()
