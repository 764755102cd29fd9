#!/usr/bin/env python3
"""CoCoD-SGD (braidc --algorithm cocod-sgd=K) against a numpy
reimplementation of its update rule.

    cocod_sgd.py WORKDIR [--bin DIR] [--mpirun CMD] [--configs "P:K:OPT,..."]
    cocod_sgd.py WORKDIR --models gpt2,llama --configs "P:K,..." [--steps N]

Writes a small language model as ONNX (an embedding, tanh, a projection to
the vocabulary with a bias: gradients numpy can write by hand), a token file,
and for each configuration (P ranks, period K, optimizer sgd or adamw)
compiles it with `braidc --train --parallel dp=P --algorithm cocod-sgd=K`,
runs 3 periods under `mpirun -n P braid-run` and compares the loss log with
numpy's, in float64: each rank runs K local steps of the optimizer on its own
rows (rank r, local step k of the call at step t reads windows
t*P*B + r*K*B + k*B + b), then x <- mean over ranks(x at the period's start)
+ (x - own x at the period's start); the optimizer state stays local; the
logged loss of a step is its mean over the ranks. Relative tolerance 1e-4
per step (float32 against float64). Prints one PASS/FAIL line per run and
`PASS: N runs` when all pass.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

B, S, V, D = 2, 8, 16, 8
LR, MOMENTUM = 0.5, 0.9
BETAS, EPS, WD = (0.9, 0.999), 1e-8, 0.01
ADAM_LR = 0.05


def write_model(path, rng):
    weights = {
        "embed": rng.standard_normal((V, D)).astype(np.float32),
        "proj": (rng.standard_normal((D, V)) / np.sqrt(D)).astype(np.float32),
        "bias": (0.1 * rng.standard_normal(V)).astype(np.float32),
    }
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["h0"], axis=0),
        helper.make_node("Tanh", ["h0"], ["h"]),
        helper.make_node("MatMul", ["h", "proj"], ["z"]),
        helper.make_node("Add", ["z", "bias"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_lm",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [B, S])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [B, S, V])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return {k: v.astype(np.float64) for k, v in weights.items()}


def loss_and_grads(w, ids, labels):
    """Mean next-token cross entropy of the model and its gradients."""
    h = np.tanh(w["embed"][ids])                       # [b, S, D]
    logits = h @ w["proj"] + w["bias"]                 # [b, S, V]
    logits -= logits.max(-1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(-1, keepdims=True)
    n = ids.size
    onehot = np.eye(V)[labels]
    loss = -np.log((p * onehot).sum(-1)).sum() / n
    dz = (p - onehot) / n
    g = {"proj": np.einsum("bsd,bsv->dv", h, dz), "bias": dz.sum((0, 1))}
    dpre = (dz @ w["proj"].T) * (1 - h * h)
    g["embed"] = np.zeros_like(w["embed"])
    np.add.at(g["embed"], ids.reshape(-1), dpre.reshape(-1, D))
    return loss, g


class Optimizer:
    """PyTorch's SGD with momentum / AdamW (single-tensor paths)."""

    def __init__(self, kind, w):
        self.kind, self.t = kind, 0
        self.m = {k: np.zeros_like(v) for k, v in w.items()}
        self.v = {k: np.zeros_like(v) for k, v in w.items()}

    def step(self, w, g):
        self.t += 1
        for k in w:
            if self.kind == "sgd":
                self.m[k] = MOMENTUM * self.m[k] + g[k]
                w[k] = w[k] - LR * self.m[k]
            else:
                b1, b2 = BETAS
                w[k] = w[k] * (1 - ADAM_LR * WD)
                self.m[k] = b1 * self.m[k] + (1 - b1) * g[k]
                self.v[k] = b2 * self.v[k] + (1 - b2) * g[k] ** 2
                c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
                w[k] = w[k] - ADAM_LR / c1 * self.m[k] / (
                    np.sqrt(self.v[k]) / np.sqrt(c2) + EPS)


def reference(w0, tokens, ranks, period, kind, steps):
    """CoCoD-SGD in numpy: the logged loss of every step."""
    x = [{k: v.copy() for k, v in w0.items()} for _ in range(ranks)]
    opt = [Optimizer(kind, w0) for _ in range(ranks)]
    losses = []
    for t0 in range(0, steps, period):
        snap = [{k: v.copy() for k, v in xr.items()} for xr in x]
        mean = {k: sum(s[k] for s in snap) / ranks for k in w0}
        for k in range(period):
            step_losses = []
            for r in range(ranks):
                rows = [t0 * ranks * B + r * period * B + k * B + b
                        for b in range(B)]
                window = np.stack([tokens[w * S: w * S + S + 1] for w in rows])
                loss, g = loss_and_grads(x[r], window[:, :-1], window[:, 1:])
                opt[r].step(x[r], g)
                step_losses.append(loss)
            losses.append(np.mean(step_losses))
        for r in range(ranks):
            x[r] = {k: mean[k] + (x[r][k] - snap[r][k]) for k in w0}
    return losses


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("command failed (%d): %s\n%s%s" % (
            r.returncode, " ".join(cmd), r.stdout, r.stderr))
    return r.stdout


