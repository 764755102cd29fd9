#!/usr/bin/env python3
"""Data-parallel training on CoCoD-SGD's cluster, simulated: time per step
of every way Braid trains with dp, and time to a loss.

    bench/sim_training.py [--build build] [--work DIR] [--ranks 16]
        [--batch 4] [--sequence 512] [--hw bench/profiles/gtx1080ti-ib56.json]
        [--configs sync,buckets,zero1,cocod2,cocod4,cocod8,accumulate2,acco1,acco-auto]
        [--mpirun CMD] [--cpu-ranks 2] [--cpu-steps 240] [--no-cpu]

Time per step: a GPT-2-small-shaped model (12 layers, hidden 768, 12 heads,
vocabulary 50257, written by cpu_vs_onnxruntime.py's generator with random
weights, not committed), `--batch` sequences of `--sequence` tokens per GPU
and step, AdamW, compiled by braidc for `--ranks` data-parallel GPUs and
simulated (`braid-run --backend sim`) on `--hw`: by default the cluster of
CoCoD-SGD's paper, 6 nodes of 3 GTX 1080 Ti joined by 56 Gb/s InfiniBand
(bench/profiles/gtx1080ti-ib56.json). A step is ranks x batch sequences for
every configuration (ACCO and accumulate: a micro-batch).

  sync          --overlap none: the gradients' all-reduces where the update
                reads them
  buckets       the default: gradient buckets in backward order, scheduled
  zero1         --zero 1: reduce-scatter, update on this rank's shard,
                all-gather (scheduled)
  zero3         --zero 3: parameters sharded too, gathered before use with
                braid-schedule's default prefetch window (auto)
  zero3-all     the same, every gather issued as soon as its shard exists
                (--prefetch all)
  zero3-2streams the same with the gathers on a second communication
                stream (--comm-streams 2), apart from the reduce-scatters
  zero3-memNM   --prefetch all under --memory-limit N MiB: the largest
                window whose arena fits
  cocodK        --algorithm cocod-sgd=K (different math: local steps)
  accumulateN   --algorithm accumulate=N: ZeRO-1 with N micro-batches per
                optimizer step (ACCO's baseline)
  accoM         --algorithm acco=M; acco-auto lets the cost model pick M
                (and adds accumulate=2M, its baseline, if missing)
  accoM:N       --algorithm acco=M:N: a run-time count, M to N
                micro-batches a round, the ones past M run while the
                round's communication is in flight (decided per rank in the
                simulation; no time to a loss: the count is the cluster's)

Time to a loss: the simulated time per step times the steps each
configuration needs to reach a loss, measured on this CPU (`--cpu-ranks`
MPI ranks training the example GPT-2, each rank 2 sequences per step, AdamW
lr 1e-3, on examples/data/gpl3.bin): sync, buckets and zero1 are exact
rewrites of one synchronous step, measured once as accumulate=1; the target
is the lowest loss (trailing mean of 20 steps) the synchronous run reaches
by `--target-at` (0.4) of `--cpu-steps`. The dynamics come from a small model on few ranks, the times
from the cluster: a combination, said as such where the numbers go
(docs/results.md).

Heterogeneous workers (`--slow F`, default 1.5): every plan simulated again
with rank 0's kernels F times as long (`braid-run --rank-speeds`). A plan
that gives every rank the same work waits for the slow rank at every
collective; the authors of ACCO and CoCoD-SGD absorb a slow worker by
letting the fast ones do more, which acco=M:N does (the simulator runs every
rank and each decides its optional micro-batches). A second table compares
the tokens a second each configuration trains with and without the slow
rank. Nothing is asserted; prints tables.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHO = "sim_training"
sys.path.insert(0, os.path.join(ROOT, "bench"))


# Open MPI refuses to start as root (this machine's user) without these.
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def fail(message):
    sys.exit(f"{WHO}: {message}")


def run(command, what, env=None):
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        fail(f"{what} failed ({result.returncode}):\n"
             f"{(result.stderr or result.stdout)[-3000:]}")
    return result.stdout + result.stderr


def flags_of(name):
    """braidc flags after --parallel dp=P, and whether the model holds the
    whole step's batch (ranks x batch) or one rank's."""
    if name == "sync":
        return ["--overlap", "none"], True
    if name == "buckets":
        return [], True
    if name == "zero1":
        return ["--zero", "1"], True
    if name == "zero3":
        return ["--zero", "3"], True
    if name == "zero3-all":
        return ["--zero", "3", "--prefetch", "all"], True
    if name == "zero3-2streams":
        return ["--zero", "3", "--comm-streams", "2"], True
    m = re.fullmatch(r"zero3-mem(\d+)M", name)
    if m:
        return ["--zero", "3", "--prefetch", "all", "--memory-limit",
                f"{m.group(1)}MiB"], True
    m = re.fullmatch(r"cocod(\d+)", name)
    if m:
        return ["--algorithm", f"cocod-sgd={m.group(1)}"], False
    m = re.fullmatch(r"accumulate(\d+)", name)
    if m:
        return ["--algorithm", f"accumulate={m.group(1)}"], False
    m = re.fullmatch(r"acco(\d+):(\d+)", name)
    if m:
        return ["--algorithm", f"acco={m.group(1)}:{m.group(2)}"], False
    m = re.fullmatch(r"acco(\d+|-auto)", name)
    if m:
        count = "auto" if m.group(1) == "-auto" else m.group(1)
        return ["--algorithm", f"acco={count}"], False
    fail(f"unknown configuration '{name}'")


def summary(text):
    def ms(label):
        m = re.search(rf"{label}\s+([0-9.]+) (s|ms|us)", text)
        if not m:
            fail(f"no '{label}' in:\n{text}")
        return float(m.group(1)) * {"s": 1e3, "ms": 1, "us": 1e-3}[m.group(2)]
    calls = re.search(r"one call of (\d+) training steps", text)
    peak = re.search(r"peak memory per rank \(arena\)\s+(\d+) bytes", text)
    if not peak:
        fail(f"no peak memory in:\n{text}")
    # A run-time count: the optional micro-batches each rank ran
    # ("3 of 4 on rank 0; 4 of 4 on ranks 1-15 (dynamic)").
    groups = re.search(r"optional groups run\s+(.*) \((?:dynamic|all|none|policies per rank)\)",
                       text)
    ran = None
    if groups:
        ran = 0
        for part in groups.group(1).split("; "):
            m = re.fullmatch(r"(\d+) of (\d+) on (every rank|ranks? ([0-9,-]+))", part)
            if not m:
                fail(f"cannot read the optional groups in '{groups.group(0)}'")
            if m.group(3) == "every rank":
                ran = None  # one rank stood for all: counted by the caller
                ran_each = int(m.group(1))
                break
            for item in m.group(4).split(","):
                first, _, last = item.partition("-")
                ran += int(m.group(1)) * (int(last or first) - int(first) + 1)
        else:
            ran_each = None
    return {"peak": int(peak.group(1)), "makespan": ms("makespan"),
            "groups_run": ran, "groups_run_each": ran_each if groups else None,
            "compute": ms(r"compute \(sum of isolated kernels\)"),
            "communication": ms(r"communication \(sum of isolated\)"),
            "exposed": ms("exposed communication"),
            "steps": int(calls.group(1)) if calls else 1}


def simulate(args, tools, models, name):
    flags, whole = flags_of(name)
    plan = os.path.join(args.work, f"{name}.bplan")
    started = time.time()
    out = run([tools["braidc"], models[whole], "--train", "--optimizer", "adamw",
               "--lr", "6e-4", "--parallel", f"dp={args.ranks}", "--hw", args.hw,
               "--weights", "/dev/null", "--progress=false", "-o", plan] + flags,
              f"braidc ({name})")
    chosen = re.search(r"micro auto = (\d+)", out)
    count = re.fullmatch(r"acco(\d+):(\d+)", name)
    result = summary(run([tools["braid-run"], plan, "--backend", "sim", "--hw", args.hw],
                         f"simulating {name}"))
    if args.slow:
        # Heterogeneous workers: rank 0 slower by --slow, the others as
        # profiled.
        speeds = ",".join([str(args.slow)] + ["1"] * (args.ranks - 1))
        result["slow"] = summary(run(
            [tools["braid-run"], plan, "--backend", "sim", "--hw", args.hw,
             "--rank-speeds", speeds], f"simulating {name} with a slow rank"))
    result["chosen"] = int(chosen.group(1)) if chosen else None
    result["seconds"] = time.time() - started
    # Micro-batches (of `--batch` sequences) trained a call, over the ranks:
    # every slot of a fixed plan; with a run-time count, each rank's M a
    # round (two rounds a call) plus the optional ones it ran.
    for r in [result] + ([result["slow"]] if args.slow else []):
        if count:
            ran = r["groups_run"]
            if ran is None:
                ran = r["groups_run_each"] * args.ranks
            r["micro"] = 2 * int(count.group(1)) * args.ranks + ran
        else:
            r["micro"] = result["steps"] * args.ranks
    return result


def cpu_curves(args, tools, names, results):
    """Loss per step of each configuration's math on the example GPT-2."""
    model = os.path.join(ROOT, "examples", "models", "gpt2", "model.onnx")
    data = os.path.join(ROOT, "examples", "data", "gpl3.bin")
    curves = {}
    for name in names:
        flags, whole = flags_of(name)
        if whole or re.fullmatch(r"acco\d+:\d+", name):
            continue  # the synchronous math: measured as accumulate=1; a
            # run-time count is the cluster's, not this CPU's
        if name == "acco-auto":
            # The same math as the cluster's plan: the M chosen there.
            flags = ["--algorithm", f"acco={results[name]['chosen']}"]
        count = int(flags[1].split("=")[1])
        per_call = 2 * count if flags[1].startswith("acco=") else count
        plan = os.path.join(args.work, f"cpu-{name}.bplan")
        log = os.path.join(args.work, f"cpu-{name}.csv")
        run([tools["braidc"], model, "--train", "--optimizer", "adamw", "--lr", "1e-3",
             "--parallel", f"dp={args.cpu_ranks}", "--progress=false", "-o", plan] + flags,
            f"braidc {name} (CPU run)")
        steps = args.cpu_steps // per_call * per_call
        run(args.mpirun.split() + ["-n", str(args.cpu_ranks), tools["braid-run"], plan,
                                   "--steps", str(steps), "--data", data,
                                   "--loss-log", log], f"training {name} on the CPU",
            env=MPI_ENV)
        with open(log) as f:
            curves[name] = [float(line.split(",")[1]) for line in f.readlines()[1:]]
        print(f"{WHO}: {name} on the CPU: {steps} steps, last 10 "
              f"{sum(curves[name][-10:]) / 10:.4f}", flush=True)
    return curves


