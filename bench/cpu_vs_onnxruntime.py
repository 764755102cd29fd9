#!/usr/bin/env python3
"""Braid's CPU runtime against onnxruntime, side by side in one run.

For each model: compile it with `braidc` into a plan, then run `braid-run`
(CPU backend) and onnxruntime (CPU provider) on the same inputs, in
alternating rounds, at each thread count; print the median time per run of
each, the ratio onnxruntime / Braid (above 1: Braid is faster) and the peak
resident memory of each process. Models: the example models
(examples/models/*, their test_data_set_0 inputs) and decoders the script
writes itself with random weights (not committed): a GPT-2-shaped and a
Qwen2/LLaMA-shaped model of 4 layers at hidden 256, GPT-2 small (124M) and
a 156M LLaMA shape, at batch 1 x 128 tokens.

    bench/cpu_vs_onnxruntime.py [--models gpt2,llama,gpt2-4l,...]
        [--threads 1,2] [--rounds 7] [--repeat 5] [--build build]
        [--json results.json]

Each round runs `braid-run --repeat R` (one process: plan load, untimed runs
for 0.3 s, then R timed runs) and one onnxruntime process doing the same (a
process's first tenth of a second at two threads runs slow on the 2-core
test machine, whichever runtime it is); a model's figure is
the median over rounds of each round's median run. Threads: onnxruntime's
intra_op_num_threads; braid-run's --threads (the GEMM library's OpenMP
threads and the runtime's own parallel loops; `braid-run --version` names
the GEMM library, printed first). Nothing here is asserted: the numbers go
into docs/results.md.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHO = "cpu_vs_onnxruntime"
EXAMPLES = ["gpt2", "llama", "mixtral", "mlp", "qwen2_dynamo",
            "phi3_dynamo", "opt_dynamo", "bert_torchscript"]
# name: (kind, layers, hidden, heads, kv heads, ffn, vocab, sequence)
GENERATED = {
    "gpt2-4l": ("gpt2", 4, 256, 4, 4, 1024, 2048, 128),
    "qwen2-4l": ("llama", 4, 256, 4, 2, 704, 2048, 128),
    "gpt2-small": ("gpt2", 12, 768, 12, 12, 3072, 50257, 128),
    "llama-156m": ("llama", 8, 1024, 16, 16, 2816, 32000, 128),
}


def fail(message):
    sys.exit(f"{WHO}: {message}")


# --- generated models --------------------------------------------------------

def decoder_onnx(path, kind, layers, hidden, heads, kv_heads, ffn, vocab, seq,
                 seed=0, batch=1, random=True):
    """Writes a decoder-only language model as an ONNX graph with random
    weights: GPT-2 style (learned positions, LayerNorm with bias, tanh-GELU
    MLP, biases) or LLaMA style (RMSNorm, rotary embedding, SwiGLU, grouped
    query attention, no biases). Input input_ids [batch, seq] (int64), output
    logits [batch, seq, vocab]. random=False fills each weight with its own
    constant instead (fast, for shapes only: the simulator reads no values;
    distinct constants so that no weight reads as a tied copy of another)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    counter = [0]

    def name(stem):
        counter[0] += 1
        return f"{stem}_{counter[0]}"

    def weight(stem, shape, scale=0.02):
        n = name(stem)
        values = ((rng.standard_normal(shape) * scale).astype(np.float32)
                  if random else
                  np.full(shape, 1e-3 * counter[0], np.float32))
        inits.append(numpy_helper.from_array(values, n))
        return n

    def const(values, dtype=np.float32):
        n = name("const")
        inits.append(numpy_helper.from_array(np.asarray(values, dtype), n))
        return n

    def op(kind_, inputs, **attrs):
        out = name(kind_.lower())
        nodes.append(helper.make_node(kind_, inputs, [out], name=out, **attrs))
        return out

    head = hidden // heads
    x = op("Gather", [weight("wte", (vocab, hidden)), "input_ids"], axis=0)
    if kind == "gpt2":
        positions = const(np.arange(seq).reshape(1, seq), np.int64)
        x = op("Add", [x, op("Gather", [weight("wpe", (seq, hidden)),
                                        positions], axis=0)])
    else:
        inv = 1.0 / (10000 ** (np.arange(0, head, 2) / head))
        angles = np.outer(np.arange(seq), inv)
        angles = np.concatenate([angles, angles], axis=-1)
        cos = const(np.cos(angles).reshape(1, 1, seq, head))
        sin = const(np.sin(angles).reshape(1, 1, seq, head))
    mask = const(np.triu(np.full((seq, seq), -1e9, np.float32), 1))
    scale = const(1.0 / np.sqrt(head))

    def norm(v):
        if kind == "gpt2":
            return op("LayerNormalization",
                      [v, weight("ln_w", (hidden,), 1.0),
                       weight("ln_b", (hidden,))], axis=-1, epsilon=1e-5)
        square = op("Mul", [v, v])
        mean = op("ReduceMean", [square, const([-1], np.int64)], keepdims=1)
        rms = op("Sqrt", [op("Add", [mean, const(1e-6)])])
        return op("Mul", [op("Div", [v, rms]),
                          weight("rms_w", (hidden,), 1.0)])

    def linear(v, n_in, n_out, bias):
        y = op("MatMul", [v, weight("w", (n_in, n_out))])
        return op("Add", [y, weight("b", (n_out,))]) if bias else y

    def heads_of(v, count):
        r = op("Reshape", [v, const([batch, seq, count, head], np.int64)])
        return op("Transpose", [r], perm=[0, 2, 1, 3])

    def rotate(v):
        half = head // 2
        first = op("Slice", [v, const([0], np.int64), const([half], np.int64),
                             const([3], np.int64)])
        second = op("Slice", [v, const([half], np.int64),
                              const([head], np.int64), const([3], np.int64)])
        rotated = op("Concat", [op("Neg", [second]), first], axis=3)
        return op("Add", [op("Mul", [v, cos]), op("Mul", [rotated, sin])])

    bias = kind == "gpt2"
    for _ in range(layers):
        h = norm(x)
        q = heads_of(linear(h, hidden, hidden, bias), heads)
        k = heads_of(linear(h, hidden, kv_heads * head, bias), kv_heads)
        v = heads_of(linear(h, hidden, kv_heads * head, bias), kv_heads)
        if kind != "gpt2":
            q, k = rotate(q), rotate(k)
        if kv_heads != heads:
            repeat = heads // kv_heads

            def expand(t):
                u = op("Unsqueeze", [t, const([2], np.int64)])
                u = op("Expand", [u, const([batch, kv_heads, repeat, seq, head],
                                           np.int64)])
                return op("Reshape", [u, const([batch, heads, seq, head],
                                               np.int64)])
            k, v = expand(k), expand(v)
        scores = op("Mul", [op("MatMul", [q, op("Transpose", [k],
                                                 perm=[0, 1, 3, 2])]), scale])
        probs = op("Softmax", [op("Add", [scores, mask])], axis=-1)
        context = op("Transpose", [op("MatMul", [probs, v])],
                     perm=[0, 2, 1, 3])
        context = op("Reshape", [context, const([batch, seq, hidden], np.int64)])
        x = op("Add", [x, linear(context, hidden, hidden, bias)])
        h = norm(x)
        if kind == "gpt2":
            up = linear(h, hidden, ffn, True)
            cube = op("Pow", [up, const(3.0)])
            inner = op("Mul", [op("Add", [up, op("Mul", [cube, const(0.044715)])]),
                               const(np.sqrt(2 / np.pi))])
            act = op("Mul", [op("Mul", [up, const(0.5)]),
                             op("Add", [op("Tanh", [inner]), const(1.0)])])
            down = linear(act, ffn, hidden, True)
        else:
            gate = linear(h, hidden, ffn, False)
            up = linear(h, hidden, ffn, False)
            silu = op("Mul", [gate, op("Sigmoid", [gate])])
            down = linear(op("Mul", [silu, up]), ffn, hidden, False)
        x = op("Add", [x, down])
    logits = op("MatMul", [norm(x), weight("lm_head", (hidden, vocab))])
    nodes[-1].output[0] = "logits"
    graph = helper.make_graph(
        nodes, "decoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                       [batch, seq])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       [batch, seq, vocab])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, path, save_as_external_data=True,
              all_tensors_to_one_file=True,
              location=os.path.basename(path) + ".data")
    # Checked from the file: a model over 2 GB does not serialize in memory.
    onnx.checker.check_model(path)


