"""Helpers the simulator benchmarks share: run the Braid tools, compile braid
IR through a pass pipeline to a plan, simulate it, read the summary."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tools(build, who):
    """Paths of braid-opt, braid-translate and braid-run in BUILD/bin."""
    found = {n: os.path.join(build, "bin", n)
             for n in ("braid-opt", "braid-translate", "braid-run")}
    for path in found.values():
        if not os.access(path, os.X_OK):
            sys.exit(f"{who}: {path} not found (build the project first)")
    return found


def run(command, what, who):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{who}: {what} failed ({result.returncode}):\n"
                 f"{result.stderr or result.stdout}")
    return result.stdout + result.stderr


def seconds(text, label, who):
    match = re.search(rf"{label}\s+([0-9.]+) (s|ms|us)", text)
    if not match:
        sys.exit(f"{who}: no '{label}' in:\n{text}")
    return float(match.group(1)) * {"s": 1, "ms": 1e-3, "us": 1e-6}[match.group(2)]


def simulate(tools, work, stem, ir, passes, profile, ranks, who, nodes=None):
    """Writes IR, runs `passes` and braid-to-exec, translates to a plan and
    simulates it on `profile`. Returns (summary text, head of the exec IR)."""
    mlir = os.path.join(work, stem + ".mlir")
    with open(mlir, "w") as out:
        out.write(ir)
    exec_mlir = os.path.join(work, stem + ".exec.mlir")
    plan = os.path.join(work, stem + ".bplan")
    run([tools["braid-opt"], mlir] + passes + ["--braid-to-exec", "-o", exec_mlir],
        "braid-opt " + " ".join(passes), who)
    run([tools["braid-translate"], "--exec-to-plan", exec_mlir, "-o", plan],
        "braid-translate", who)
    command = [tools["braid-run"], plan, "--backend", "sim", "--hw", profile,
               "--world", str(ranks), "--svg", os.path.join(work, stem + ".svg")]
    if nodes:
        command += ["--nodes", str(nodes)]
    out = run(command, "braid-run --backend sim", who)
    with open(exec_mlir) as text:
        head = text.read(4000)
    return out, head