SMOOTH = 20  # steps in the trailing mean the target and the crossings use


def steps_to(curve, target):
    for i in range(SMOOTH - 1, len(curve)):
        if sum(curve[i - SMOOTH + 1:i + 1]) / SMOOTH <= target:
            return i + 1
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "braid-sim-training"))
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--sequence", type=int, default=512)
    p.add_argument("--hw", default=os.path.join(ROOT, "bench", "profiles", "gtx1080ti-ib56.json"))
    p.add_argument("--configs", default="sync,buckets,zero1,cocod2,cocod4,cocod8,"
                                        "accumulate2,acco1,acco-auto")
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--cpu-ranks", type=int, default=2)
    p.add_argument("--cpu-steps", type=int, default=240)
    p.add_argument("--target-at", type=float, default=0.4,
                   help="the target loss: synchronous training's at this "
                        "fraction of --cpu-steps")
    p.add_argument("--no-cpu", action="store_true", help="time per step only")
    p.add_argument("--slow", type=float, default=1.5,
                   help="also simulate every plan with one rank's kernels this "
                        "many times slower (0: not)")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    tools = {n: os.path.join(args.build, "bin", n) for n in ("braidc", "braid-run")}
    for path in tools.values():
        if not os.access(path, os.X_OK):
            fail(f"{path} not found (build the project first)")
    names = args.configs.split(",")
    for name in names:
        flags_of(name)

    import cpu_vs_onnxruntime as generator
    models = {}
    for whole, batch in ((True, args.ranks * args.batch), (False, args.batch)):
        path = os.path.join(args.work, f"gpt2-small-b{batch}-s{args.sequence}.onnx")
        if not os.path.exists(path):
            print(f"{WHO}: writing {os.path.basename(path)} (GPT-2 small shapes, "
                  f"random weights)", flush=True)
            generator.decoder_onnx(path, "gpt2", 12, 768, 12, 12, 3072, 50257,
                                   args.sequence, batch=batch)
        models[whole] = path

    results = {}
    queue = list(names)
    while queue:
        name = queue.pop(0)
        results[name] = simulate(args, tools, models, name)
        r = results[name]
        print(f"{WHO}: {name}: {r['makespan'] / (r['micro'] / args.ranks):.1f} ms a "
              f"step simulated ({r['steps']} steps a call, {r['micro'] / args.ranks:g} "
              f"run; compiled and simulated in "
              f"{r['seconds']:.0f} s)", flush=True)
        if name == "acco-auto" and r["chosen"]:
            base = f"accumulate{2 * r['chosen']}"
            if base not in results and base not in queue:
                queue.append(base)
                names.append(base)

    curves = {} if args.no_cpu else cpu_curves(args, tools, names + (
        [] if "accumulate1" in names else ["accumulate1"]), results)

    tokens = args.ranks * args.batch * args.sequence
    print()
    print(f"GPT-2 small shapes, dp={args.ranks} on {os.path.basename(args.hw)}, "
          f"{args.batch} x {args.sequence} tokens per GPU and step ({tokens} a step), "
          f"AdamW; simulated")
    base = results[names[0]]["makespan"] / (results[names[0]]["micro"] / args.ranks)
    target = None
    if curves:
        sync = curves["accumulate1"]
        at = max(SMOOTH, int(len(sync) * args.target_at))
        target = min(sum(sync[i - SMOOTH:i]) / SMOOTH for i in range(SMOOTH, at + 1))
        print(f"time to loss {target:.4f}: the lowest loss (mean of {SMOOTH} steps) "
              f"synchronous training reaches by step {at} on the CPU "
              f"({args.cpu_ranks} ranks, example GPT-2, each rank 2 sequences a "
              f"step), in steps measured there x the time per step here")
    slow = f"one rank {args.slow:g}x" if args.slow else ""
    print(f"{'configuration':<16} {'ms/step':>9} {'vs ' + names[0]:>9} {'exposed comm':>12} "
          f"{'compute':>9} {'comm':>9} {'peak MiB':>9} {'steps to loss':>13} "
          f"{'time to loss':>12} {slow:>15}")
    for name in names:
        r = results[name]
        # A step: a micro-batch on every rank. A run-time count trains fewer
        # than its slots: its time per micro-batch trained.
        ran = r["micro"] / args.ranks
        per_step = r["makespan"] / ran
        label = name + (f" (M={r['chosen']})" if r["chosen"] else "")
        reach = when = ""
        if curves and (flags_of(name)[1] or name in curves):
            curve = curves["accumulate1" if flags_of(name)[1] else name]
            n = steps_to(curve, target)
            reach = str(n) if n else f"> {len(curve)}"
            when = f"{n * per_step / 1e3:.2f} s" if n else "-"
        hetero = ""
        if args.slow:
            slowed = r["slow"]["makespan"] / (r["slow"]["micro"] / args.ranks)
            hetero = f"{slowed:.1f} ({slowed / per_step:.2f}x)"
        print(f"{label:<16} {per_step:>9.1f} {base / per_step:>8.2f}x "
              f"{r['exposed'] / ran:>12.1f} {r['compute'] / ran:>9.1f} "
              f"{r['communication'] / ran:>9.1f} {r['peak'] / 2**20:>9.0f} "
              f"{reach:>13} {when:>12} {hetero:>15}")
    print("(per step: the simulated makespan of one call over its steps, for a "
          "run-time count over the micro-batches its ranks ran (a step: one on "
          "every rank); compute and "
          "comm: sums of isolated times; peak: the plan's arena per rank, all it "
          "needs at once" + (f"; one rank {args.slow:g}x: ms/step with "
          f"rank 0's kernels {args.slow:g}x as long (braid-run --rank-speeds), and "
          "the ratio to all ranks equal" if args.slow else "") + ")")
    if not args.slow:
        return
    sequence_tokens = args.batch * args.sequence
    print()
    print(f"Heterogeneous workers: rank 0's kernels {args.slow:g}x as long; tokens "
          f"trained a second (micro-batches of {args.batch} x {args.sequence} "
          f"tokens over the {args.ranks} ranks, a call)")
    print(f"{'configuration':<16} {'ms/call':>9} {'slow: ms/call':>13} {'micro':>6} "
          f"{'slow: micro':>11} {'ktok/s':>8} {'slow: ktok/s':>12} {'kept':>6}")
    for name in names:
        r, slow = results[name], results[name]["slow"]
        rate = r["micro"] * sequence_tokens / r["makespan"]
        slow_rate = slow["micro"] * sequence_tokens / slow["makespan"]
        print(f"{name:<16} {r['makespan']:>9.1f} {slow['makespan']:>13.1f} "
              f"{r['micro']:>6} {slow['micro']:>11} {rate:>8.1f} {slow_rate:>12.1f} "
              f"{slow_rate / rate:>5.2f}x")
    print("(micro: micro-batches trained over the ranks in one call; kept: the "
          "slow cluster's tokens a second over the equal one's)")


if __name__ == "__main__":
    main()
