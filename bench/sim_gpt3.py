#!/usr/bin/env python3
"""Simulates a 96-layer GPT-3 (175B shapes) training step on 64 ranks.

The plan is made the way a user would make one: this script writes the SPMD
braid IR of ONE rank (mesh dp = 8 x tp = 8: Megatron tensor parallelism
inside a node, data parallelism across 8 nodes), compiles it with
`braid-opt --braid-to-exec` and `braid-translate --exec-to-plan`, and runs it
with `braid-run --backend sim` on DGX-H100 and DGX-A100 profiles.

Per layer and rank (hidden 12288, 96 heads of 128, FFN 49152, bf16,
micro-batch 8 x 2048 tokens; tp = 8 gives 12 heads, QKV 4608 and FFN 6144
columns per rank):
  forward   layer_norm, QKV matmul, causal attention, output projection,
            all_reduce over tp, residual, layer_norm, FC1, gelu, FC2,
            all_reduce over tp, residual;
  backward  the transposed matmuls of the same layers (activation gradients
            and weight gradients), three attention calls standing for the
            attention backward (about 2.5x the forward in FlashAttention-2),
            two all_reduces over tp for the activation gradients, and one
            all_reduce over dp of each weight gradient.
The backward is written by hand with the shapes and costs of the real one
(it is not an autodiff of the forward: gelu's derivative is a multiply, the
layer norms' an add), which is what the simulator needs.

Two schedules of the same work:
  sync     every collective waits where it is issued (nothing overlaps);
  overlap  weight-gradient all_reduces run on their own stream ("dp") and
           are awaited only at the end of the step, as DDP does; the tp
           all_reduces stay where they are (their results are needed next).

Prints one table of ratios measured in this run (CONVENTIONS.md: benchmarks
print ratios, never assert times), and the wall time of each simulation.

usage: sim_gpt3.py [--build BUILD] [--layers 96] [--dp 8] [--keep DIR]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gpt3_ir(layers, batch, seq, hidden, heads, ffn, tp, dp, overlap):
    """The braid IR of one rank of the training step."""
    hd = hidden // heads          # head size
    hr = heads // tp              # heads per rank
    qkv = 3 * hr * hd             # QKV columns per rank
    att = hr * hd                 # attention output columns per rank
    f = ffn // tp                 # FFN columns per rank
    bs = batch * seq
    t = "bf16"
    X = f"tensor<{batch}x{seq}x{hidden}x{t}>"
    lines = [f"// GPT-3 {layers} layers, one rank of mesh dp={dp} x tp={tp}; "
             f"{'overlapped' if overlap else 'synchronous'} gradient all_reduces.",
             f"braid.mesh @world(dp = {dp}, tp = {tp})"]
    weights = {"g1": f"tensor<{hidden}x{t}>", "b1": f"tensor<{hidden}x{t}>",
               "wqkv": f"tensor<{hidden}x{qkv}x{t}>",
               "wo": f"tensor<{att}x{hidden}x{t}>",
               "g2": f"tensor<{hidden}x{t}>", "b2": f"tensor<{hidden}x{t}>",
               "w1": f"tensor<{hidden}x{f}x{t}>",
               "w2": f"tensor<{f}x{hidden}x{t}>"}
    for l in range(layers):
        for name, ty in weights.items():
            lines.append(f"braid.weight @l{l}.{name} : {ty}")
    grads = [("dwqkv", weights["wqkv"]), ("dwo", weights["wo"]),
             ("dw1", weights["w1"]), ("dw2", weights["w2"])]
    results = [X] + [ty for l in range(layers) for _, ty in grads]
    lines.append(f"func.func @step(%x0: {X}) -> ({', '.join(results)}) {{")
    body = []
    emit = body.append

    def all_reduce(name, value, ty, axis, stream):
        """An all_reduce that is awaited where it is issued."""
        emit(f"  %{name}_f = braid.async on \"{stream}\" {{")
        emit(f"    %r = braid.all_reduce %{value} on @world[\"{axis}\"] sum : {ty}")
        emit(f"    braid.yield %r : {ty}")
        emit(f"  }} : !braid.future<{ty}>")
        emit(f"  %{name} = braid.await %{name}_f : {ty}")

    Q4 = f"tensor<{batch}x{seq}x{hr}x{hd}x{t}>"
    QH = f"tensor<{batch}x{hr}x{seq}x{hd}x{t}>"
    A = f"tensor<{batch}x{seq}x{att}x{t}>"
    QKV = f"tensor<{batch}x{seq}x{qkv}x{t}>"
    F = f"tensor<{batch}x{seq}x{f}x{t}>"
    H = f"tensor<{hidden}x{t}>"
    scale = 1 / hd ** 0.5
    # Forward.
    for l in range(layers):
        x, p = f"x{l}", f"l{l}"
        for name, ty in weights.items():
            emit(f"  %{p}{name} = braid.get_weight @l{l}.{name} : {ty}")
        emit(f"  %{p}ln1 = braid.layer_norm %{x}, %{p}g1, %{p}b1 axis 2 eps 1.0e-05 : ({X}, {H}, {H}) -> {X}")
        emit(f"  %{p}qkv = braid.matmul %{p}ln1, %{p}wqkv : ({X}, {weights['wqkv']}) -> {QKV}")
        emit(f"  %{p}q, %{p}k, %{p}v = braid.split %{p}qkv dim 2 : {QKV} -> {A}, {A}, {A}")
        for n in "qkv":
            emit(f"  %{p}{n}4 = braid.reshape %{p}{n} : {A} -> {Q4}")
            emit(f"  %{p}{n}h = braid.transpose %{p}{n}4 [0, 2, 1, 3] : {Q4} -> {QH}")
        emit(f"  %{p}o = braid.attention %{p}qh, %{p}kh, %{p}vh causal scale {scale:.8f} : ({QH}, {QH}, {QH}) -> {QH}")
        emit(f"  %{p}ot = braid.transpose %{p}o [0, 2, 1, 3] : {QH} -> {Q4}")
        emit(f"  %{p}o2 = braid.reshape %{p}ot : {Q4} -> {A}")
        emit(f"  %{p}ap = braid.matmul %{p}o2, %{p}wo : ({A}, {weights['wo']}) -> {X}")
        all_reduce(f"{p}ar1", f"{p}ap", X, "tp", "tp")
        emit(f"  %{p}h1 = braid.add %{x}, %{p}ar1 : ({X}, {X}) -> {X}")
        emit(f"  %{p}ln2 = braid.layer_norm %{p}h1, %{p}g2, %{p}b2 axis 2 eps 1.0e-05 : ({X}, {H}, {H}) -> {X}")
        emit(f"  %{p}fc = braid.matmul %{p}ln2, %{p}w1 : ({X}, {weights['w1']}) -> {F}")
        emit(f"  %{p}act = braid.gelu %{p}fc tanh : {F}")
        emit(f"  %{p}mp = braid.matmul %{p}act, %{p}w2 : ({F}, {weights['w2']}) -> {X}")
        all_reduce(f"{p}ar2", f"{p}mp", X, "tp", "tp")
        emit(f"  %x{l + 1} = braid.add %{p}h1, %{p}ar2 : ({X}, {X}) -> {X}")
    # Backward, last layer first; the forward output seeds the gradient.
    X2 = f"tensor<{bs}x{hidden}x{t}>"
    F2 = f"tensor<{bs}x{f}x{t}>"
    A2 = f"tensor<{bs}x{att}x{t}>"
    QKV2 = f"tensor<{bs}x{qkv}x{t}>"
    dy = f"x{layers}"
    grad_values = []
    for l in reversed(range(layers)):
        p, g = f"l{l}", f"g{l}"
        # MLP.
        emit(f"  %{g}dact = braid.matmul %{dy}, %{p}w2 transpose_rhs : ({X}, {weights['w2']}) -> {F}")
        emit(f"  %{g}dfc = braid.mul %{g}dact, %{p}fc : ({F}, {F}) -> {F}")
        emit(f"  %{g}act2 = braid.reshape %{p}act : {F} -> {F2}")
        emit(f"  %{g}dy2 = braid.reshape %{dy} : {X} -> {X2}")
        emit(f"  %{g}dw2 = braid.matmul %{g}act2, %{g}dy2 transpose_lhs : ({F2}, {X2}) -> {weights['w2']}")
        emit(f"  %{g}ln22 = braid.reshape %{p}ln2 : {X} -> {X2}")
        emit(f"  %{g}dfc2 = braid.reshape %{g}dfc : {F} -> {F2}")
        emit(f"  %{g}dw1 = braid.matmul %{g}ln22, %{g}dfc2 transpose_lhs : ({X2}, {F2}) -> {weights['w1']}")
        emit(f"  %{g}dln2p = braid.matmul %{g}dfc, %{p}w1 transpose_rhs : ({F}, {weights['w1']}) -> {X}")
        all_reduce(f"{g}dln2", f"{g}dln2p", X, "tp", "tp")
        emit(f"  %{g}dh1 = braid.add %{dy}, %{g}dln2 : ({X}, {X}) -> {X}")
        # Attention.
        emit(f"  %{g}do2 = braid.matmul %{g}dh1, %{p}wo transpose_rhs : ({X}, {weights['wo']}) -> {A}")
        emit(f"  %{g}o22 = braid.reshape %{p}o2 : {A} -> {A2}")
        emit(f"  %{g}dh12 = braid.reshape %{g}dh1 : {X} -> {X2}")
        emit(f"  %{g}dwo = braid.matmul %{g}o22, %{g}dh12 transpose_lhs : ({A2}, {X2}) -> {weights['wo']}")
        emit(f"  %{g}do4 = braid.reshape %{g}do2 : {A} -> {Q4}")
        emit(f"  %{g}doh = braid.transpose %{g}do4 [0, 2, 1, 3] : {Q4} -> {QH}")
        for n, args in (("dq", f"%{g}doh, %{p}kh, %{p}vh"),
                        ("dk", f"%{p}qh, %{g}doh, %{p}vh"),
                        ("dv", f"%{p}qh, %{p}kh, %{g}doh")):
            emit(f"  %{g}{n}h = braid.attention {args} causal scale {scale:.8f} : ({QH}, {QH}, {QH}) -> {QH}")
            emit(f"  %{g}{n}t = braid.transpose %{g}{n}h [0, 2, 1, 3] : {QH} -> {Q4}")
            emit(f"  %{g}{n} = braid.reshape %{g}{n}t : {Q4} -> {A}")
        emit(f"  %{g}dqkv = braid.concat %{g}dq, %{g}dk, %{g}dv dim 2 : ({A}, {A}, {A}) -> {QKV}")
        emit(f"  %{g}dqkv2 = braid.reshape %{g}dqkv : {QKV} -> {QKV2}")
        emit(f"  %{g}ln12 = braid.reshape %{p}ln1 : {X} -> {X2}")
        emit(f"  %{g}dwqkv = braid.matmul %{g}ln12, %{g}dqkv2 transpose_lhs : ({X2}, {QKV2}) -> {weights['wqkv']}")
        emit(f"  %{g}dln1p = braid.matmul %{g}dqkv, %{p}wqkv transpose_rhs : ({QKV}, {weights['wqkv']}) -> {X}")
        all_reduce(f"{g}dln1", f"{g}dln1p", X, "tp", "tp")
        emit(f"  %{g}dx = braid.add %{g}dh1, %{g}dln1 : ({X}, {X}) -> {X}")
        # Weight gradients: reduced over the data-parallel replicas.
        for name, ty in grads:
            if overlap:
                emit(f"  %{g}{name}_f = braid.async on \"dp\" {{")
                emit(f"    %r = braid.all_reduce %{g}{name} on @world[\"dp\"] sum : {ty}")
                emit(f"    braid.yield %r : {ty}")
                emit(f"  }} : !braid.future<{ty}>")
            else:
                all_reduce(f"{g}{name}_r", f"{g}{name}", ty, "dp", "dp")
            grad_values.append((l, name, ty))
        dy = f"{g}dx"
    returned = [f"%{dy}"]
    for l in range(layers):
        for name, ty in grads:
            if overlap:
                emit(f"  %g{l}{name}_r = braid.await %g{l}{name}_f : {ty}")
            returned.append(f"%g{l}{name}_r")
    emit(f"  return {', '.join(returned)} : {', '.join(results)}")
    lines += body
    lines.append("}")
    return "\n".join(lines) + "\n"


def run(command, what):
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"sim_gpt3: {what} failed ({result.returncode}):\n"
                 f"{result.stderr or result.stdout}")
    return result.stdout, seconds


def parse_summary(text):
    def time_of(label):
        match = re.search(rf"{label}\s+([0-9.]+) (s|ms|us)", text)
        if not match:
            sys.exit(f"sim_gpt3: no '{label}' in the summary:\n{text}")
        scale = {"s": 1, "ms": 1e-3, "us": 1e-6}[match.group(2)]
        return float(match.group(1)) * scale

    efficiency = re.search(r"overlap efficiency \(bound/makespan\)\s+([0-9.]+)%", text)
    wall = re.search(r"loading and simulating took ([0-9.]+) s", text)
    return {"makespan": time_of("makespan"),
            "compute": time_of(r"compute \(sum of isolated kernels\)"),
            "comm": time_of(r"communication \(sum of isolated\)"),
            "exposed": time_of("exposed communication"),
            "efficiency": float(efficiency.group(1)) / 100,
            "sim_wall": float(wall.group(1))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"),
                        help="the build folder holding bin/braid-opt, ...")
    parser.add_argument("--layers", type=int, default=96)
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--dp", type=int, default=8,
                        help="data-parallel replicas (nodes); ranks = 8 * dp")
    parser.add_argument("--profiles", default="dgx-h100,dgx-a100")
    parser.add_argument("--keep", help="keep the IR, plans, traces and SVGs here")
    args = parser.parse_args()
    tools = {name: os.path.join(args.build, "bin", name)
             for name in ("braid-opt", "braid-translate", "braid-run")}
    for path in tools.values():
        if not os.access(path, os.X_OK):
            sys.exit(f"sim_gpt3: {path} not found (build the project first)")
    work = args.keep or tempfile.mkdtemp(prefix="braid-sim-gpt3-")
    os.makedirs(work, exist_ok=True)
    hidden, heads, ffn, tp, dp = 12288, 96, 49152, 8, args.dp

    print(f"GPT-3 175B shapes: {args.layers} layers, hidden {hidden}, {heads} heads, "
          f"FFN {ffn}, bf16, micro-batch {args.micro_batch} x {args.seq} tokens; "
          f"mesh dp={dp} x tp={tp} = {dp * tp} ranks; forward + backward")
    rows = []
    for variant in ("sync", "overlap"):
        started = time.perf_counter()
        ir = gpt3_ir(args.layers, args.micro_batch, args.seq, hidden, heads,
                     ffn, tp, dp, variant == "overlap")
        mlir = os.path.join(work, f"gpt3-{variant}.mlir")
        with open(mlir, "w") as out:
            out.write(ir)
        generate = time.perf_counter() - started
        exec_mlir = os.path.join(work, f"gpt3-{variant}.exec.mlir")
        plan = os.path.join(work, f"gpt3-{variant}.bplan")
        _, opt_s = run([tools["braid-opt"], mlir, "--braid-to-exec=function=step",
                        "-o", exec_mlir], "braid-opt")
        _, translate_s = run([tools["braid-translate"], "--exec-to-plan", exec_mlir,
                              "-o", plan], "braid-translate")
        with open(exec_mlir) as text:
            instructions = sum(1 for line in text
                               if "exec.kernel" in line or "exec.collective" in line)
        for profile in args.profiles.split(","):
            stem = os.path.join(work, f"gpt3-{variant}-{profile}")
            out, wall = run([tools["braid-run"], plan, "--backend", "sim", "--hw",
                             profile, "--world", str(dp * tp), "--trace",
                             stem + ".json", "--svg", stem + ".svg"],
                            "braid-run --backend sim")
            with open(stem + ".txt", "w") as summary:
                summary.write(out)
            numbers = parse_summary(out)
            numbers.update(variant=variant, profile=profile, wall=wall,
                           generate=generate, opt=opt_s, translate=translate_s,
                           instructions=instructions)
            rows.append(numbers)

    print()
    print(f"{'schedule':<9} {'profile':<9} {'makespan':>10} {'compute':>9} "
          f"{'comm':>9} {'exposed':>9} {'overlap eff':>11} {'vs sync':>8}")
    sync = {row["profile"]: row for row in rows if row["variant"] == "sync"}
    for row in rows:
        speedup = sync[row["profile"]]["makespan"] / row["makespan"]
        print(f"{row['variant']:<9} {row['profile']:<9} {row['makespan'] * 1e3:8.1f}ms "
              f"{row['compute'] * 1e3:7.1f}ms {row['comm'] * 1e3:7.1f}ms "
              f"{row['exposed'] * 1e3:7.1f}ms {row['efficiency'] * 100:10.1f}% "
              f"{speedup:7.2f}x")
    print()
    print(f"{'schedule':<9} {'profile':<9} {'instructions':>12} {'generate IR':>11} "
          f"{'braid-opt':>9} {'translate':>9} {'simulate':>9} {'braid-run':>9}")
    for row in rows:
        print(f"{row['variant']:<9} {row['profile']:<9} {row['instructions']:>12} "
              f"{row['generate']:10.2f}s {row['opt']:8.2f}s {row['translate']:8.2f}s "
              f"{row['sim_wall']:8.3f}s {row['wall']:8.2f}s")
    print("\n(simulate: loading, validating and simulating the plan inside "
          "braid-run; braid-run: the whole process)")
    if args.keep:
        print(f"IR, plans, summaries, traces and SVG timelines in {work}")
    else:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
