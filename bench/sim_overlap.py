#!/usr/bin/env python3
"""Domino and ISO in the simulator, next to the published speed-ups.

For each setup this script writes the SINGLE-DEVICE braid IR of a GPT-style
decoder stack (layer norm, q/k/v projections, causal attention, output
projection, residual, layer norm, FC1, GeLU, FC2, residual; separate q/k/v
weights), lets the compiler do everything else, and simulates the plans with
`braid-run --backend sim`:

  baseline   braid-partition tp=N (Megatron; synchronous all-reduces);
  overlap    the same, then braid-domino (row chunks) or braid-seq-pipeline
             (ISO sequence chunks), then braid-schedule (async collectives,
             issued early and awaited late, across layers).

Chunk counts and split points come from the passes' own cost model
(chunks=0) unless --chunks is given. The ratio baseline/overlap is printed
next to the paper's figure. Forward pass only: Domino's paper reports
training iterations (forward and backward, four all-reduces per block);
ISO's reports prefill, which is a forward pass.

usage: sim_overlap.py [--build BUILD] [--layers 2] [--keep DIR]
"""
import argparse
import os
import re
import sys
import tempfile
import time

import simlib

ROOT = simlib.ROOT
WHO = "sim_overlap"

# (name, technique, profile, tp, layers-shape, batch, seq, dtype, published)
SETUPS = [
    ("GPT-3 6.7B", "domino", "dgx-h100", 8, (4096, 32, 16384), 8, 1024, "f16",
     "up to 1.3x (training, 1 node)"),
    ("GPT-3 13B", "domino", "dgx-h100", 8, (5120, 40, 20480), 8, 1024, "f16",
     "up to 1.3x (training, 1 node)"),
    ("30B prefill", "seq", "rtx4090-pcie", 4, (6656, 52, 17920), 1, 4096, "f16",
     "~35% less time (1.54x)"),
    ("70B prefill", "seq", "rtx4090-pcie", 8, (8192, 64, 28672), 1, 4096, "f16",
     "~35% less time (1.54x)"),
    ("30B prefill", "seq", "a800-node", 4, (6656, 52, 17920), 1, 4096, "f16",
     "~15% less time (1.18x)"),
    ("70B prefill", "seq", "a800-node", 8, (8192, 64, 28672), 1, 4096, "f16",
     "~15% less time (1.18x)"),
]


