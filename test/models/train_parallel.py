"""Partitioned training against one rank's losses (and PyTorch's).

    train_parallel.py WORKDIR [--models a,b] [--configs c,d] [--mpirun CMD]
                      [--extra 'BRAIDC FLAGS'] [--tag NAME]

For every example model and optimizer with a PyTorch loss curve
(examples/models/MODEL/training/losses_OPT.csv), compiles the training step
with `braidc --train --parallel P` for each mesh P (dp=2, tp=2, dp=2,tp=2,
and ep=2 for models with experts), runs 20 steps under mpirun on as many
ranks as P has, and compares rank 0's loss log with the reference (2e-4
relative per step, compare_losses.py). The sharded plans are also checked to
store every tensor-parallel parameter sharded: a mesh that partitions no
trained weight would not be tensor parallel training at all.

Data-parallel runs get braidc's default for --train with dp (gradient
buckets chosen by the cost model, then braid-schedule); --extra adds flags
(a forced bucket size, --overlap none).

The example models' batch of 2 does not split over 4 ranks. The models
`gpt2-b4` and `llama-b4` are written here (bench/cpu_vs_onnxruntime.py's
decoder generator: 2 layers, hidden 64, 4 heads (LLaMA: 2 key-value heads),
vocabulary 256, batch 4 x 16 tokens, random weights) and their reference is
one rank of Braid on the same plan options, 20 steps: what "equal to
single-rank training" means for dp=4.

`--precision bf16` compiles every run (and the reference: one rank of
Braid at that precision, 20 steps) with braidc's mixed precision, and
`--rtol` sets the tolerance.

Prints one line per run and `PASS: N runs` at the end; exits 1 at the first
failure, with the command that failed.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "examples", "data", "gpl3.bin")

# The options each reference curve was made with (make_training_reference.py).
OPTIMIZERS = {
    "sgd": ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"],
    "adamw": ["--optimizer", "adamw", "--lr", "1e-3", "--betas", "0.9,0.95",
              "--eps", "1e-8", "--weight-decay", "0.1"],
    "adamw_clip": ["--optimizer", "adamw", "--lr", "1e-3", "--betas",
                   "0.9,0.95", "--eps", "1e-8", "--weight-decay", "0.1",
                   "--clip-norm", "0.5"],
}


def ranks_of(parallel):
    n = 1
    for item in parallel.split(","):
        n *= int(item.split("=")[1]) if "=" in item else 1
    return n


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: " + " ".join(cmd))
        print(r.stdout + r.stderr)
        sys.exit(1)
    return r.stdout


GENERATED = {"gpt2-b4": "gpt2", "llama-b4": "llama"}


def one_rank(onnx, model, opt, workdir, tool, precision):
    """One rank of Braid's loss curve for `onnx` (20 steps)."""
    suffix = "" if precision == "f32" else "." + precision
    reference = os.path.join(workdir, f"{model}.{opt}.one-rank{suffix}.csv")
    if not os.path.exists(reference):
        plan = os.path.join(workdir, f"{model}.{opt}.one-rank{suffix}.bplan")
        run([tool("braidc"), onnx, "--train", *OPTIMIZERS[opt],
             "--precision", precision, "--progress=false", "-o", plan])
        run([tool("braid-run"), plan, "--steps", "20", "--data", DATA,
             "--loss-log", reference])
    return reference


def generated(model, workdir):
    """The ONNX file of a generated model."""
    onnx = os.path.join(workdir, model + ".onnx")
    if not os.path.exists(onnx):
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import cpu_vs_onnxruntime as generator
        kind = GENERATED[model]
        generator.decoder_onnx(onnx, kind, 2, 64, 4, 4 if kind == "gpt2" else 2,
                               256, 256, 16, seed=3, batch=4)
    return onnx


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--models", default="gpt2,llama,mixtral")
    p.add_argument("--configs", default="dp=2,tp=2,dp=2;tp=2,ep=2",
                   help="comma-separated meshes; ';' joins axes of one mesh")
    p.add_argument("--optimizers", default="sgd,adamw_clip")
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--bin", default="")
    p.add_argument("--extra", default="",
                   help="more braidc flags for every run, e.g. "
                        "'--overlap buckets=1 --force-overlap'")
    p.add_argument("--precision", default="f32",
                   help="braidc --precision; other than f32, the reference "
                        "is one rank of Braid at that precision")
    p.add_argument("--rtol", default="2e-4",
                   help="the largest relative difference per step")
    p.add_argument("--tag", default="",
                   help="added to the names of this invocation's files")
    a = p.parse_args()
    tool = lambda name: os.path.join(a.bin, name) if a.bin else name
    os.makedirs(a.workdir, exist_ok=True)
    passed = 0
    for model in a.models.split(","):
        onnx = os.path.join(ROOT, "examples", "models", model, "model.onnx")
        moe = "moe" in model or model == "mixtral"
        for opt in a.optimizers.split(","):
            reference = os.path.join(ROOT, "examples", "models", model,
                                     "training", f"losses_{opt}.csv")
            if model in GENERATED:
                onnx = generated(model, a.workdir)
            if not os.path.exists(os.path.join(
                    ROOT, "examples", "models", GENERATED.get(model, model),
                    "training", f"losses_{opt}.csv")):
                continue
            if model in GENERATED or a.precision != "f32":
                reference = one_rank(onnx, model, opt, a.workdir, tool,
                                     a.precision)
            for config in a.configs.split(","):
                parallel = config.replace(";", ",")
                if parallel.startswith("ep") and not moe:
                    continue
                name = f"{model}.{opt}.{parallel.replace(',', '_')}{a.tag}"
                plan = os.path.join(a.workdir, name + ".bplan")
                log = os.path.join(a.workdir, name + ".csv")
                ir = os.path.join(a.workdir, name + ".mlir")
                common = [tool("braidc"), onnx, "--train", *OPTIMIZERS[opt],
                          "--parallel", parallel, "--progress=false",
                          "--precision", a.precision,
                          *a.extra.split()]
                run(common + ["-o", plan])
                run(common + ["--emit=braid", "-o", ir])
                text = open(ir).read()
                sharded_sets = len(re.findall(r"braid\.set_weight .* sharded on",
                                              text))
                if (any(a in parallel for a in ("tp", "sp", "ep"))
                        and sharded_sets == 0):
                    print(f"FAIL: {name}: no state weight is stored sharded")
                    sys.exit(1)
                run(a.mpirun.split() + ["-n", str(ranks_of(parallel)),
                                        tool("braid-run"), plan, "--steps",
                                        "20", "--data", DATA, "--loss-log",
                                        log])
                out = run([sys.executable, os.path.join(HERE,
                                                        "compare_losses.py"),
                           log, reference, "--rtol", a.rtol]).strip()
                print(f"{name}: {sharded_sets} sharded state weights, {out}")
                passed += 1
    print(f"PASS: {passed} runs")


if __name__ == "__main__":
    main()
