#!/usr/bin/env python3
"""Writes a synthetic tp=2 transformer MLP block stack as braid plans.

The braid IR of ONE rank of mesh tp = 2 (Megatron tensor parallelism):
per layer l

    h  = x @ W1[:, cols of this rank]     column-parallel, [T, ffn/2]
    a  = gelu(h)
    p  = a @ W2[rows of this rank, :]     row-parallel, a partial sum [T, hidden]
    r  = all_reduce(p) over tp (sum)
    x' = x + r

with T = batch x seq tokens, f32, weights declared with braid.weight and read
with `braid.get_weight ... sharded on @world` (the runtime slices them at
load). The IR is compiled as bench/sim_gpt3.py does: `braid-opt
--braid-to-exec=function=main` then `braid-translate --exec-to-plan`.

Written to --out DIR:
  block.mlir, block.bplan          the plan, every all_reduce awaited where
                                   it is issued
  block.safetensors                the full (unsharded) weights, N(0, 1/fan_in)
  inputs/input_0.pb                x, N(0, 1)
  inputs/output_0.pb               the expected output (numpy, float64), unless
                                   --no-expected
  block-split{K}.bplan (--split K) the same computation split into K
                                   micro-batches along the batch: micro-batch
                                   i's all_reduce runs on stream "tp" while
                                   micro-batch i+1 computes (a hand-written
                                   Domino-style schedule, to check that the
                                   harness sees a speed-up), with a
                                   block-split{K}.safetensors link to the
                                   weights
Also prints the per-rank FLOPs and all_reduce bytes per run.

usage: make_block.py --out DIR [--layers 2] [--batch 8] [--seq 128]
                     [--hidden 1024] [--ffn 4096] [--split K] [--no-expected]
                     [--build BUILD]
Needs numpy and onnx: run it with /work/main/.venv/bin/python (scripts/setup.sh
installs them there).
"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def block_ir(layers, batch, seq, hidden, ffn, split):
    """One rank's IR; split > 1 gives the micro-batched, overlapped schedule."""
    tp = 2
    f = ffn // tp
    t = "f32"
    X = f"tensor<{batch}x{seq}x{hidden}x{t}>"
    W1 = f"tensor<{hidden}x{f}x{t}>"
    W2 = f"tensor<{f}x{hidden}x{t}>"
    mb = batch // split
    XM = f"tensor<{mb}x{seq}x{hidden}x{t}>"
    FM = f"tensor<{mb}x{seq}x{f}x{t}>"
    lines = [f"// tp=2 MLP block stack: {layers} layers, batch {batch}, seq {seq}, "
             f"hidden {hidden}, ffn {ffn}, f32; "
             + ("all_reduces awaited where issued." if split == 1 else
                f"{split} micro-batches, all_reduces on stream \"tp\"."),
             f"braid.mesh @world(tp = {tp})"]
    for l in range(layers):
        lines.append(f"braid.weight @l{l}.w1 : tensor<{hidden}x{ffn}x{t}>")
        lines.append(f"braid.weight @l{l}.w2 : tensor<{ffn}x{hidden}x{t}>")
    lines.append(f"func.func @main(%x: {X} {{braid.name = \"x\"}}) -> {X} {{")
    emit = lines.append
    for l in range(layers):
        emit(f"  %w1_{l} = braid.get_weight @l{l}.w1 sharded on @world [[], [\"tp\"]] : {W1}")
        emit(f"  %w2_{l} = braid.get_weight @l{l}.w2 sharded on @world [[\"tp\"], []] : {W2}")
    if split == 1:
        cur = "x"
        for l in range(layers):
            emit(f"  %h{l} = braid.matmul %{cur}, %w1_{l} : ({X}, {W1}) -> tensor<{batch}x{seq}x{f}x{t}>")
            emit(f"  %a{l} = braid.gelu %h{l} tanh : tensor<{batch}x{seq}x{f}x{t}>")
            emit(f"  %p{l} = braid.matmul %a{l}, %w2_{l} : (tensor<{batch}x{seq}x{f}x{t}>, {W2}) -> {X}")
            emit(f"  %r{l} = braid.all_reduce %p{l} on @world[\"tp\"] sum : {X}")
            emit(f"  %x{l + 1} = braid.add %{cur}, %r{l} : ({X}, {X}) -> {X}")
            cur = f"x{l + 1}"
        emit(f"  return %{cur} : {X}")
    else:
        names = ", ".join(f"%x_0_{i}" for i in range(split))
        emit(f"  {names} = braid.split %x dim 0 : {X} -> {', '.join([XM] * split)}")
        for l in range(layers):
            for i in range(split):
                cur = f"x_{l}_{i}"
                if l > 0:
                    # The previous layer's all_reduce of this micro-batch is
                    # awaited only now, after the other micro-batches were
                    # issued: it overlaps their computation.
                    emit(f"  %r_{l - 1}_{i} = braid.await %f_{l - 1}_{i} : {XM}")
                    emit(f"  %{cur} = braid.add %x_{l - 1}_{i}, %r_{l - 1}_{i} : ({XM}, {XM}) -> {XM}")
                emit(f"  %h_{l}_{i} = braid.matmul %{cur}, %w1_{l} : ({XM}, {W1}) -> {FM}")
                emit(f"  %a_{l}_{i} = braid.gelu %h_{l}_{i} tanh : {FM}")
                emit(f"  %p_{l}_{i} = braid.matmul %a_{l}_{i}, %w2_{l} : ({FM}, {W2}) -> {XM}")
                emit(f"  %f_{l}_{i} = braid.async on \"tp\" {{")
                emit(f"    %s = braid.all_reduce %p_{l}_{i} on @world[\"tp\"] sum : {XM}")
                emit(f"    braid.yield %s : {XM}")
                emit(f"  }} : !braid.future<{XM}>")
        last = layers - 1
        for i in range(split):
            emit(f"  %r_{last}_{i} = braid.await %f_{last}_{i} : {XM}")
            emit(f"  %x_{layers}_{i} = braid.add %x_{last}_{i}, %r_{last}_{i} : ({XM}, {XM}) -> {XM}")
        outs = ", ".join(f"%x_{layers}_{i}" for i in range(split))
        emit(f"  %y = braid.concat {outs} dim 0 : ({', '.join([XM] * split)}) -> {X}")
        emit(f"  return %y : {X}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_safetensors(path, tensors):
    """The safetensors layout: 8-byte header length, JSON header, raw data."""
    header, offset = {}, 0
    for name, array in tensors:
        size = array.nbytes
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text)
        for _, array in tensors:
            out.write(np.ascontiguousarray(array, dtype="<f4").tobytes())