def curves(a):
    """--models: CoCoD-SGD against synchronous SGD at the same tokens.

    For each model and P:K, `steps` CoCoD-SGD steps under mpirun -n P (each
    step P batches of the model's B rows) and P * steps synchronous steps on
    one rank (batch B; the same windows in the same order, and P times as
    many updates: a stricter baseline than synchronous data parallelism at
    batch P * B, which this model's fixed batch cannot express). The mean
    loss over the last 10 CoCoD steps must be within 5% of the synchronous
    run's over the same windows, and below CoCoD's first 10 steps'.
    """
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                        "examples", "data", "gpl3.bin")
    sgd = ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"]
    failed = runs = 0
    for model in a.models.split(","):
        onnx_path = os.path.join(os.path.dirname(data), "..", "models", model,
                                 "model.onnx")
        stem = os.path.join(a.workdir, model)
        sync = {}
        for config in a.configs.split(","):
            ranks, period = (int(x) for x in config.split(":"))
            if ranks not in sync:
                run([os.path.join(a.bin, "braidc"), onnx_path, "--train",
                     "-o", stem + ".sync.bplan"] + sgd)
                run([os.path.join(a.bin, "braid-run"), stem + ".sync.bplan",
                     "--steps", str(ranks * a.steps), "--data", data,
                     "--loss-log", stem + ".sync.csv"])
                sync[ranks] = np.loadtxt(stem + ".sync.csv", delimiter=",",
                                         skiprows=1)[:, 1]
            name = "%s.cocod.%d.%d" % (stem, ranks, period)
            run([os.path.join(a.bin, "braidc"), onnx_path, "--train",
                 "--parallel", "dp=%d" % ranks, "--algorithm",
                 "cocod-sgd=%d" % period, "-o", name + ".bplan"] + sgd)
            run(a.mpirun.split() + ["-n", str(ranks),
                                    os.path.join(a.bin, "braid-run"),
                                    name + ".bplan", "--steps", str(a.steps),
                                    "--data", data, "--loss-log",
                                    name + ".csv"])
            got = np.loadtxt(name + ".csv", delimiter=",", skiprows=1)[:, 1]
            last = got[-10:].mean()
            want = sync[ranks][-10 * ranks:].mean()
            rel = (last - want) / want
            ok = (len(got) == a.steps and abs(rel) <= 0.05 and
                  last < got[:10].mean())
            runs += 1
            failed += not ok
            print("%s %s dp=%d K=%d: %d steps, last 10 %.4f (first 10 %.4f); "
                  "synchronous at the same tokens %.4f (%+.1f%%)"
                  % ("PASS" if ok else "FAIL", model, ranks, period, len(got),
                     last, got[:10].mean(), want, 100 * rel))
    if failed:
        sys.exit("%d of %d runs are not within 5%% of synchronous SGD"
                 % (failed, runs))
    print("PASS: %d runs" % runs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workdir")
    p.add_argument("--bin", default="", help="tools folder (default: PATH)")
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--configs", default="2:2:sgd,2:3:adamw,4:2:sgd,4:1:adamw")
    p.add_argument("--models", default="",
                   help="example models: compare with synchronous SGD "
                        "instead (--configs P:K,...)")
    p.add_argument("--steps", type=int, default=100)
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    if a.models:
        return curves(a)
    rng = np.random.default_rng(7)
    model = os.path.join(a.workdir, "tiny_lm.onnx")
    w0 = write_model(model, rng)
    tokens = rng.integers(0, V, size=4096).astype(np.uint16)
    data = os.path.join(a.workdir, "tokens.bin")
    tokens.tofile(data)

    failed = 0
    for config in a.configs.split(","):
        ranks, period, kind = config.split(":")
        ranks, period = int(ranks), int(period)
        steps = 3 * period
        stem = os.path.join(a.workdir, "cocod.%d.%d.%s" % (ranks, period, kind))
        flags = (["--optimizer", "sgd", "--lr", str(LR), "--momentum",
                  str(MOMENTUM)] if kind == "sgd" else
                 ["--optimizer", "adamw", "--lr", str(ADAM_LR), "--betas",
                  "%g,%g" % BETAS, "--weight-decay", str(WD)])
        run([os.path.join(a.bin, "braidc"), model, "--train", "--parallel",
             "dp=%d" % ranks, "--algorithm", "cocod-sgd=%d" % period,
             "-o", stem + ".bplan"] + flags)
        run(a.mpirun.split() + ["-n", str(ranks),
                                os.path.join(a.bin, "braid-run"),
                                stem + ".bplan", "--steps", str(steps),
                                "--data", data, "--loss-log", stem + ".csv"])
        got = np.loadtxt(stem + ".csv", delimiter=",", skiprows=1)[:, 1]
        want = np.array(reference(w0, tokens.astype(np.int64), ranks, period,
                                  kind, steps))
        rel = np.abs(got - want) / np.abs(want)
        ok = len(got) == steps and rel.max() <= 1e-4
        failed += not ok
        print("%s dp=%d K=%d %s: %d steps, largest relative difference %.1e"
              % ("PASS" if ok else "FAIL", ranks, period, kind, len(got),
                 rel.max()))
        if not ok:
            print("  braid: %s\n  numpy: %s" % (got, want))
    if failed:
        sys.exit("%d of %d runs differ from the numpy reference"
                 % (failed, len(a.configs.split(","))))
    print("PASS: %d runs" % len(a.configs.split(",")))


if __name__ == "__main__":
    main()