def write_inputs(folder, vocab, seq, seed=1):
    import numpy as np
    from onnx import numpy_helper
    os.makedirs(folder, exist_ok=True)
    ids = np.random.default_rng(seed).integers(0, vocab, (1, seq), np.int64)
    with open(os.path.join(folder, "input_0.pb"), "wb") as out:
        out.write(numpy_helper.from_array(ids, "input_ids").SerializeToString())


# --- measuring ---------------------------------------------------------------

def run_measured(command, env=None):
    """Runs `command`; returns (stdout+stderr, peak RSS in MiB)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        fail(f"{' '.join(command[:3])} ... failed ({process.returncode}):\n"
             f"{output[-3000:]}")
    return output, usage.ru_maxrss / 1024.0


ORT_WORKER = r"""
import sys, time, json, glob, os
import numpy as np, onnxruntime as ort
from onnx import numpy_helper, TensorProto
model, inputs, threads, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
feed = {}
for i, info in enumerate(session.get_inputs()):
    t = TensorProto()
    with open(os.path.join(inputs, f"input_{i}.pb"), "rb") as f:
        t.ParseFromString(f.read())
    feed[info.name] = numpy_helper.to_array(t)
# Warm up for 0.3 s, as braid_round does: a process's first tenth of a
# second at two threads runs slow on this machine (15 ms a run of a 0.01 ms
# model, measured), whichever runtime it is.
warm_until = time.perf_counter() + 0.3
session.run(None, feed)
while time.perf_counter() < warm_until:
    session.run(None, feed)
