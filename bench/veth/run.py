#!/usr/bin/env python3
"""Measures two tp=2 plans over a rate-limited veth link and simulates them.

Rank 0 runs in network namespace braid0 and rank 1 in braid1; the two are
joined only by a veth pair shaped with tbf (setup.sh), and Open MPI is
restricted to TCP over that pair, so every collective byte crosses the
rate-limited link. The plans run alternately (A, B, A, B, ...), each
`--repeats` times, each time with `braid-run --repeat ITERS` (the first
iteration warms up and is dropped). The time of one iteration is the larger
of the two ranks' executor totals (braid-run's "totals over N runs (ms,
slowest rank)", printed by rank 0; process start and weight loading are not
included).

The simulator's prediction for the same link comes from a hardware profile
written here: the link is "2 nodes x 1 GPU" joined by an ethernet NIC with the
configured rate, the TCP goodput measured by tcpbench.py as its efficiency and
the latency measured with a chain of tiny all_reduces over the same MPI path;
the "GPU" is one CPU core, calibrated with braid-run's own CPU kernels (a
large and a small matmul, gelu, add and a tiny add, two single-rank processes
at once as the two ranks share the two cores; FLOPs and bytes per kernel from
the simulator itself). Then `braid-run --backend sim --hw PROFILE` for each
plan.

Launches during which other processes used more than --max-other of the
CPUs are discarded and rerun (the machine may be shared); medians are over
the clean launches. See bench/veth/README.md.

usage: run.py --rate MBIT --baseline A.bplan --overlapped B.bplan
              [--inputs DIR] [--expected DIR] [--repeats 5] [--iters 3]
              [--work DIR] [--no-setup] [--recalibrate] [--build BUILD]
              [--mpi-allreduce ring|default] [--wait-idle S]
              [--max-other 0.05] [--retries 3]
Root only (ip netns, tc). Standard library only: runs with the system python3.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NS0, NS1 = "braid0", "braid1"
IF0, IF1 = "veth-b0", "veth-b1"
SUBNET = "10.77.0.0/24"
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           # One BLAS thread per rank: the two ranks share the two cores.
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def die(message):
    sys.exit(f"run.py: {message}")


def run(command, what, timeout=900, env=None):
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=timeout, env=env)
    if result.returncode != 0:
        die(f"{what} failed ({result.returncode}): {' '.join(command)}\n"
            f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result.stdout


def environment():
    env = dict(os.environ)
    env.update(MPI_ENV)
    return env


# --------------------------------------------------------------------------
# Small files: .npy inputs and plans compiled from braid IR
# --------------------------------------------------------------------------

def write_npy(path, shape, rng, scale=1.0):
    """A float32 .npy of uniform values with variance scale^2 (stdlib only)."""
    count = math.prod(shape)
    a = math.sqrt(3) * scale
    data = struct.pack(f"<{count}f", *(rng.uniform(-a, a) for _ in range(count)))
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {tuple(shape)}, }}"
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    with open(path, "wb") as out:
        out.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        out.write(header.encode() + data)


def compile_ir(tools, text, stem):
    with open(stem + ".mlir", "w") as out:
        out.write(text)
    run([tools["braid-opt"], stem + ".mlir", "--braid-to-exec=function=main",
         "-o", stem + ".exec.mlir"], "braid-opt")
    run([tools["braid-translate"], "--exec-to-plan", stem + ".exec.mlir",
         "-o", stem + ".bplan"], "braid-translate")
    return stem + ".bplan"


def ty(shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def calls_ir(op, shapes, calls, mesh=False, chain=False):
    """func @main applying `op` `calls` times. chain: each call's first
    operand is the previous result; else every call reads the inputs (the
    values, and so the speed of value-dependent kernels such as tanh, stay
    those of the inputs) and all results are returned (nothing is dead)."""
    lines = ["braid.mesh @world(tp = 2)"] if mesh else []
    args = ", ".join(f"%in{i}: {ty(s)} {{braid.name = \"in{i}\"}}"
                     for i, s in enumerate(shapes["inputs"]))
    out = ty(shapes["out"])
    results = [out] if chain else [out] * calls
    lines.append(f"func.func @main({args}) -> ({', '.join(results)}) {{")
    cur = "in0"
    for c in range(calls):
        lines.append(f"  %v{c} = " + op(cur))
        if chain:
            cur = f"v{c}"
    returned = [f"%{cur}"] if chain else [f"%v{c}" for c in range(calls)]
    lines.append(f"  return {', '.join(returned)} : {', '.join(results)}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Output parsing
# --------------------------------------------------------------------------

UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def parse_time(text):
    number, unit = text.split()
    return float(number) * UNITS[unit]


def sim_summary(text):
    """makespan, compute, communication and per-op isolated time per call."""
    def field(label):
        m = re.search(rf"{label}\s+([0-9.]+ (?:s|ms|us|ns))", text)
        if not m:
            die(f"no '{label}' in the simulator's summary:\n{text}")
        return parse_time(m.group(1))
    ops = {}
    for m in re.finditer(r"^\s+(\S+) \[(\w+)\]: ([0-9.]+ \w+), ([0-9.]+ \w+) in (\d+) calls",
                         text, re.M):
        ops[m.group(1)] = parse_time(m.group(4)) / int(m.group(5))
    return {"makespan": field("makespan"),
            "compute": field(r"compute \(sum of isolated kernels\)"),
            "comm": field(r"communication \(sum of isolated\)"),
            "ops": ops}


def run_summary(text):
    """braid-run's CPU output (any --tag-output prefixes): per rank, the
    iteration totals (s) and the per-op times (s per call) of the last one."""
    ranks = {}
    for line in text.splitlines():
        m = re.match(r"^\[\d+,(\d+)\]<stdout>:(.*)$", line)
        rank, body = (int(m.group(1)), m.group(2)) if m else (0, line)
        entry = ranks.setdefault(rank, {"totals": [], "ops": {}, "pass": None})
        if (t := re.match(r"\s*rank \d+: total ([0-9.]+) ms", body)):
            entry["last"] = float(t.group(1)) * 1e-3
        elif (t := re.match(r"\s*totals over \d+ runs \(ms(?:, slowest rank)?\):(.*)", body)):
            entry["totals"] = [float(v) * 1e-3 for v in t.group(1).split()]
        elif (t := re.match(r"\s+(\S+): ([0-9.]+) ms in (\d+) calls", body)):
            entry["ops"][t.group(1)] = float(t.group(2)) * 1e-3 / int(t.group(3))
        elif re.search(r"\] (PASS|FAIL)$|^(PASS|FAIL)$", body.strip()):
            entry["pass"] = body.strip().endswith("PASS")
    for entry in ranks.values():
        if not entry["totals"] and "last" in entry:
            entry["totals"] = [entry["last"]]
    return ranks


# --------------------------------------------------------------------------
# The link
# --------------------------------------------------------------------------

def link_exists():
    names = subprocess.run(["ip", "netns", "list"], capture_output=True,
                           text=True).stdout.split()
    return NS0 in names and NS1 in names


def tbf_rate():
    """The tbf rate configured on veth-b0, in Mbit/s, or None."""
    text = subprocess.run(["tc", "-n", NS0, "qdisc", "show", "dev", IF0],
                          capture_output=True, text=True).stdout
    m = re.search(r"tbf .*rate (\d+(?:\.\d+)?)([KMG]?)bit", text)
    if not m:
        return None
    return float(m.group(1)) * {"": 1e-6, "K": 1e-3, "M": 1, "G": 1e3}[m.group(2)]


def veth_bytes():
    """Bytes sent by rank 0's and by rank 1's end of the veth pair."""
    out = []
    for ns, dev in ((NS0, IF0), (NS1, IF1)):
        text = run(["ip", "-n", ns, "-s", "-j", "link", "show", dev], "ip link")
        out.append(json.loads(text)[0]["stats64"]["tx"]["bytes"])
    return out


def proc_table():
    """pid -> (parent pid, session id, CPU seconds) of every process now."""
    hz = os.sysconf("SC_CLK_TCK")
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        rest = text[text.rindex(")") + 2:].split()
        # After "pid (comm) ": state ppid pgrp session ... utime stime.
        table[int(name)] = (int(rest[1]), int(rest[3]),
                            (int(rest[11]) + int(rest[12])) / hz)
    return table


def machine_busy():
    """CPU seconds the whole machine has spent busy (user, nice, system,
    irq, softirq) since boot."""
    with open("/proc/stat") as stat:
        f = [int(v) for v in stat.readline().split()[1:8]]
    return (f[0] + f[1] + f[2] + f[5] + f[6]) / os.sysconf("SC_CLK_TCK")


class CpuGroup:
    """A CPU-accounting cgroup for our launches (cgroup v2 cpu.stat, or v1
    cpuacct), so their CPU time counts even for processes that end between
    two looks (orted and the ranks are not reaped by us). None if neither
    hierarchy can be written."""

    @staticmethod
    def make():
        name = f"braid-veth-{os.getpid()}"
        for root, usage in (("/sys/fs/cgroup", "cpu.stat"),
                            ("/sys/fs/cgroup/unified", "cpu.stat"),
                            ("/sys/fs/cgroup/cpuacct", "cpuacct.usage")):
            if not os.path.exists(os.path.join(root, usage)) and \
                    not os.path.exists(os.path.join(root, "cgroup.procs")):
                continue
            path = os.path.join(root, name)
            try:
                os.makedirs(path, exist_ok=True)
                group = CpuGroup(path, usage)
                group.usage()
                return group
            except OSError:
                try:
                    os.rmdir(path)
                except OSError:
                    pass
        return None

    def __init__(self, path, usage_file):
        self.path, self.usage_file = path, usage_file

    def usage(self):
        """CPU seconds used by the group's processes, ended ones included."""
        with open(os.path.join(self.path, self.usage_file)) as f:
            text = f.read()
        if self.usage_file == "cpu.stat":
            return int(re.search(r"usage_usec (\d+)", text).group(1)) * 1e-6
        return int(text) * 1e-9

    def join(self):
        """Moves the calling process (a child, before exec) into the group."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)


class ForeignCpu:
    """The share of the machine's CPUs that processes other than ours used
    while a launch ran. With a cgroup (CpuGroup): machine busy time minus
    the launch's group and this process; kernel work such as this run's
    network soft interrupts counts as others' (~1% at 200 Mbit/s). Without
    one: samples /proc every `period` s in a thread, leaving out this
    process, its descendants, the sessions in `sessions` (launches are
    started in their own session) and kernel threads; a process that starts
    and ends between two samples is missed."""

    group = None  # CpuGroup, set up in main()

    def __init__(self, period=0.5):
        import threading
        self.period = period
        self.first, self.last = {}, {}
        self.ours = {os.getpid()}
        self.sessions = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def preexec(self):
        """For Popen(preexec_fn=...): puts the launch into the group."""
        if self.group:
            self.group.join()

    def sample(self):
        table = proc_table()
        ours = self.ours
        for pid in sorted(table):
            chain, p = [], pid
            while p in table and p not in ours and p > 1 and len(chain) < 64:
                chain.append(p)
                p = table[p][0]
            if p in ours:
                ours.update(chain)
        for pid, (parent, session, cpu) in table.items():
            if session in self.sessions:
                ours.add(pid)
            if pid in ours or parent == 2 or pid == 2:
                continue
            self.first.setdefault(pid, 0.0 if self.started else cpu)
            self.last[pid] = cpu

    def loop(self):
        while not self.stop.wait(self.period):
            self.sample()

    def counters(self):
        mine = os.times()
        return (machine_busy(), self.group.usage(), mine.user + mine.system)

    def __enter__(self):
        if self.group:
            self.start_counters = self.counters()
        else:
            self.started = False
            self.sample()
            self.started = True
            self.thread.start()
        self.begin = time.monotonic()
        return self

    def __exit__(self, *exc):
        if self.group:
            # Let the last orphans of the launch finish their accounting.
            time.sleep(0.2)
            self.end_counters = self.counters()
        else:
            self.stop.set()
            self.thread.join()
            self.sample()
        self.wall = time.monotonic() - self.begin

    def share(self):
        if self.group:
            busy, group, mine = (b - a for a, b in zip(self.start_counters,
                                                       self.end_counters))
            used = max(0.0, busy - group - mine)
        else:
            used = sum(self.last[p] - self.first[p] for p in self.last)
        return used / (self.wall * (os.cpu_count() or 1))


def launch(command, probe, timeout=1800):
    """Runs a launch in its own session, which `probe` counts as ours."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=environment(), start_new_session=True,
                            preexec_fn=probe.preexec)
    probe.sessions.add(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # mpirun stops its orteds and ranks
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        err += f"\nrun.py: timed out after {timeout} s"
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def wait_idle(limit):
    """Waits up to `limit` seconds for a second in which other processes use
    under 5% of the CPUs; returns the share seen last."""
    deadline = time.monotonic() + limit
    while True:
        with ForeignCpu(period=1.0) as probe:
            time.sleep(1)
        if probe.share() < 0.05 or time.monotonic() >= deadline:
            return probe.share()


def mpirun_command(tools, algorithm, np_args):
    command = ["ip", "netns", "exec", NS0, "mpirun", "--tag-output",
               "--host", f"{NS0},{NS1}", "-n", "2", "--map-by", "node",
               # Each namespace looks like a whole node to Open MPI, so its
               # default binding would put both ranks on core 0.
               "--bind-to", "none",
               "--mca", "plm_rsh_agent", os.path.join(HERE, "netns-agent.sh"),
               "--mca", "oob_tcp_if_include", SUBNET,
               "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
               "--mca", "btl_tcp_if_include", SUBNET]
    if algorithm == "ring":
        # Braid's collectives are nonblocking (libnbc); for fewer than 4
        # ranks libnbc's iallreduce is a binomial reduce then broadcast,
        # which uses one direction of the link at a time (2 S / B for 2
        # ranks). The ring sends S/2 each way twice at once (S / B), as
        # NCCL's ring and the simulator's model do.
        command += ["--mca", "coll_libnbc_iallreduce_algorithm", "1"]
    for key in MPI_ENV:
        command += ["-x", key]
    return command + [tools["braid-run"]] + np_args


# --------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------

def reference_profile(path, flops_per_s, bytes_per_s):
    """A profile whose kernel times are FLOPs / flops_per_s or bytes /
    bytes_per_s, with no overhead: simulating a plan on it reads back the
    compiler's FLOP and byte counts."""
    profile = {
        "name": "reference", "description": "unit rates for reading FLOPs and bytes",
        "gpu": {"model": "unit", "sm_count": 1, "memory_gb": 1,
                "memory_bandwidth_gb_per_s": bytes_per_s / 1e9,
                "kernel_overhead_us": 0,
                "matrix_tflops": {"f32": flops_per_s / 1e12},
                "vector_tflops": {"f32": flops_per_s / 1e12}},
        "efficiency": {"gemm": {"max": 1, "half_gflop": 0},
                       "attention": {"max": 1, "half_gflop": 0},
                       "memory": {"max": 1, "half_mb": 0}, "vector": {"max": 1}},
        "node": {"gpus_per_node": 2,
                 "intra": {"type": "pcie", "bandwidth_gb_per_s": 1,
                           "latency_us": 0, "efficiency": 1},
                 "inter": {"type": "ethernet", "bandwidth_gb_per_s": 1,
                           "latency_us": 0, "efficiency": 1, "nics_per_node": 1}},
        "contention": {"comm_sms": 0, "matrix_slowdown": 1,
                       "memory_slowdown": 1, "comm_slowdown": 1},
        "sources": {"gpu": "unit rates (run.py reference profile)"}}
    with open(path, "w") as out:
        json.dump(profile, out, indent=1)
    return path


CALIBRATION = {
    # name: (op text for one call, shapes, calls)
    "gemm": (lambda v: f"braid.matmul %{v}, %in1 : ({ty([1024, 1024])}, {ty([1024, 1024])}) -> {ty([1024, 1024])}",
             {"inputs": [[1024, 1024], [1024, 1024]], "out": [1024, 1024]}, 4),
    "gemm_small": (lambda v: f"braid.matmul %{v}, %in1 : ({ty([128, 256])}, {ty([256, 256])}) -> {ty([128, 256])}",
                   {"inputs": [[128, 256], [256, 256]], "out": [128, 256]}, 40),
    "gelu": (lambda v: f"braid.gelu %{v} tanh : {ty([1024, 1024])}",
             {"inputs": [[1024, 1024]], "out": [1024, 1024]}, 4),
    "add": (lambda v: f"braid.add %{v}, %in1 : ({ty([2048, 2048])}, {ty([2048, 2048])}) -> {ty([2048, 2048])}",
            {"inputs": [[2048, 2048], [2048, 2048]], "out": [2048, 2048]}, 4),
    "tiny": (lambda v: f"braid.add %{v}, %in1 : ({ty([4, 4])}, {ty([4, 4])}) -> {ty([4, 4])}",
             {"inputs": [[4, 4], [4, 4]], "out": [4, 4]}, 100),
}


def calibrate_compute(tools, work, max_other=0.05, retries=3, wait=0):
    """Per-core rates of braid-run's CPU kernels, with both cores busy."""
    worst_other = 0.0
    rng = random.Random(5)
    cal = os.path.join(work, "calibration")
    os.makedirs(cal, exist_ok=True)
    ref_flops = reference_profile(os.path.join(cal, "ref-flops.json"), 1e12, 1e18)
    ref_bytes = reference_profile(os.path.join(cal, "ref-bytes.json"), 1e18, 1e9)
    result = {}
    for name, (op, shapes, calls) in CALIBRATION.items():
        stem = os.path.join(cal, name)
        plan = compile_ir(tools, calls_ir(op, shapes, calls), stem)
        inputs = []
        for i, shape in enumerate(shapes["inputs"]):
            path = f"{stem}.in{i}.npy"
            # Matmul operands scaled so products are ~N(0, 1), like the
            # gelu inputs of a transformer MLP.
            scale = 1 / math.sqrt(shape[0]) if (name.startswith("gemm") and i == 1) else 1
            write_npy(path, shape, rng, scale)
            inputs += ["--input", f"in{i}={path}"]
        flops = sim_summary(run([tools["braid-run"], plan, "--backend", "sim",
                                 "--hw", ref_flops], "simulate"))
        nbytes = sim_summary(run([tools["braid-run"], plan, "--backend", "sim",
                                  "--hw", ref_bytes], "simulate"))
        kind = "matmul" if name.startswith("gemm") else "add" if name in ("add", "tiny") else name
        # Two processes at once, as the two ranks of a tp=2 run: the two
        # cores of this VM slow each other down (a matmul on each runs at
        # ~60% of one alone). Each runs 12 iterations; the middle ones,
        # when both surely run, give the time per call.
        command = [tools["braid-run"], plan, "--repeat", "12"] + inputs
        for attempt in range(retries + 1):
            if wait > 0:
                wait_idle(wait)
            with ForeignCpu() as probe:
                procs = [subprocess.Popen(command, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True,
                                          env=environment(), start_new_session=True,
                                          preexec_fn=probe.preexec)
                         for _ in range(2)]
                probe.sessions.update(proc.pid for proc in procs)
                outs = [proc.communicate(timeout=300)[0] for proc in procs]
            if probe.share() <= max_other:
                break
            print(f"run.py: calibration of {name}: other processes used "
                  f"{probe.share():.0%} of the CPUs, again", flush=True)
        worst_other = max(worst_other, probe.share())
        per_call = []
        for proc, out in zip(procs, outs):
            if proc.returncode != 0:
                die(f"calibration run of {name} failed:\n{out}")
            summary = run_summary(out)[0]
            if name == "tiny":
                per_call.append(summary["ops"][kind])
            else:
                per_call.append(statistics.median(summary["totals"][3:-3]) / calls)
        result[name] = {"seconds": statistics.mean(per_call), "per_process": per_call,
                        "other_cpu": probe.share(),
                        "flops": flops["ops"][kind] * 1e12,
                        "bytes": nbytes["ops"][kind] * 1e9}
    overhead = result["tiny"]["seconds"]
    g, s = result["gemm"], result["gemm_small"]
    # t = overhead + (F + F_half) / P through the two matmul sizes.
    tg, ts = g["seconds"] - overhead, max(s["seconds"] - overhead, 1e-9)
    peak = (g["flops"] - s["flops"]) / max(tg - ts, 1e-9)
    half = max(0.0, ts * peak - s["flops"])
    gelu = result["gelu"]
    add = result["add"]
    return {
        "matrix_flops": peak, "gemm_half_flops": half,
        "vector_flops": gelu["flops"] / max(gelu["seconds"] - overhead, 1e-9),
        "memory_bandwidth": add["bytes"] / max(add["seconds"] - overhead, 1e-9),
        "kernel_overhead": overhead, "kernels": result,
        "cpu": cpu_model(), "date": time.strftime("%Y-%m-%d %H:%M"),
        "other_cpu": worst_other}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU"


def calibrate_latency(tools, work, algorithm, max_other=0.05, retries=3, wait=0):
    """alpha: half the time of an all_reduce of 16 bytes between the two
    namespaces (the simulator's ring and tree both give 2 alpha for 2 ranks):
    a chain of 200, the median over 8 iterations (the first dropped)."""
    stem = os.path.join(work, "calibration", "latency")
    calls = 200
    op = lambda v: f"braid.all_reduce %{v} on @world[\"tp\"] sum : {ty([4])}"
    plan = compile_ir(tools, calls_ir(op, {"inputs": [[4]], "out": [4]}, calls,
                                      mesh=True, chain=True), stem)
    write_npy(stem + ".in0.npy", [4], random.Random(1))
    command = mpirun_command(tools, algorithm, [plan, "--repeat", "9", "--input",
                                                f"in0={stem}.in0.npy"])
    for attempt in range(retries + 1):
        if wait > 0:
            wait_idle(wait)
        with ForeignCpu() as probe:
            result = launch(command, probe)
        if result.returncode != 0:
            die(f"latency run failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
        if probe.share() <= max_other:
            break
    summary = run_summary(result.stdout)
    # Rank 0 prints each run's total as its slowest rank's.
    totals = summary[0]["totals"]
    return statistics.median(totals[1:]) / calls / 2, probe.share()


def write_profile(path, rate, calibration, alpha, goodput):
    c = calibration
    efficiency = min(1.0, goodput / rate) if goodput else 0.95
    profile = {
        "name": f"veth-cpu-{rate:g}mbit",
        "description": (f"two ranks, one per network namespace, on a 2-core VM "
                        f"({c['cpu']}); a veth pair shaped by tbf at {rate:g} Mbit/s "
                        f"per direction; Open MPI TCP"),
        "gpu": {"model": f"one core of {c['cpu']} (braid-run CPU kernels)",
                "sm_count": 1, "memory_gb": 8,
                "memory_bandwidth_gb_per_s": c["memory_bandwidth"] / 1e9,
                "kernel_overhead_us": c["kernel_overhead"] * 1e6,
                "matrix_tflops": {t: c["matrix_flops"] / 1e12 for t in ("f32", "f16", "bf16")},
                "vector_tflops": {"f32": c["vector_flops"] / 1e12}},
        "efficiency": {"gemm": {"max": 1, "half_gflop": c["gemm_half_flops"] / 1e9},
                       "attention": {"max": 1, "half_gflop": c["gemm_half_flops"] / 1e9},
                       "memory": {"max": 1, "half_mb": 0},
                       "vector": {"max": 1}},
        "node": {"gpus_per_node": 1,
                 "intra": {"type": "pcie", "bandwidth_gb_per_s": 10,
                           "latency_us": 1, "efficiency": 1},
                 "inter": {"type": "ethernet", "nics_per_node": 1,
                           "bandwidth_gb_per_s": rate / 8e3,
                           "latency_us": alpha * 1e6,
                           "efficiency": round(efficiency, 4)}},
        "contention": {"comm_sms": 0, "matrix_slowdown": 1,
                       "memory_slowdown": 1, "comm_slowdown": 1},
        "sources": {
            "gpu": (f"bench/veth/run.py calibration {c['date']}: braid-run CPU kernels, "
                    "two single-rank processes at once, OPENBLAS_NUM_THREADS=1; "
                    "matrix peak and half_gflop from a 1024^3 and a 128x256x256 matmul, "
                    "vector peak from gelu (tanh) on 1M floats, memory bandwidth from "
                    "add on 2048^2 floats, kernel overhead from add on 4x4; FLOPs and "
                    "bytes as the simulator counts them. f16/bf16 matrix = f32 "
                    "(not measured)"),
            "efficiency": "1: the calibrated rates are achieved rates",
            "node.inter.bandwidth_gb_per_s": f"tbf rate {rate:g} Mbit/s (bench/veth/setup.sh)",
            "node.inter.efficiency": ("TCP goodput with both directions busy / tbf "
                                      "rate, tcpbench.py"),
            "node.inter.latency_us": ("half the time of a 16-byte all_reduce between "
                                      "the namespaces (Open MPI TCP, braid-run)"),
            "node.intra": "unused: one rank per node",
            "contention": "not modelled (1): CPU time of TCP and MPI polling not calibrated",
            "node.gpus_per_node": "one rank per namespace"}}
    with open(path, "w") as out:
        json.dump(profile, out, indent=1)
    return profile


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def fmt_ms(seconds):
    return f"{seconds * 1e3:9.1f}"


def prepare_link_and_profile(args, tools):
    """The link at --rate (setup.sh unless --no-setup), the CPU calibration
    (WORK/calibration.json, measured once unless --recalibrate) and the
    latency, written as the simulator's profile; returns (profile path,
    calibration, tcpbench's results, alpha, alpha's other-CPU share). Used
    by run.py and train.py."""
    # 1. The link.
    if not args.no_setup:
        env = dict(os.environ, BRAID_VETH_NO_BENCH="1")
        sys.stdout.write(run([os.path.join(HERE, "setup.sh"), f"{args.rate:g}"],
                             "setup.sh", env=env))
    elif not link_exists():
        die("no braid0/braid1 namespaces: run setup.sh RATE first or drop --no-setup")
    configured = tbf_rate()
    if configured is None or abs(configured - args.rate) > 1e-6 * max(1, args.rate):
        die(f"the tbf rate on {IF0} is {configured} Mbit/s, not {args.rate:g}")
    bench = json.loads(run([sys.executable, os.path.join(HERE, "tcpbench.py"), "--json",
                            "--rate", f"{args.rate:g}", "--seconds", "1"], "tcpbench"))
    # The ring all_reduce of 2 ranks sends both ways at once.
    goodput = bench["mbit_both"]

    # 2. Calibration and the profile.
    cal_path = os.path.join(args.work, "calibration.json")
    if args.recalibrate or not os.path.exists(cal_path):
        print("run.py: calibrating braid-run's CPU kernels (two processes at once) ...",
              flush=True)
        calibration = calibrate_compute(tools, args.work, args.max_other,
                                        args.retries, args.wait_idle)
        with open(cal_path, "w") as out:
            json.dump(calibration, out, indent=1)
    else:
        with open(cal_path) as f:
            calibration = json.load(f)
    alpha, alpha_other = calibrate_latency(tools, args.work, args.mpi_allreduce,
                                           args.max_other, args.retries, args.wait_idle)
    profile_path = os.path.join(args.work, f"veth-cpu-{args.rate:g}mbit.json")
    write_profile(profile_path, args.rate, calibration, alpha, goodput)

    return profile_path, calibration, bench, alpha, alpha_other


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, required=True, help="tbf rate, Mbit/s")
    parser.add_argument("--baseline", required=True, help="plan A (.bplan)")
    parser.add_argument("--overlapped", required=True, help="plan B (.bplan)")
    parser.add_argument("--inputs", help="input_N.pb for both plans")
    parser.add_argument("--expected", help="check outputs against DIR/output_N.pb")
    parser.add_argument("--atol", default="1e-4")
    parser.add_argument("--rtol", default="1e-3")
    parser.add_argument("--repeats", type=int, default=5,
                        help="mpirun launches per plan, alternating A, B")
    parser.add_argument("--iters", type=int, default=3,
                        help="braid-run --repeat per launch; the first is dropped")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "braid-veth"),
                        help="calibration, profile, results.json and each launch's "
                             "output (launches/PLAN-LAUNCH-ATTEMPT.txt) are kept here")
    parser.add_argument("--no-setup", action="store_true",
                        help="use the link as it is (its tbf rate must match --rate)")
    parser.add_argument("--recalibrate", action="store_true",
                        help="measure the CPU kernels again (else reuse WORK/calibration.json)")
    parser.add_argument("--mpi-allreduce", choices=("ring", "default"), default="ring")
    parser.add_argument("--max-other", type=float, default=0.05, metavar="F",
                        help="a launch during which other processes used more "
                             "than this share of the CPUs is discarded and "
                             "run again (default 0.05)")
    parser.add_argument("--retries", type=int, default=3,
                        help="how often one launch may be discarded (default 3)")
    parser.add_argument("--wait-idle", type=float, default=0, metavar="S",
                        help="before each launch, wait up to S seconds for the "
                             "other processes to leave the CPUs idle")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        die("needs root (ip netns, tc)")
    tools = {name: os.path.join(args.build, "bin", name)
             for name in ("braid-opt", "braid-translate", "braid-run")}
    for path in tools.values():
        if not os.access(path, os.X_OK):
            die(f"{path} not found")
    for plan in (args.baseline, args.overlapped):
        if not os.path.isfile(plan):
            die(f"{plan}: no such plan")
    if not shutil.which("mpirun"):
        die("mpirun not found (openmpi-bin)")
    os.makedirs(args.work, exist_ok=True)
    # A snapshot of the tools, so that a rebuild during the measurement can
    # neither break a launch nor give A and B different runtimes.
    snapshot = os.path.join(args.work, "bin")
    os.makedirs(snapshot, exist_ok=True)
    for name, path in tools.items():
        copy = os.path.join(snapshot, name)
        shutil.copy2(path, copy + ".tmp")
        os.replace(copy + ".tmp", copy)
        tools[name] = copy

    ForeignCpu.group = CpuGroup.make()
    if ForeignCpu.group:
        import atexit
        atexit.register(ForeignCpu.group.remove)
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"run.py: warning: load average {load:.2f} before starting; other "
              f"processes share the 2 cores with the ranks", file=sys.stderr)

    profile_path, calibration, bench, alpha, alpha_other = \
        prepare_link_and_profile(args, tools)

    # 3. Simulate.
    sims = {}
    for key, plan in (("A", args.baseline), ("B", args.overlapped)):
        sims[key] = sim_summary(run([tools["braid-run"], plan, "--backend", "sim",
                                     "--hw", profile_path], f"simulating {plan}"))

    # 4. Measure, alternating.
    extra = []
    if args.inputs:
        extra += ["--inputs", args.inputs]
    if args.expected:
        extra += ["--expected", args.expected, "--atol", args.atol, "--rtol", args.rtol]
    times = {"A": [], "B": []}
    sent = {"A": [], "B": []}
    others = {"A": [], "B": []}
    checks = {"A": True, "B": True}
    os.makedirs(os.path.join(args.work, "launches"), exist_ok=True)
    discarded = {"A": 0, "B": 0}
    launches = {"A": [], "B": []}
    for r in range(args.repeats):
        for key, plan in (("A", args.baseline), ("B", args.overlapped)):
            for attempt in range(args.retries + 1):
                if args.wait_idle > 0:
                    wait_idle(args.wait_idle)
                before = veth_bytes()
                command = mpirun_command(tools, args.mpi_allreduce,
                                         [plan, "--repeat", str(args.iters)] + extra)
                with ForeignCpu() as probe:
                    result = launch(command, probe)
                other = probe.share()
                after = veth_bytes()
                summary = run_summary(result.stdout)
                # Rank 0 prints each iteration's total as its slowest rank's.
                if result.returncode not in (0, 1) or 0 not in summary or \
                        len(summary[0]["totals"]) != args.iters:
                    die(f"{plan} failed ({result.returncode}):\n{result.stdout[-4000:]}"
                        f"{result.stderr[-4000:]}")
                per_iter = summary[0]["totals"]
                with open(os.path.join(args.work, "launches",
                                       f"{key}-{r + 1}-{attempt + 1}.txt"), "w") as log:
                    log.write(result.stdout + result.stderr)
                line = (f"run.py: {key} launch {r + 1}/{args.repeats}: "
                        + " ".join(f"{t * 1e3:.1f}" for t in per_iter) + " ms"
                        + f" (veth {(after[0] - before[0]) / args.iters / 1e6:.1f}/"
                          f"{(after[1] - before[1]) / args.iters / 1e6:.1f} MB per iteration"
                          f" 0->1/1->0; other processes {other:.0%} of the CPUs)")
                if other > args.max_other and attempt < args.retries:
                    print(line + ": discarded, again", flush=True)
                    discarded[key] += 1
                    continue
                print(line, flush=True)
                break
            others[key].append(other)
            if args.expected:
                checks[key] &= all(v["pass"] for v in summary.values())
            keep = slice(1, None) if args.iters > 1 else slice(None)
            launches[key].append((per_iter[keep], other))
            sent[key].append([(a - b) / args.iters for a, b in zip(after, before)])

    # 5. The table: medians over the clean launches (other processes at most
    # --max-other) when each plan has at least two, else over all.
    clean = {k: [t for t, o in v if o <= args.max_other] for k, v in launches.items()}
    use_clean = all(len(v) >= 2 for v in clean.values())
    for key in times:
        chosen = clean[key] if use_clean else [t for t, _ in launches[key]]
        times[key] = [x for t in chosen for x in t]
    med = {k: statistics.median(v) for k, v in times.items()}
    c = calibration
    print()
    print(f"veth link {NS0}<->{NS1}: tbf {args.rate:g} Mbit/s per direction; TCP goodput "
          f"{bench['mbit_01']:.1f}/{bench['mbit_10']:.1f} Mbit/s one way, "
          f"{bench['mbit_both']:.1f} both ways at once, rtt {bench['rtt_us']:.0f} us; "
          f"MPI all_reduce latency alpha {alpha * 1e6:.0f} us "
          f"(allreduce: {args.mpi_allreduce})")
    print(f"CPU calibration ({c['date']}): matmul {c['matrix_flops'] / 1e9:.1f} GFLOP/s/core, "
          f"gelu {c['vector_flops'] / 1e9:.2f} GFLOP/s, add {c['memory_bandwidth'] / 1e9:.1f} GB/s, "
          f"kernel overhead {c['kernel_overhead'] * 1e6:.1f} us; profile {profile_path}")
    print(f"{args.repeats} launches x {args.iters - 1 if args.iters > 1 else 1} timed iterations "
          f"per plan, alternating; medians over "
          + (f"the clean launches (A {len(clean['A'])}, B {len(clean['B'])}; other "
             f"processes <= {args.max_other:.0%} of the CPUs)" if use_clean else
             "all launches (fewer than 2 clean ones)")
          + f"; load average now {os.getloadavg()[0]:.2f}")
    print()
    worst_used = {k: max([o for _, o in v if (o <= args.max_other or not use_clean)],
                         default=0.0) for k, v in launches.items()}
    print(f"{'plan':<11} {'measured ms':>11} {'min':>8} {'max':>8} {'simulated':>9} "
          f"{'sim/meas':>8} {'sim comp':>8} {'sim comm':>8} {'veth MB/it':>10} "
          f"{'other CPU':>9}  file")
    for key, label, plan in (("A", "baseline", args.baseline),
                             ("B", "overlapped", args.overlapped)):
        s = sims[key]
        mb = statistics.median(x[0] for x in sent[key]) / 1e6
        print(f"{label:<11} {fmt_ms(med[key]):>11} {fmt_ms(min(times[key])):>8} "
              f"{fmt_ms(max(times[key])):>8} {fmt_ms(s['makespan']):>9} "
              f"{s['makespan'] / med[key]:8.2f} {fmt_ms(s['compute']):>8} "
              f"{fmt_ms(s['comm']):>8} {mb:10.1f} {worst_used[key]:9.0%}  {plan}")
    measured = med["A"] / med["B"]
    predicted = sims["A"]["makespan"] / sims["B"]["makespan"]
    print(f"{'speed-up A/B':<11} {measured:10.3f}x {'':>17} {predicted:8.3f}x "
          f"(measured / simulated)")
    if any(discarded.values()):
        print(f"discarded launches (other processes above {args.max_other:.0%} of the "
              f"CPUs): A {discarded['A']}, B {discarded['B']}")
    worst = max(worst_used.values())
    if worst > args.max_other:
        print(f"warning: the medians include launches during which other processes "
              f"used up to {worst:.0%} of the CPUs ('other CPU' is the largest share "
              f"per plan); rerun when the machine is idle, or with --wait-idle 120")
    if alpha_other > args.max_other:
        print(f"warning: other processes used {alpha_other:.0%} of the CPUs while the "
              f"latency alpha was measured")
    if calibration.get("other_cpu", 0) > args.max_other:
        print(f"warning: other processes used {calibration['other_cpu']:.0%} of the CPUs "
              f"during the calibration; rerun with --recalibrate when the machine is idle")
    if args.expected:
        print("outputs: " + ", ".join(f"{k} {'PASS' if v else 'FAIL'}"
                                      for k, v in checks.items()))
    with open(os.path.join(args.work, "results.json"), "w") as out:
        json.dump({"rate_mbit": args.rate, "tcp": bench, "alpha_s": alpha,
                   "times_s": times, "veth_bytes_per_iter": sent,
                   "other_cpu_share": others, "discarded": discarded,
                   "medians_over_clean_launches": use_clean,
                   "launches": {k: [{"times_s": t, "other_cpu": o} for t, o in v]
                                for k, v in launches.items()},
                   "simulated": sims, "speedup_measured": measured,
                   "speedup_simulated": predicted, "calibration": calibration,
                   "baseline": args.baseline, "overlapped": args.overlapped}, out, indent=1)


if __name__ == "__main__":
    main()