def decoder_ir(layers, batch, seq, hidden, heads, ffn, t):
    """Single-device IR of `layers` decoder layers."""
    hd = hidden // heads
    X = f"tensor<{batch}x{seq}x{hidden}x{t}>"
    Q4 = f"tensor<{batch}x{seq}x{heads}x{hd}x{t}>"
    QH = f"tensor<{batch}x{heads}x{seq}x{hd}x{t}>"
    F = f"tensor<{batch}x{seq}x{ffn}x{t}>"
    H = f"tensor<{hidden}x{t}>"
    W = f"tensor<{hidden}x{hidden}x{t}>"
    W1 = f"tensor<{hidden}x{ffn}x{t}>"
    W2 = f"tensor<{ffn}x{hidden}x{t}>"
    weights = {"g1": H, "b1": H, "wq": W, "wk": W, "wv": W, "wo": W,
               "g2": H, "b2": H, "w1": W1, "w2": W2}
    lines = [f"braid.weight @l{l}.{n} : {ty}"
             for l in range(layers) for n, ty in weights.items()]
    lines.append(f"func.func @main(%x0: {X}) -> {X} {{")
    scale = 1 / hd ** 0.5
    for l in range(layers):
        x, p = f"%x{l}", f"%l{l}"
        for n, ty in weights.items():
            lines.append(f"  {p}{n} = braid.get_weight @l{l}.{n} : {ty}")
        lines.append(f"  {p}ln1 = braid.layer_norm {x}, {p}g1, {p}b1 axis 2 eps 1.0e-05 : ({X}, {H}, {H}) -> {X}")
        for n in "qkv":
            lines.append(f"  {p}{n} = braid.matmul {p}ln1, {p}w{n} : ({X}, {W}) -> {X}")
            lines.append(f"  {p}{n}4 = braid.reshape {p}{n} : {X} -> {Q4}")
            lines.append(f"  {p}{n}h = braid.transpose {p}{n}4 [0, 2, 1, 3] : {Q4} -> {QH}")
        lines.append(f"  {p}o = braid.attention {p}qh, {p}kh, {p}vh causal scale {scale:.8f} : ({QH}, {QH}, {QH}) -> {QH}")
        lines.append(f"  {p}ot = braid.transpose {p}o [0, 2, 1, 3] : {QH} -> {Q4}")
        lines.append(f"  {p}o2 = braid.reshape {p}ot : {Q4} -> {X}")
        lines.append(f"  {p}ap = braid.matmul {p}o2, {p}wo : ({X}, {W}) -> {X}")
        lines.append(f"  {p}h1 = braid.add {x}, {p}ap : ({X}, {X}) -> {X}")
        lines.append(f"  {p}ln2 = braid.layer_norm {p}h1, {p}g2, {p}b2 axis 2 eps 1.0e-05 : ({X}, {H}, {H}) -> {X}")
        lines.append(f"  {p}fc = braid.matmul {p}ln2, {p}w1 : ({X}, {W1}) -> {F}")
        lines.append(f"  {p}act = braid.gelu {p}fc tanh : {F}")
        lines.append(f"  {p}mp = braid.matmul {p}act, {p}w2 : ({F}, {W2}) -> {X}")
        lines.append(f"  %x{l + 1} = braid.add {p}h1, {p}mp : ({X}, {X}) -> {X}")
    lines.append(f"  return %x{layers} : {X}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def simulate(tools, work, stem, ir, passes, profile, tp):
    out, head = simlib.simulate(tools, work, stem, ir, passes, profile, tp, WHO)
    efficiency = re.search(r"overlap efficiency \(bound/makespan\)\s+([0-9.]+)%", out)
    choice = re.search(r"braid\.(domino_chunks|seq_split_point) = (\d+)", head)
    return {"makespan": simlib.seconds(out, "makespan", WHO),
            "exposed": simlib.seconds(out, "exposed communication", WHO),
            "efficiency": float(efficiency.group(1)) / 100,
            "choice": choice.group(2) if choice else "-"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--chunks", type=int, default=0,
                        help="chunks for both passes (0: the cost model picks)")
    parser.add_argument("--keep", help="keep IR, plans and timelines here")
    args = parser.parse_args()
    tools = simlib.tools(args.build, WHO)
    work = args.keep or tempfile.mkdtemp(prefix="braid-sim-overlap-")
    os.makedirs(work, exist_ok=True)
    rows = []
    for name, technique, profile, tp, (hidden, heads, ffn), batch, seq, t, paper in SETUPS:
        started = time.perf_counter()
        ir = decoder_ir(args.layers, batch, seq, hidden, heads, ffn, t)
        base = [f"--braid-partition=tp={tp}"]
        if technique == "domino":
            chunk = [f"--braid-domino=chunks={args.chunks} force=true hw={profile}"]
        else:
            chunk = [f"--braid-seq-pipeline=chunks={args.chunks} force=true hw={profile}"]
        stem = f"{technique}-{name.replace(' ', '_')}-{profile}"
        b = simulate(tools, work, stem + "-base", ir, base, profile, tp)
        s = simulate(tools, work, stem + "-sched", ir,
                     base + [f"--braid-schedule=hw={profile}"], profile, tp)
        o = simulate(tools, work, stem + "-overlap", ir,
                     base + chunk + [f"--braid-schedule=hw={profile}"], profile, tp)
        rows.append((name, technique, profile, tp, b, s, o, paper,
                     time.perf_counter() - started))
        print(f"  {name} {technique} on {profile}: done in {rows[-1][-1]:.1f} s",
              file=sys.stderr)
    print(f"\n{args.layers} layers per model, tp ranks on one node; makespans "
          f"from braid-run --backend sim (one forward pass)")
    print(f"{'model':<12} {'pass':<7} {'profile':<9} {'tp':>2} {'baseline':>10} "
          f"{'+schedule':>10} {'overlap':>10} {'chunks':>7} {'speed-up':>8} "
          f"{'exposed':>14} {'eff.':>10}  published")
    for name, technique, profile, tp, b, s, o, paper, _ in rows:
        label = "split@" if technique == "seq" else "x"
        print(f"{name:<12} {technique:<7} {profile:<9} {tp:>2} "
              f"{b['makespan'] * 1e3:>8.2f}ms {s['makespan'] * 1e3:>8.2f}ms "
              f"{o['makespan'] * 1e3:>8.2f}ms {label + o['choice']:>7} "
              f"{b['makespan'] / o['makespan']:>7.2f}x "
              f"{b['exposed'] * 1e3:>5.2f}->{o['exposed'] * 1e3:>5.2f}ms "
              f"{b['efficiency']:.2f}->{o['efficiency']:.2f}  {paper}")
    print("\n(speed-up = baseline / overlap makespan; exposed = communication "
          "not hidden; eff. = max(compute, comm) / makespan)")


if __name__ == "__main__":
    main()
