#!/usr/bin/env python3
"""Every pass on the output of every other pass, on the example models.

For each configuration (an example model and a mesh), the single-device
program braidc imports goes through

    braid-split-fused-projections, braid-partition{mesh}, P1, P2, braid-to-exec

for every ordered pair (P1, P2) of the passes and named pipelines below,
in braid-fuzz-partition's runner (--reproduce --pipeline): the program runs on
one thread per rank and every output is compared with the reference
interpreter's on random weights and inputs. A pair passes when the runner
says "pass" (outputs equal) or "rejected" (a pass failed with an error); it
fails on a mismatch, on a crash the runner reports (invalid IR after a pass,
a pass failing without an error, a plan the runtime refuses) and on a
signal. The passes that change what the program computes (braid-autodiff,
braid-next-token-loss, braid-training-step) are run as P2 by braid-opt and
checked for exit status only (no signal).

    compose-passes.py BIN_DIR MODELS_DIR WORK_DIR [--jobs N] [--config NAME]
        [--only SUBSTR]

Prints one line per failing pair and a summary per configuration; exit
status 1 when any pair fails.
"""

import argparse
import concurrent.futures
import itertools
import os
import subprocess
import sys
import time

CONFIGS = [
    # (model, braid-partition options)
    ("gpt2", "tp=2"),
    ("llama", "tp=2"),
    ("mixtral", "ep=2"),
    ("gpt2", "cp=2"),
]

# Passes and named pipelines that keep what the program computes.
PASSES = [
    "braid-schedule",
    "braid-domino{chunks=2}",
    "braid-domino{chunks=2 split=columns}",
    "braid-domino{chunks=auto}",
    "braid-seq-pipeline{chunks=2}",
    "braid-overlap-auto",
    "braid-buckets{mib=1 force=true}",
    "braid-comet",
    "braid-ring-attention",
    "braid-attention-2d",
    "braid-balance-sequence{parts=2}",
    "braid-verify-collectives",
    "braid-split-fused-projections",
    "braid-raise-attention",
    "braid-raise-fused-ops",
    "braid-partition{tp=2}",
    "braid-cost-report",
    "braid-overlap-report",
    "braid-print-chunk-runs",
    "braid-print-dimension-mapping",
    "canonicalize",
    "cse",
    "braid-overlap-pipeline",
    "braid-lower-pipeline",
]

# Passes that change the program's results: exit status only.
RESULT_CHANGING = [
    "braid-autodiff",
    "braid-next-token-loss",
    "braid-training-step",
]

TIMEOUT = 120


def run(command):
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              timeout=TIMEOUT,
                              env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
        return done.returncode, done.stdout
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return "timeout", out


def classify(returncode, output):
    """'pass', 'rejected', or a failure description."""
    if returncode == "timeout":
        return "TIMEOUT after %d s" % TIMEOUT
    if returncode < 0 or returncode >= 128:
        signal = -returncode if returncode < 0 else returncode - 128
        return "SIGNAL %d" % signal
    first = output.splitlines()[0] if output else ""
    if ": pass on " in first and returncode == 0:
        return "pass"
    if ": rejected" in first and returncode == 0:
        return "rejected"
    return first.split(": ", 1)[-1] or "exit status %d, no output" % returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bin")
    parser.add_argument("models")
    parser.add_argument("work")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--config", default="",
                        help="only this configuration, e.g. gpt2-tp2")
    parser.add_argument("--only", default="",
                        help="only pairs whose pipeline contains this text")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    braidc = os.path.join(args.bin, "braidc")
    runner = os.path.join(args.bin, "braid-fuzz-partition")
    opt = os.path.join(args.bin, "braid-opt")

    failures = 0
    start = time.time()
    for model, mesh in CONFIGS:
        name = "%s-%s" % (model, mesh.replace("=", ""))
        if args.config and args.config != name:
            continue
        base = os.path.join(args.work, name + ".mlir")
        code, output = run([braidc, os.path.join(args.models, model,
                                                  "model.onnx"),
                            "--emit=braid", "-o", base])
        if code != 0:
            print("%s: braidc failed: %s" % (name, output.strip()))
            failures += 1
            continue
        prefix = "braid-split-fused-projections,braid-partition{%s}" % mesh
        jobs = []
        for first, second in itertools.product(PASSES, PASSES):
            pipeline = ",".join([prefix, first, second, "braid-to-exec"])
            if args.only in pipeline:
                jobs.append((pipeline, [runner, "--reproduce=" + base,
                                        "--pipeline=" + pipeline]))
        for first, second in itertools.product(PASSES, RESULT_CHANGING):
            pipeline = ",".join([prefix, first, second])
            if args.only in pipeline:
                jobs.append((pipeline, [
                    opt, base, "-o", os.devnull,
                    "--pass-pipeline=builtin.module(%s)" % pipeline]))
        counts = {"pass": 0, "rejected": 0, "failed": 0}
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = pool.map(lambda job: (job[0], job[1][0], run(job[1])),
                               jobs)
            for pipeline, tool, (code, output) in results:
                if tool == opt:
                    ok = code != "timeout" and 0 <= code < 128
                    outcome = "pass" if code == 0 else (
                        "rejected" if ok else classify(code, output))
                else:
                    outcome = classify(code, output)
                if outcome in ("pass", "rejected"):
                    counts[outcome] += 1
                    continue
                counts["failed"] += 1
                failures += 1
                print("%s: %s: %s" % (name, pipeline, outcome), flush=True)
                for line in output.splitlines()[1:6]:
                    print("    " + line)
        print("%s: %d pipelines: %d ran and matched, %d rejected, %d failed"
              % (name, len(jobs), counts["pass"], counts["rejected"],
                 counts["failed"]), flush=True)
    print("compose-passes: %d failures in %.0f s" % (failures,
                                                    time.time() - start))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