def gelu_tanh(v):
    return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"make_block: {' '.join(command)} failed:\n"
                 f"{result.stderr or result.stdout}")


def compile_plan(tools, mlir, plan):
    exec_mlir = plan[:-len(".bplan")] + ".exec.mlir"
    run([tools["braid-opt"], mlir, "--braid-to-exec=function=main", "-o", exec_mlir])
    run([tools["braid-translate"], "--exec-to-plan", exec_mlir, "-o", plan])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--ffn", type=int, default=4096)
    parser.add_argument("--split", type=int, default=0,
                        help="also write block-split{K}.bplan (K micro-batches)")
    parser.add_argument("--no-expected", action="store_true",
                        help="skip the numpy reference output")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    if args.ffn % 2:
        sys.exit("make_block: --ffn must be even (tp = 2)")
    if args.split and (args.split < 2 or args.batch % args.split):
        sys.exit("make_block: --split K needs K >= 2 dividing --batch")
    tools = {name: os.path.join(args.build, "bin", name)
             for name in ("braid-opt", "braid-translate")}
    for path in tools.values():
        if not os.access(path, os.X_OK):
            sys.exit(f"make_block: {path} not found (build the project first)")
    os.makedirs(os.path.join(args.out, "inputs"), exist_ok=True)
    L, B, S, H, F = args.layers, args.batch, args.seq, args.hidden, args.ffn

    variants = [(1, "block")]
    if args.split:
        variants.append((args.split, f"block-split{args.split}"))
    for split, stem in variants:
        mlir = os.path.join(args.out, stem + ".mlir")
        with open(mlir, "w") as out:
            out.write(block_ir(L, B, S, H, F, split))
        compile_plan(tools, mlir, os.path.join(args.out, stem + ".bplan"))

    rng = np.random.default_rng(args.seed)
    weights = []
    for l in range(L):
        weights.append((f"l{l}.w1", (rng.standard_normal((H, F), dtype=np.float32)
                                     / np.float32(np.sqrt(H)))))
        weights.append((f"l{l}.w2", (rng.standard_normal((F, H), dtype=np.float32)
                                     / np.float32(np.sqrt(F)))))
    write_safetensors(os.path.join(args.out, "block.safetensors"), weights)
    for split, stem in variants[1:]:
        link = os.path.join(args.out, stem + ".safetensors")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink("block.safetensors", link)

    from onnx import numpy_helper
    x = rng.standard_normal((B, S, H), dtype=np.float32)
    with open(os.path.join(args.out, "inputs", "input_0.pb"), "wb") as out:
        out.write(numpy_helper.from_array(x, "x").SerializeToString())
    expected = os.path.join(args.out, "inputs", "output_0.pb")
    if args.no_expected:
        if os.path.exists(expected):
            os.remove(expected)
    else:
        y = x.reshape(B * S, H).astype(np.float64)
        for l in range(L):
            w1 = weights[2 * l][1].astype(np.float64)
            w2 = weights[2 * l + 1][1].astype(np.float64)
            y = y + gelu_tanh(y @ w1) @ w2
        with open(expected, "wb") as out:
            out.write(numpy_helper.from_array(
                y.reshape(B, S, H).astype(np.float32), "y").SerializeToString())

    T = B * S
    flops = L * (2 * T * H * (F // 2) * 2)
    ar_bytes = L * T * H * 4
    print(f"make_block: {args.out}: {L} layers, {B}x{S} tokens, hidden {H}, ffn {F}, "
          f"f32, tp=2; per rank and run: {flops / 1e9:.2f} GFLOP of matmul, "
          f"{L} all_reduces of {T * H * 4 / 2**20:.1f} MiB "
          f"({ar_bytes * 8 / 1e6:.0f} Mbit sent each way by a 2-rank ring)")
    for _, stem in variants:
        print(f"  {os.path.join(args.out, stem + '.bplan')}")
    print(f"  inputs: {os.path.join(args.out, 'inputs')}")


if __name__ == "__main__":
    main()
