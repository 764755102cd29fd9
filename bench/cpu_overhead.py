#!/usr/bin/env python3
"""Overhead per instruction of the CPU runtime, against onnxruntime.

    .venv/bin/python bench/cpu_overhead.py [--build build] [--ops 1000]
        [--sizes 1,1024] [--rounds 5] [--repeat 200] [--threads 1]

A chain of `--ops` elementwise adds (y = y + x, so that nothing folds) on a
tensor of each size in `--sizes` elements, written as an ONNX model (not
committed), compiled by braidc into a one-rank plan and run by braid-run
(`--repeat` runs after a warm-up, executor totals: no process start or
loading), and run by onnxruntime (CPU provider, the same thread count) in
the same rounds, alternating. The time per instruction is the median total
over the op count; at one element it is all overhead: dispatch, argument
setup, timing. Issue 17 asks for under 5 us. Prints a table; nothing is
asserted.
"""
import argparse
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import cpu_vs_onnxruntime as common  # noqa: E402  (the measuring helpers)

WHO = "cpu_overhead"


def write_chain(folder, ops, size):
    """An ONNX model of `ops` chained adds on a [size] f32 tensor, and its
    input."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    os.makedirs(folder, exist_ok=True)
    nodes, previous = [], "x"
    for i in range(ops):
        name = f"y{i}" if i + 1 < ops else "y"
        nodes.append(helper.make_node("Add", [previous, "x"], [name]))
        previous = name
    graph = helper.make_graph(
        nodes, f"chain{ops}x{size}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    inputs = os.path.join(folder, "inputs")
    os.makedirs(inputs, exist_ok=True)
    x = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    with open(os.path.join(inputs, "input_0.pb"), "wb") as out:
        out.write(numpy_helper.from_array(x, "x").SerializeToString())
    return path, inputs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--sizes", default="1,1024")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--work", default=None, help="folder to keep models in")
    args = p.parse_args()
    if args.ops < 1 or args.rounds < 1 or args.repeat < 1:
        common.fail("--ops, --rounds and --repeat must be positive")
    sizes = [int(s) for s in args.sizes.split(",")]
    tools = {n: os.path.join(args.build, "bin", n) for n in ("braidc", "braid-run")}
    for path in tools.values():
        if not os.access(path, os.X_OK):
            common.fail(f"{path} not found (build the project first)")
    work = args.work or tempfile.mkdtemp(prefix="braid-cpu-overhead-")
    rows = []
    for size in sizes:
        folder = os.path.join(work, f"chain{args.ops}x{size}")
        model, inputs = write_chain(folder, args.ops, size)
        plan = os.path.join(folder, "plan.bplan")
        common.run_measured([tools["braidc"], model, "-o", plan, "--progress=false"])
        braid, ort = [], []
        for r in range(args.rounds):
            braid.append(common.braid_round(tools, plan, inputs, args.threads,
                                            args.repeat)[0])
            ort.append(common.ort_round(sys.executable, model, inputs,
                                        args.threads, args.repeat)[0])
            print(f"{WHO}: {size} elements, round {r + 1}/{args.rounds}: Braid "
                  f"{braid[-1]:.3f} ms, onnxruntime {ort[-1]:.3f} ms", flush=True)
        rows.append((size, statistics.median(braid), statistics.median(ort)))
    print()
    print(f"{args.ops} chained adds, {args.threads} thread(s), medians of "
          f"{args.rounds} rounds of {args.repeat} runs")
    print("| elements | Braid us/instruction | onnxruntime us/node | onnxruntime / Braid |")
    print("|---|---|---|---|")
    for size, b, o in rows:
        print(f"| {size} | {b * 1e3 / args.ops:.2f} | {o * 1e3 / args.ops:.2f} | "
              f"{o / b:.2f}x |")


if __name__ == "__main__":
    main()
