#!/usr/bin/env python3
"""Domino on training steps of GPT-3-shaped models, simulated against the
Megatron-partitioned step.

    bench/sim_domino_training.py [--build build] [--work DIR] [--layers 2]
        [--models 2.7b,6.7b,13b] [--batch 8] [--sequence 1024]
        [--precision f32|bf16] [--sp]

For each GPT-3 shape (hidden, heads, FFN from the GPT-3 paper; vocabulary
50304, Megatron's padding of GPT-2's 50257 to a multiple of 128, so that the
LM head splits), the script writes a decoder of `--layers` layers with
constant weights (cpu_vs_onnxruntime.py's generator; the simulator reads no
values), compiles one AdamW training step of `--batch` x `--sequence` tokens
with braidc for tensor parallelism on DGX-H100 nodes, and simulates it
(`braid-run --backend sim`):

  megatron    --parallel tp=N --overlap none: the partitioned step, every
              all-reduce where its result is needed (Megatron-LM)
  domino      --overlap domino=auto: braid-domino's chunk count from the cost
              model (row chunks through forward and backward), scheduled
  domino2     --overlap domino=2 --force-overlap: two row chunks, the
              paper's micro-batch split

on one node (tp=8) and, for the shapes whose heads divide by 32, four nodes
(tp=32 over InfiniBand, the paper's "TP = world size"). The paper reports up
to 1.3x on one node and 1.14-1.2x on four. f32 with TF32 matrix rates by
default (the generator writes f32); `--precision bf16` compiles with
braidc's mixed precision (bf16 compute and activations, f32 weights,
gradients and AdamW: Megatron's --bf16; the paper trains in fp16, whose
tensor-core rate is bf16's), and 2 layers by default
instead of 32-40: the embedding and LM head weigh more than in the real
models. `--sp` partitions with Megatron's sequence parallelism on the same
tp ranks (`--parallel sp=N`: the all-reduces become reduce-scatters and
all-gathers, which Domino's row chunks split the same way). Nothing is
asserted; prints a table.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHO = "sim_domino_training"
sys.path.insert(0, os.path.join(ROOT, "bench"))

# name: (hidden, heads, ffn)
SHAPES = {"2.7b": (2560, 32, 10240), "6.7b": (4096, 32, 16384),
          "13b": (5120, 40, 20480)}
CONFIGS = {"megatron": ["--overlap", "none"],
           "domino": ["--overlap", "domino=auto", "--explain"],
           "domino2": ["--overlap", "domino=2", "--force-overlap"]}


def run(command, what):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{WHO}: {what} failed ({result.returncode}):\n"
                 f"{(result.stderr or result.stdout)[-3000:]}")
    return result.stdout + result.stderr


def makespan(text):
    m = re.search(r"makespan\s+([0-9.]+) (s|ms|us)", text)
    return float(m.group(1)) * {"s": 1e3, "ms": 1, "us": 1e-3}[m.group(2)]


def exposed(text):
    m = re.search(r"exposed communication\s+([0-9.]+) (s|ms|us)", text)
    return float(m.group(1)) * {"s": 1e3, "ms": 1, "us": 1e-3}[m.group(2)]


def peak(text):
    m = re.search(r"peak memory per rank \(arena\)\s+([0-9]+) bytes", text)
    return int(m.group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(),
                                                  "braid-sim-domino-training"))
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--models", default="2.7b,6.7b,13b")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--sequence", type=int, default=1024)
    p.add_argument("--precision", default="f32", choices=["f32", "bf16"])
    p.add_argument("--sp", action="store_true",
                   help="sequence parallelism on the tp ranks (sp=N)")
    p.add_argument("--tp", default="8,32",
                   help="tensor-parallel sizes: 8 on one node, 32 on four")
    p.add_argument("--memory-limits", default="",
                   help="per size, limits in bytes (8:B,B;32:B): the scheduled "
                        "step (--overlap schedule) without a limit and under "
                        "each, with the gathers braid-schedule kept from the "
                        "forward pass and the peak arena")
    args = p.parse_args()
    axis = "sp" if args.sp else "tp"
    limits = {}
    for item in filter(None, args.memory_limits.split(";")):
        size, _, values = item.partition(":")
        limits[int(size)] = [int(v) for v in values.split(",") if v]
    sizes = [int(t) for t in args.tp.split(",")]
    os.makedirs(args.work, exist_ok=True)
    braidc = os.path.join(args.build, "bin", "braidc")
    braid_run = os.path.join(args.build, "bin", "braid-run")
    import cpu_vs_onnxruntime as generator

    rows = []
    for model in args.models.split(","):
        if model not in SHAPES:
            sys.exit(f"{WHO}: unknown model '{model}' (one of {', '.join(SHAPES)})")
        hidden, heads, ffn = SHAPES[model]
        onnx = os.path.join(args.work, f"gpt3-{model}-{args.layers}l.onnx")
        if not os.path.exists(onnx):
            print(f"{WHO}: writing {os.path.basename(onnx)}", flush=True)
            generator.decoder_onnx(onnx, "gpt2", args.layers, hidden, heads, heads,
                                   ffn, 50304, args.sequence, batch=args.batch,
                                   random=False)
        for tp, nodes in ((8, 1), (32, 4)):
            if heads % tp or tp not in sizes:
                continue
            times = {}
            configs = dict(CONFIGS)
            if limits:
                configs = {"schedule": ["--overlap", "schedule"]}
                for limit in limits.get(tp, []):
                    configs[f"limit={limit}"] = ["--overlap", "schedule",
                                                 "--memory-limit", str(limit)]
            for name, flags in configs.items():
                plan = os.path.join(args.work,
                                    f"{model}-{axis}{tp}-{name}-{args.precision}.bplan")
                out = run([braidc, onnx, "--train", "--optimizer", "adamw",
                           "--parallel", f"{axis}={tp}", "--hw", "dgx-h100",
                           "--weights", "/dev/null", "--progress=false",
                           "--precision", args.precision,
                           "-o", plan] + flags, f"braidc {model} {axis}={tp} {name}")
                chunks = re.search(r"chunks=(\d+)\s+[0-9.]+ us\s+[0-9.]+x\s+<- chosen",
                                   out)
                sim = run([braid_run, plan, "--backend", "sim", "--hw", "dgx-h100",
                           "--nodes", str(nodes)], f"simulating {model} {name}")
                kept = re.search(r"keeps (\d+) of (\d+) gathered values", out)
                times[name] = (makespan(sim), exposed(sim),
                               int(chunks.group(1)) if chunks else None,
                               peak(sim), f"{kept.group(1)}/{kept.group(2)}" if kept else "-")
                print(f"{WHO}: GPT-3 {model} {axis}={tp}: {name} {times[name][0]:.1f} ms",
                      flush=True)
            rows.append((model, tp, nodes, times))

    if limits:
        print()
        print(f"GPT-3 shapes, {args.layers} layers, AdamW training step of "
              f"{args.batch} x {args.sequence} tokens, {args.precision}, "
              f"{axis}, scheduled, under memory limits; simulated on dgx-h100")
        print(f"{'model':<6} {axis:>3} {'nodes':>5} {'limit':>14} {'kept':>9} "
              f"{'ms':>8} {'exposed':>8} {'peak arena bytes':>17}")
        for model, tp, nodes, times in rows:
            for name, (ms, exp, _, arena, kept) in times.items():
                limit = name.split("=")[1] if "=" in name else "none"
                print(f"{model:<6} {tp:>3} {nodes:>5} {limit:>14} {kept:>9} "
                      f"{ms:>8.1f} {exp:>8.1f} {arena:>17,}")
        print("(kept: of the backward pass's second gathers, how many braid-"
              "schedule replaced by keeping the forward pass's copy)")
        return
    print()
    print(f"GPT-3 shapes, {args.layers} layers, AdamW training step of "
          f"{args.batch} x {args.sequence} tokens, {args.precision}, "
          f"{'sequence' if args.sp else 'tensor'} parallel on dgx-h100; "
          f"simulated")
    print(f"{'model':<6} {'tp':>3} {'nodes':>5} {'megatron ms':>12} {'exposed':>8} "
          f"{'auto chunks':>11} {'domino ms':>10} {'speed-up':>8} {'domino2 ms':>10} "
          f"{'speed-up':>8}")
    for model, tp, nodes, times in rows:
        base = times["megatron"][0]
        print(f"{model:<6} {tp:>3} {nodes:>5} {base:>12.1f} "
              f"{times['megatron'][1]:>8.1f} {str(times['domino'][2]):>11} "
              f"{times['domino'][0]:>10.1f} "
              f"{base / times['domino'][0]:>7.2f}x {times['domino2'][0]:>10.1f} "
              f"{base / times['domino2'][0]:>7.2f}x")
    print("(exposed: the Megatron step's exposed communication; domino: the cost "
          "model's chunk count (1: no chunks, the step only scheduled, its "
          "all-reduces asynchronous), then braid-schedule; domino2: two row "
          "chunks, forced)")


if __name__ == "__main__":
    main()