times = []
for _ in range(repeat):
    start = time.perf_counter()
    session.run(None, feed)
    times.append((time.perf_counter() - start) * 1e3)
print("ORT_TIMES " + json.dumps(times))
"""


WARM_SECONDS = 0.3


def braid_round(tools, plan, inputs, threads, repeat, run_ms=None):
    """One braid-run process: untimed runs for WARM_SECONDS (from `run_ms`,
    the time of one run, when known; else one run), then `repeat` timed
    ones. Returns the median timed run and the peak RSS."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    warm = 1
    if run_ms:
        warm = max(1, min(50000, int(WARM_SECONDS * 1e3 / max(run_ms, 1e-3))))
    out, rss = run_measured([tools["braid-run"], plan, "--inputs", inputs,
                             "--repeat", str(repeat + warm), "--threads",
                             str(threads)], env)
    match = re.search(r"totals over \d+ runs \(ms\):([0-9. ]+)", out)
    if not match:
        # One run prints only its total.
        match = re.search(r"total ([0-9.]+) ms", out)
        if not match:
            fail(f"no run totals in braid-run's output:\n{out[-2000:]}")
    totals = [float(t) for t in match.group(1).split()]
    return statistics.median(totals[warm:] or totals), rss


def ort_round(python, model, inputs, threads, repeat):
    out, rss = run_measured([python, "-c", ORT_WORKER, model, inputs,
                             str(threads), str(repeat)])
    match = re.search(r"ORT_TIMES (\[.*\])", out)
    if not match:
        fail(f"onnxruntime printed no times:\n{out[-2000:]}")
    return statistics.median(json.loads(match.group(1))), rss


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(EXAMPLES + list(GENERATED)))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--keep", help="folder for models and plans (kept)")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--write-model", nargs=2, metavar=("NAME", "FOLDER"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_model:
        name, folder = args.write_model
        decoder_onnx(os.path.join(folder, "model.onnx"), *GENERATED[name])
        write_inputs(os.path.join(folder, "test_data_set_0"),
                     GENERATED[name][6], GENERATED[name][7])
        return

    tools = {n: os.path.join(args.build, "bin", n) for n in ("braidc",
                                                             "braid-run")}
    for path in tools.values():
        if not os.access(path, os.X_OK):
            fail(f"{path} not found (build the project first)")
    python = os.path.join(ROOT, ".venv", "bin", "python")
    if not os.access(python, os.X_OK):
        python = sys.executable
    work = args.keep or tempfile.mkdtemp(prefix="braid-cpu-bench-")
    os.makedirs(work, exist_ok=True)
    threads = [int(t) for t in args.threads.split(",")]
    version = subprocess.run([tools["braid-run"], "--version"],
                             capture_output=True, text=True)
    # Its second line names the GEMM library (CPU GEMM: ...).
    print(f"{WHO}: {' '.join(version.stdout.splitlines()[1:])}",
          file=sys.stderr, flush=True)
    rows = []
    for model in args.models.split(","):
        started = time.perf_counter()
        if model in GENERATED:
            folder = os.path.join(work, model)
            onnx_path = os.path.join(folder, "model.onnx")
            inputs = os.path.join(folder, "test_data_set_0")
            if not os.path.exists(onnx_path):
                os.makedirs(folder, exist_ok=True)
                print(f"{WHO}: writing {model} ...", file=sys.stderr, flush=True)
                # In a child process: a process forked from this one while
                # it held the weights would report them in its peak RSS.
                subprocess.run([python, os.path.abspath(__file__),
                                "--write-model", model, folder], check=True)
        elif os.path.isdir(os.path.join(ROOT, "examples", "models", model)):
            folder = os.path.join(ROOT, "examples", "models", model)
            onnx_path = os.path.join(folder, "model.onnx")
            inputs = os.path.join(folder, "test_data_set_0")
        else:
            fail(f"unknown model '{model}' (examples/models/* or one of "
                 f"{', '.join(GENERATED)})")
        plan = os.path.join(work, model + ".bplan")
        out, _ = run_measured([tools["braidc"], onnx_path, "-o", plan,
                               "--progress=false"])
        for t in threads:
            braid, ort_ = [], []
            for _ in range(args.rounds):
                if not braid:
                    # A first process to learn how long a run takes.
                    calibration = braid_round(tools, plan, inputs, t, 1)[0]
                braid.append(braid_round(tools, plan, inputs, t, args.repeat,
                                         calibration))
                ort_.append(ort_round(python, onnx_path, inputs, t, args.repeat))
            row = {
                "model": model, "threads": t,
                "braid_ms": statistics.median(b for b, _ in braid),
                "ort_ms": statistics.median(o for o, _ in ort_),
                "braid_rss_mib": max(r for _, r in braid),
                "ort_rss_mib": max(r for _, r in ort_),
            }
            row["ratio"] = row["ort_ms"] / row["braid_ms"]
            rows.append(row)
            print(f"{WHO}: {model} at {t} thread(s): Braid {row['braid_ms']:.3f}"
                  f" ms, onnxruntime {row['ort_ms']:.3f} ms "
                  f"({time.perf_counter() - started:.0f} s so far)",
                  file=sys.stderr, flush=True)

    print()
    print("| model | threads | Braid ms | onnxruntime ms | onnxruntime / Braid"
          " | Braid peak RSS MiB | onnxruntime peak RSS MiB | RSS ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['threads']} | {r['braid_ms']:.3f} | "
              f"{r['ort_ms']:.3f} | {r['ratio']:.3f}x | "
              f"{r['braid_rss_mib']:.0f} | {r['ort_rss_mib']:.0f} | "
              f"{r['braid_rss_mib'] / r['ort_rss_mib']:.2f} |")
    for model in dict.fromkeys(r["model"] for r in rows):
        by = {r["threads"]: r["braid_ms"] for r in rows if r["model"] == model}
        if 1 in by and 2 in by:
            print(f"{model}: Braid 2 threads / 1 thread speed-up "
                  f"{by[1] / by[2]:.2f}x")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
