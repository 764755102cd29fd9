#!/usr/bin/env python3
"""Writes a hand-written SPMD braid program over `tp = P` ranks that uses every
collective, synchronously and inside braid.async, plus its input and the
expected outputs (numpy, the single-rank meaning) in ONNX test-data layout.

usage: spmd_collectives.py P OUTDIR
Every output is the same on every rank, so each rank checks it.
"""
import os
import sys

import numpy as np
from onnx import numpy_helper

P = int(sys.argv[1])
out = sys.argv[2]
os.makedirs(os.path.join(out, "data"), exist_ok=True)
R, C = 2, 8  # rows per rank, columns
N = R * P

rng = np.random.default_rng(7)
x = rng.standard_normal((N, C)).astype(np.float32)

ir = f"""
braid.mesh @world(tp = {P})
func.func @main(%x: tensor<{N}x{C}xf32> {{braid.name = "x"}})
    -> (tensor<{N}x{C}xf32>, tensor<{R}x{C}xf32>, tensor<{N}x{C}xf32>,
        tensor<{N}x{C}xf32>, tensor<{N}x{C}xf32>, tensor<{R}x{C}xf32>,
        tensor<{R}x{C}xf32>, tensor<{R}x{C}xf32>) {{
  %r = braid.rank @world axis "tp"
  %c{R} = arith.constant {R} : index
  %o = arith.muli %r, %c{R} : index
  // This rank's rows, and something computed from them.
  %xs = braid.slice %x offsets [%o, 0] sizes [{R}, {C}] strides [1, 1] : tensor<{N}x{C}xf32> -> tensor<{R}x{C}xf32>
  %e = braid.exp %xs : tensor<{R}x{C}xf32>
  // all_gather: every rank gets exp(x).
  %g = braid.all_gather %e on @world["tp"] dim 0 : tensor<{R}x{C}xf32> -> tensor<{N}x{C}xf32>
  // all_reduce: the sum of all row blocks.
  %s = braid.all_reduce %xs on @world["tp"] sum : tensor<{R}x{C}xf32>
  // reduce_scatter of the (identical) gathered value: P * block, gathered.
  %rs = braid.reduce_scatter %g on @world["tp"] sum dim 0 : tensor<{N}x{C}xf32> -> tensor<{R}x{C}xf32>
  %rsg = braid.all_gather %rs on @world["tp"] dim 0 : tensor<{R}x{C}xf32> -> tensor<{N}x{C}xf32>
  // all_to_all: rows of every rank, this rank's column block; gathered back.
  %a = braid.all_to_all %e on @world["tp"] split 1 concat 0 : tensor<{R}x{C}xf32> -> tensor<{N}x{C // P}xf32>
  %ag = braid.all_gather %a on @world["tp"] dim 1 : tensor<{N}x{C // P}xf32> -> tensor<{N}x{C}xf32>
  // collective_permute by one: rank r holds rank r-1's block.
  %p = braid.collective_permute %e on @world["tp"] shift 1 : tensor<{R}x{C}xf32>
  %pg = braid.all_gather %p on @world["tp"] dim 0 : tensor<{R}x{C}xf32> -> tensor<{N}x{C}xf32>
  // broadcast from rank 0.
  %b = braid.broadcast %e on @world["tp"] root 0 : tensor<{R}x{C}xf32>
  // The same all_reduce and a max all_reduce, asynchronous, overlapped with
  // independent compute.
  %f:2 = braid.async on "comm" {{
    %s2 = braid.all_reduce %xs on @world["tp"] sum : tensor<{R}x{C}xf32>
    %m2 = braid.all_reduce %e on @world["tp"] max : tensor<{R}x{C}xf32>
    braid.yield %s2, %m2 : tensor<{R}x{C}xf32>, tensor<{R}x{C}xf32>
  }} : !braid.future<tensor<{R}x{C}xf32>>, !braid.future<tensor<{R}x{C}xf32>>
  %t = braid.tanh %xs : tensor<{R}x{C}xf32>
  %s2 = braid.await %f#0 : tensor<{R}x{C}xf32>
  %m2 = braid.await %f#1 : tensor<{R}x{C}xf32>
  %tt = braid.all_reduce %t on @world["tp"] sum : tensor<{R}x{C}xf32>
  %u = braid.add %s2, %tt : (tensor<{R}x{C}xf32>, tensor<{R}x{C}xf32>) -> tensor<{R}x{C}xf32>
  return %g, %s, %rsg, %ag, %pg, %b, %u, %m2 : tensor<{N}x{C}xf32>, tensor<{R}x{C}xf32>, tensor<{N}x{C}xf32>, tensor<{N}x{C}xf32>, tensor<{N}x{C}xf32>, tensor<{R}x{C}xf32>, tensor<{R}x{C}xf32>, tensor<{R}x{C}xf32>
}}
"""
with open(os.path.join(out, "spmd.mlir"), "w") as f:
    f.write(ir)

blocks = [x[i * R:(i + 1) * R] for i in range(P)]
ex = np.exp(x.astype(np.float64))
eblocks = [ex[i * R:(i + 1) * R] for i in range(P)]
expected = [
    ex,                                            # all_gather
    sum(b.astype(np.float64) for b in blocks),     # all_reduce
    P * ex,                                        # reduce_scatter
    ex,                                            # all_to_all
    np.concatenate([eblocks[(i - 1) % P] for i in range(P)]),  # permute
    eblocks[0],                                    # broadcast
    sum(b.astype(np.float64) for b in blocks)
    + sum(np.tanh(b.astype(np.float64)) for b in blocks),      # async
    np.max(np.stack(eblocks), axis=0),             # async max
]
with open(os.path.join(out, "data", "input_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())
for i, e in enumerate(expected):
    with open(os.path.join(out, "data", f"output_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(e.astype(np.float32)).SerializeToString())
