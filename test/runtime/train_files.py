"""Files for the training-plan tests (train-plan.mlir, train-sharded.mlir).

    python train_files.py OUT

writes into OUT: train.safetensors (the weights the plans read: the table
"w" [16, 4] and the learning rate "lr"), token files (tokens.bin: uint16
ids below 16 for 10 steps of batch 2 x sequence 3; tokens32.bin: the same
as int32; short.bin: too few for 10 steps; odd.bin: not a whole number of
uint16; outside.bin: an id past the table) and other.safetensors, a
checkpoint of another plan.
"""

import json
import struct
import sys
from pathlib import Path

import numpy as np


def write_safetensors(path, tensors, metadata=None):
    header = {}
    offset = 0
    blobs = []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text +
                           b"".join(blobs))


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(18)
    write_safetensors(out / "train.safetensors", {
        "w": rng.uniform(-1, 1, (16, 4)),
        "lr": np.array(0.01),
    })
    ids = rng.integers(0, 16, 10 * 2 * 3 + 1)
    (out / "tokens.bin").write_bytes(ids.astype("<u2").tobytes())
    (out / "tokens32.bin").write_bytes(ids.astype("<i4").tobytes())
    (out / "short.bin").write_bytes(ids[:20].astype("<u2").tobytes())
    (out / "odd.bin").write_bytes(b"\x01\x00\x02\x00\x03\x00\x04")
    outside = ids.copy()
    outside[4] = 40
    (out / "outside.bin").write_bytes(outside.astype("<u2").tobytes())
    write_safetensors(out / "other.safetensors",
                      {"embed.weight": np.zeros((8, 2))},
                      {"braid_format": "1", "braid_step": "3"})


if __name__ == "__main__":
    main()
