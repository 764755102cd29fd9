#!/usr/bin/env python3
"""Data-parallel training over the rate-limited veth link: synchronous SGD,
gradient buckets, ZeRO-1, ZeRO-3, CoCoD-SGD and ACCO, measured and simulated.

Two ranks, one per network namespace, joined only by the tbf-shaped veth pair
of setup.sh (run.py's harness: the same launch, calibration and simulator
profile). Each configuration is compiled from the same model with
`braidc --train --parallel dp=2 ...` and trained on the same tokens:
synchronous data parallelism splits the model's batch B over the ranks (B
windows per step), CoCoD-SGD, ACCO and ZeRO-1 with gradient accumulation
(accumulate8, ACCO's baseline: the same optimizer steps on the same windows
as ACCO M=4) give each rank a batch of its own (2 B windows per step), so
they run half as many steps for the same tokens; ACCO and accumulate8 log
one step per micro-batch. The
configurations run alternately, `--repeats` times each; a run's time is
braid-run's "trained steps ... in X s" (the steps alone: no process start,
MPI wire-up or weight loading), the median over the runs. Next to it, the
simulator's time of one call of the plan (`braid-run --backend sim` on the
veth profile) per step. Prints a table and writes a loss-against-time
picture (SVG).

usage: train.py --rate MBIT [--model gpt2] [--windows 400]
                [--configs sync,buckets,zero1,zero3,cocod2,cocod4]
                [--repeats 3] [--svg OUT.svg] [--work DIR] [--no-setup]
                [--recalibrate] [--build BUILD] [--wait-idle S]
                [--max-other 0.05] [--retries 3]
Root only (ip netns, tc). Standard library only.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as veth  # noqa: E402  (the harness beside this file)

SGD = ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"]
# name: braidc flags after --parallel dp=2
CONFIGS = {
    "sync": ["--overlap", "none"],
    "buckets": [],
    "zero1": ["--zero", "1"],
    "zero3": ["--zero", "3"],
    "zero3-2streams": ["--zero", "3", "--comm-streams", "2"],
    "zero3-all": ["--zero", "3", "--prefetch", "all"],
    "cocod2": ["--algorithm", "cocod-sgd=2"],
    "cocod4": ["--algorithm", "cocod-sgd=4"],
    "cocod8": ["--algorithm", "cocod-sgd=8"],
    "accumulate8": ["--algorithm", "accumulate=8"],
    "acco4": ["--algorithm", "acco=4"],
    "accumulate16": ["--algorithm", "accumulate=16"],
    "acco8": ["--algorithm", "acco=8"],
    "accumulate24": ["--algorithm", "accumulate=24"],
    "acco12": ["--algorithm", "acco=12"],
    "acco-auto": ["--algorithm", "acco=auto"],
}
LABELS = {
    "sync": "synchronous (no overlap)",
    "buckets": "buckets + schedule (default)",
    "zero1": "ZeRO-1",
    "zero3": "ZeRO-3",
    "zero3-2streams": "ZeRO-3, two comm streams",
    "zero3-all": "ZeRO-3, unbounded prefetch",
    "cocod2": "CoCoD-SGD K=2",
    "cocod4": "CoCoD-SGD K=4",
    "cocod8": "CoCoD-SGD K=8",
    "accumulate8": "ZeRO-1, 8 micro-batches/step",
    "acco4": "ACCO M=4",
    "accumulate16": "ZeRO-1, 16 micro-batches/step",
    "acco8": "ACCO M=8",
    "accumulate24": "ZeRO-1, 24 micro-batches/step",
    "acco12": "ACCO M=12",
    "acco-auto": "ACCO M=auto",
}
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
          "#17becf"]


def losses(path):
    with open(path) as f:
        rows = [line.strip().split(",") for line in f.readlines()[1:]]
    return [float(loss) for _, loss in rows]


def svg(path, curves, title):
    """curves: (label, [(seconds, loss)]) -> a line chart, no dependencies."""
    width, height, left, right, top, bottom = 760, 420, 64, 250, 34, 48
    xs = [t for _, c in curves for t, _ in c]
    ys = [v for _, c in curves for _, v in c]
    x_max = max(xs) * 1.02
    y_lo, y_hi = int(min(ys)) - 0.0, int(max(ys)) + 1.0
    x = lambda t: left + (width - left - right) * t / x_max
    y = lambda v: top + (height - top - bottom) * (y_hi - v) / (y_hi - y_lo)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{title}</text>']
    v = int(y_lo)
    while v <= y_hi:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" '
                   f'y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{y(v) + 4:.1f}" '
                   f'text-anchor="end">{v}</text>')
        v += 1
    step = 10 ** max(0, len(str(int(x_max))) - 1) if x_max >= 1 else 0.1
    t = 0.0
    while t <= x_max:
        out.append(f'<text x="{x(t):.1f}" y="{height - bottom + 16}" '
                   f'text-anchor="middle">{t:g}</text>')
        t += step
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 12}" '
               f'text-anchor="middle">seconds of training (measured)</text>')
    out.append(f'<text x="16" y="{(top + height - bottom) / 2}" '
               f'transform="rotate(-90 16 {(top + height - bottom) / 2})" '
               f'text-anchor="middle">loss (trailing mean of 5 steps)</text>')
    for i, (label, curve) in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        points = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in curve)
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" '
                   f'points="{points}"/>')
        ly = top + 16 + 20 * i
        out.append(f'<line x1="{width - right + 12}" x2="{width - right + 36}" '
                   f'y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" '
                   f'stroke-width="2"/>')
        out.append(f'<text x="{width - right + 42}" y="{ly}">{label}</text>')
    out.append("</svg>")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, required=True, help="tbf rate, Mbit/s")
    parser.add_argument("--model", default="gpt2", help="examples/models/NAME")
    parser.add_argument("--windows", type=int, default=400,
                        help="token windows every configuration trains on")
    parser.add_argument("--configs", default="sync,buckets,zero1,zero3,cocod2,cocod4")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--svg", help="loss against measured time")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "braid-veth"))
    parser.add_argument("--no-setup", action="store_true")
    parser.add_argument("--recalibrate", action="store_true")
    parser.add_argument("--mpi-allreduce", choices=("ring", "default"), default="ring")
    parser.add_argument("--max-other", type=float, default=0.05)
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--wait-idle", type=float, default=0)
    parser.add_argument("--build", default=os.path.join(veth.ROOT, "build"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        veth.die("needs root (ip netns, tc)")
    configs = args.configs.split(",")
    for name in configs:
        if name not in CONFIGS:
            veth.die(f"unknown configuration '{name}' (one of {', '.join(CONFIGS)})")
    model = os.path.join(veth.ROOT, "examples", "models", args.model, "model.onnx")
    data = os.path.join(veth.ROOT, "examples", "data", "gpl3.bin")
    if not os.path.isfile(model):
        veth.die(f"{model}: no such model")
    os.makedirs(args.work, exist_ok=True)
    tools = {name: os.path.join(args.build, "bin", name)
             for name in ("braid-opt", "braid-translate", "braid-run", "braidc")}
    snapshot = os.path.join(args.work, "bin")
    os.makedirs(snapshot, exist_ok=True)
    for name, path in tools.items():
        if not os.access(path, os.X_OK):
            veth.die(f"{path} not found")
        shutil.copy2(path, os.path.join(snapshot, name + ".tmp"))
        os.replace(os.path.join(snapshot, name + ".tmp"), os.path.join(snapshot, name))
        tools[name] = os.path.join(snapshot, name)
    veth.ForeignCpu.group = veth.CpuGroup.make()
    if veth.ForeignCpu.group:
        import atexit
        atexit.register(veth.ForeignCpu.group.remove)

    profile, calibration, bench, alpha, _ = veth.prepare_link_and_profile(args, tools)
    print(f"train.py: link {args.rate:g} Mbit/s (TCP both ways {bench['mbit_both']:.0f}), "
          f"all_reduce alpha {alpha * 1e6:.0f} us, matmul "
          f"{calibration['matrix_flops'] / 1e9:.1f} GFLOP/s/core; profile {profile}",
          flush=True)

    # Plans (the cost model's own choices, buckets=auto and cocod, on this
    # link's profile) and their simulated time per step.
    plans, sims, steps = {}, {}, {}
    batch = sequence = None
    for name in configs:
        flags = CONFIGS[name]
        plan = os.path.join(args.work, f"train-{args.model}-{name}.bplan")
        veth.run([tools["braidc"], model, "--train", *SGD, "--parallel", "dp=2",
                  "--hw", profile, "--progress=false", "-o", plan, *flags],
                 f"compiling {name}")
        sim = veth.run([tools["braid-run"], plan, "--backend", "sim", "--hw", profile],
                       f"simulating {name}")
        per_call = re.search(r"one call of (\d+) training steps", sim)
        per_call = int(per_call.group(1)) if per_call else 1
        m = re.search(r"batch (\d+) x sequence (\d+)", sim)
        batch, sequence = int(m.group(1)), int(m.group(2))
        steps[name] = args.windows // batch // per_call * per_call
        if steps[name] == 0:
            veth.die(f"--windows {args.windows} is less than one call of {name} "
                     f"({per_call} steps of {batch} windows)")
        sims[name] = veth.sim_summary(sim)["makespan"] / per_call
        plans[name] = plan

    times = {name: [] for name in configs}
    curves = {}
    for r in range(args.repeats):
        for name in configs:
            log = os.path.join(args.work, f"train-{args.model}-{name}.csv")
            for attempt in range(args.retries + 1):
                if args.wait_idle > 0:
                    veth.wait_idle(args.wait_idle)
                command = veth.mpirun_command(
                    tools, args.mpi_allreduce,
                    [plans[name], "--steps", str(steps[name]), "--data", data,
                     "--loss-log", log])
                with veth.ForeignCpu() as probe:
                    result = veth.launch(command, probe)
                other = probe.share()
                m = re.search(r"trained steps \d+\.\.\d+ \((\d+) steps of (\d+) "
                              r"tokens\) in ([0-9.]+) s", result.stdout)
                if result.returncode != 0 or not m:
                    veth.die(f"{name} failed ({result.returncode}):\n"
                             f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
                seconds = float(m.group(3))
                line = (f"train.py: {name} run {r + 1}/{args.repeats}: {steps[name]} steps "
                        f"in {seconds:.3f} s (other processes {other:.0%} of the CPUs)")
                if other > args.max_other and attempt < args.retries:
                    print(line + ": discarded, again", flush=True)
                    continue
                print(line, flush=True)
                break
            times[name].append(seconds / steps[name])
            curves[name] = losses(log)

    print()
    print(f"{args.model}, dp=2 over veth at {args.rate:g} Mbit/s, SGD lr 0.05 m=0.9, "
          f"{args.windows} windows of {sequence} tokens each; medians of {args.repeats} runs")
    print(f"{'configuration':<30} {'steps':>5} {'ms/step meas':>12} {'sim':>8} "
          f"{'tokens/s meas':>13} {'sim':>8} {'vs sync':>8} {'final loss':>10}")
    base = None
    rows = {}
    for name in configs:
        per_step = statistics.median(times[name])
        tokens = args.windows * sequence / steps[name]
        rate_meas = tokens / per_step
        rate_sim = tokens / sims[name]
        if base is None:
            base = rate_meas
        tail = curves[name][-max(1, len(curves[name]) // 10):]
        final = sum(tail) / len(tail)
        rows[name] = (per_step, rate_meas, final)
        print(f"{LABELS[name]:<30} {steps[name]:>5} {per_step * 1e3:>12.2f} "
              f"{sims[name] * 1e3:>8.2f} {rate_meas:>13.0f} {rate_sim:>8.0f} "
              f"{rate_meas / base:>7.2f}x {final:>10.4f}")
    print("(final loss: mean over the last 10% of the steps, the same windows for "
          "every configuration)")
    if args.svg:
        plotted = []
        for name in configs:
            per_step = rows[name][0]
            c = curves[name]
            smooth = [sum(c[max(0, i - 4):i + 1]) / len(c[max(0, i - 4):i + 1])
                      for i in range(len(c))]
            plotted.append((LABELS[name],
                            [((i + 1) * per_step, v) for i, v in enumerate(smooth)]))
        svg(args.svg, plotted,
            f"{args.model}, dp=2 over a {args.rate:g} Mbit/s link: loss against time")
        print(f"train.py: wrote {args.svg}")


if __name__ == "__main__":
    main()
