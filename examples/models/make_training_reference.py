#!/usr/bin/env python3
"""PyTorch training references for the language models of examples/models/.

Braid's training (reverse-mode autodiff, SGD/AdamW, the runtime's training
loop) must give PyTorch's numbers.  This script writes, per LM folder
(every model of export.MODELS whose input is token ids and that has a folder):

    <name>/training/grads_step0.safetensors  loss gradient of every trainable
                                             ONNX initializer at step 0 (f32,
                                             keyed by initializer name)
    <name>/training/loss_step0.txt           the step-0 loss (repr of the f32)
    <name>/training/losses_sgd.csv           step,loss for 20 steps of SGD
    <name>/training/losses_adamw.csv         ... of AdamW
    <name>/training/losses_adamw_clip.csv    ... of AdamW after clip_grad_norm_
    <name>/training/losses_*_torch_skip.csv  (MoE only) unused experts skipped
    <name>/training/param_map.json           initializer -> torch parameter
    <name>/training/aliases.json             initializers sharing a parameter
    <name>/training/non_parameters.json      initializers that are constants
    <name>/training/config.json              the data contract, hyperparameters

and the token file examples/data/gpl3.bin (+ README.md) they all read.  The
torch models are rebuilt by export.build (same seed, same weights as the
exported ONNX); every initializer is matched to a torch parameter by value,
and the gradients are checked against the tied torch model, the logits and the
loss against onnxruntime on the .onnx (see README.md, "Training references").

    .venv-export/bin/python examples/models/make_training_reference.py         # all
    .venv-export/bin/python examples/models/make_training_reference.py gpt2    # some

Deterministic: one torch thread, one onnxruntime thread, no randomness in the
models (eval mode; the script checks that the RNG state does not move), so a
rerun writes the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from safetensors.numpy import save_file
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402

HERE = export.HERE
REPO = os.path.dirname(os.path.dirname(HERE))

# ----------------------------------------------------------------------------
# The data contract (Braid's runtime implements exactly this)
# ----------------------------------------------------------------------------

TOKEN_SOURCE = "/usr/share/common-licenses/GPL-3"
TOKEN_SOURCE_SHA256 = "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986"
TOKEN_SOURCE_SIZE = 35149
TOKEN_FILE = os.path.join(REPO, "examples", "data", "gpl3.bin")
TOKEN_FILE_REL = "examples/data/gpl3.bin"

STEPS = 20

ADAMW = {
    "optimizer": "torch.optim.AdamW",
    "lr": 1e-3,
    "betas": [0.9, 0.95],
    "eps": 1e-8,
    "weight_decay": 0.1,
    "amsgrad": False,
}

OPTIMIZERS = {
    "sgd": {
        "optimizer": "torch.optim.SGD",
        "lr": 0.05,
        "momentum": 0.9,
        "dampening": 0.0,
        "nesterov": False,
        "weight_decay": 0.0,
        "clip_grad_norm": None,
    },
    "adamw": {**ADAMW, "clip_grad_norm": None},
    # clip_grad_norm_(params, max_norm) before each step: global L2 norm.
    "adamw_clip": {**ADAMW, "clip_grad_norm": {"max_norm": 0.5, "norm_type": 2.0}},
}

# Relative tolerances of the checks (max |a - b| / max |b|).
LOGITS_REL_TOL = 1e-4
LOSS_REL_TOL = 1e-5
GRAD_SUM_REL_TOL = 1e-5

# The LM folders: token-id input, a folder on disk.
LM_MODELS = [
    n for n, (_, kind, _) in export.MODELS.items() if kind == "tokens" and n not in export.KNOWN_EXPORT_FAILURES
]


def write_token_file() -> np.ndarray:
    """examples/data/gpl3.bin: each byte of GPL-3 one token id, little-endian
    uint16 (nanoGPT's .bin layout), and a README.md recording the source."""
    with open(TOKEN_SOURCE, "rb") as f:
        raw = f.read()
    sha = hashlib.sha256(raw).hexdigest()
    if len(raw) != TOKEN_SOURCE_SIZE or sha != TOKEN_SOURCE_SHA256:
        raise RuntimeError(
            f"{TOKEN_SOURCE}: {len(raw)} bytes, sha256 {sha}; expected {TOKEN_SOURCE_SIZE} bytes, "
            f"sha256 {TOKEN_SOURCE_SHA256} (Debian base-files)"
        )
    tokens = np.frombuffer(raw, dtype=np.uint8).astype("<u2")
    os.makedirs(os.path.dirname(TOKEN_FILE), exist_ok=True)
    data = tokens.tobytes()
    with open(TOKEN_FILE, "wb") as f:
        f.write(data)
    readme = f"""# examples/data/

`gpl3.bin` — the training tokens of the example models' training references
(`examples/models/make_training_reference.py`, which writes this folder).

- Source: `{TOKEN_SOURCE}` from the Debian package `base-files`,
  {TOKEN_SOURCE_SIZE} bytes, sha256 `{TOKEN_SOURCE_SHA256}`.
- Layout (nanoGPT's `.bin`): one token per source byte, the byte's value as a
  little-endian **uint16**; no header. {len(tokens)} tokens, {len(data)} bytes,
  sha256 `{hashlib.sha256(data).hexdigest()}`.
  Read it with `np.fromfile("gpl3.bin", dtype="<u2")`.
- Every token id is < 256, inside every example model's vocabulary (1000).

How a training step reads it is in `examples/models/README.md`
("Training references"): step t, batch row b reads window w = t*B + b,
`x = tokens[w*S : w*S + S + 1]`, `input_ids = x[:-1]`, `labels = x[1:]`.
"""
    with open(os.path.join(os.path.dirname(TOKEN_FILE), "README.md"), "w") as f:
        f.write(readme)
    return tokens


def batch(tokens: np.ndarray, step: int, b: int, s: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, labels), both int64 [b, s], of training step `step`."""
    rows = []
    for r in range(b):
        w = step * b + r
        x = tokens[w * s : w * s + s + 1].astype(np.int64)
        if len(x) != s + 1:
            raise RuntimeError(f"token file too short for step {step} (window {w})")
        rows.append(x)
    xs = np.stack(rows)
    return torch.from_numpy(xs[:, :-1].copy()), torch.from_numpy(xs[:, 1:].copy())


def lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Next-token cross entropy, mean over all B*S positions."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


# ----------------------------------------------------------------------------
# Initializers -> torch parameters
# ----------------------------------------------------------------------------


class Mapping:
    """How the ONNX initializers of one model relate to its torch parameters.

    entries: initializer name -> dict with
      torch      canonical name of the torch parameter (first in named_parameters)
      transform  "identity" (initializer == parameter), "transpose"
                 (initializer == parameter.T), or "gather" (initializer ==
                 parameter[indices], rows of an embedding table picked by
                 constant indices the exporter folded)
      indices    (gather only) the row indices, shape = initializer shape[:-1]
      use        "module.attribute": which use of a tied parameter this
                 initializer is (None: a tied parameter held by this one
                 initializer, all its uses); the parameter itself if untied
    non_params: initializer names that are no parameter (constants).
    """

    def __init__(self) -> None:
        self.entries: dict[str, dict] = {}
        self.non_params: list[str] = []


def unique_params(model: nn.Module) -> dict[str, nn.Parameter]:
    return dict(model.named_parameters())


def param_owners(model: nn.Module) -> dict[int, list[tuple[str, str, nn.Module]]]:
    """id(parameter) -> [(module name, attribute, module)] of every module holding it."""
    owners: dict[int, list[tuple[str, str, nn.Module]]] = {}
    for mname, mod in model.named_modules(remove_duplicate=False):
        for attr, p in mod.named_parameters(recurse=False, remove_duplicate=False):
            owners.setdefault(id(p), []).append((mname, attr, mod))
    return owners


def consumers(graph: onnx.GraphProto) -> dict[str, list[str]]:
    """value name -> op types of the nodes reading it (top-level graph)."""
    out: dict[str, list[str]] = {}
    for node in graph.node:
        for i in node.input:
            out.setdefault(i, []).append(node.op_type)
    return out


def match_gather(a: np.ndarray, p: np.ndarray) -> np.ndarray | None:
    """Row indices idx with a == p[idx], if every row of `a` is a row of `p`."""
    if p.ndim != 2 or a.ndim < 2 or a.shape[-1] != p.shape[1] or a.dtype != p.dtype:
        return None
    rows = a.reshape(-1, a.shape[-1])
    idx = []
    for r in rows:
        hit = np.nonzero(np.all(p == r, axis=1))[0]
        if len(hit) != 1:
            return None
        idx.append(int(hit[0]))
    return np.array(idx, dtype=np.int64).reshape(a.shape[:-1])


def map_initializers(name: str, m: onnx.ModelProto, model: nn.Module) -> Mapping:
    """Match every initializer to a torch parameter by value (exactly)."""
    params = unique_params(model)
    owners = param_owners(model)
    cons = consumers(m.graph)
    mp = Mapping()
    for init in m.graph.initializer:
        a = numpy_helper.to_array(init)
        hits = []
        for pname, p in params.items():
            pv = p.detach().numpy()
            if pv.shape == a.shape and np.array_equal(pv, a):
                hits.append((pname, "identity", None))
            if pv.ndim == 2 and pv.shape[::-1] == a.shape and np.array_equal(pv.T, a):
                hits.append((pname, "transpose", None))
        if not hits and a.dtype == np.float32 and a.ndim >= 2:
            for pname, p in params.items():
                idx = match_gather(a, p.detach().numpy())
                if idx is not None:
                    hits.append((pname, "gather", idx))
        if len(hits) > 1:
            raise RuntimeError(f"{name}: initializer {init.name} matches several parameters: {hits}")
        if not hits:
            mp.non_params.append(init.name)
            continue
        pname, transform, idx = hits[0]
        mods = owners[id(params[pname])]
        entry = {"torch": pname, "transform": transform, "shape": list(a.shape),
                 "torch_shape": list(params[pname].shape)}
        if idx is not None:
            entry["indices"] = idx.tolist()
        # Which torch use of a tied parameter this initializer is, by the
        # consuming op (Gather: the embedding lookup; MatMul/Gemm: the linear
        # layer); settled below for parameters held by one initializer.
        ops = set(cons.get(init.name, []))
        kinds = {"embedding": nn.Embedding, "linear": nn.Linear}
        want = "embedding" if ops <= {"Gather"} else "linear" if ops <= {"MatMul", "Gemm", "Transpose"} else None
        cands = [f"{mn}.{attr}" for mn, attr, mod in mods if want and isinstance(mod, kinds[want])]
        entry["use"] = cands[0] if len(cands) == 1 else None
        entry["_owners"] = [f"{mn}.{attr}" for mn, attr, _ in mods]
        mp.entries[init.name] = entry

    # Every parameter must be held by some initializer.
    held = {e["torch"] for e in mp.entries.values()}
    missing = [p for p in params if p not in held]
    if missing:
        raise RuntimeError(f"{name}: torch parameters with no ONNX initializer: {missing}")
    # Several initializers of one tied parameter must be distinct uses.
    by_param: dict[str, list[str]] = {}
    for iname, e in mp.entries.items():
        by_param.setdefault(e["torch"], []).append(iname)
    for pname, inames in by_param.items():
        for i in inames:
            e = mp.entries[i]
            owners_i = e.pop("_owners")
            if len(inames) == 1:
                # The parameter as a whole: every torch use of it.
                e["use"] = owners_i[0] if len(owners_i) == 1 else None
            elif e["use"] is None or e["transform"] == "gather":
                raise RuntimeError(f"{name}: cannot tell which use of tied {pname} initializer {i} is "
                                   f"(owners {owners_i})")
        uses = [mp.entries[i]["use"] for i in inames]
        if len(set(uses)) != len(uses):
            raise RuntimeError(f"{name}: initializers {inames} of {pname} are the same use {uses}")
    return mp


def alias_groups(mp: Mapping) -> dict[str, list[str]]:
    """torch parameter -> its initializers, where there are several."""
    by_param: dict[str, list[str]] = {}
    for iname, e in mp.entries.items():
        by_param.setdefault(e["torch"], []).append(iname)
    return {p: names for p, names in by_param.items() if len(names) > 1}


def to_initializer(entry: dict, value: np.ndarray) -> np.ndarray:
    """The initializer's value from its torch parameter's value."""
    if entry["transform"] == "identity":
        return np.ascontiguousarray(value)
    if entry["transform"] == "transpose":
        return np.ascontiguousarray(value.T)
    return np.ascontiguousarray(value[np.array(entry["indices"], dtype=np.int64)])


def to_torch_grad(entry: dict, grad: np.ndarray, torch_shape: list[int]) -> np.ndarray:
    """An initializer's own gradient as a contribution to its parameter's gradient."""
    if entry["transform"] == "identity":
        return grad.astype(np.float64)
    if entry["transform"] == "transpose":
        return grad.T.astype(np.float64)
    out = np.zeros(torch_shape, dtype=np.float64)
    idx = np.array(entry["indices"], dtype=np.int64).reshape(-1)
    np.add.at(out, idx, grad.reshape(len(idx), -1).astype(np.float64))
    return out


# ----------------------------------------------------------------------------
# Determinism guards
# ----------------------------------------------------------------------------


def dropout_settings(model: nn.Module) -> dict:
    """Every dropout-like setting of the Hugging Face config, for the record;
    fails unless every module is in eval mode (which turns them all off)."""
    cfg = model.lm.config
    found = {}
    for k, v in sorted(cfg.to_dict().items()):
        if ("dropout" in k or "pdrop" in k or "jitter" in k) and isinstance(v, (int, float)):
            found[k] = v
    if any(mod.training for mod in model.modules()):
        raise RuntimeError("model not in eval mode")
    for mod in model.modules():
        if isinstance(mod, nn.Dropout) and mod.p != 0.0 and mod.training:
            raise RuntimeError(f"active dropout {mod}")
    return found


def forward_loss(model: nn.Module, ids: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward pass; fails if anything drew from torch's random generator."""
    rng = torch.get_rng_state()
    logits = model(ids)
    if not torch.equal(rng, torch.get_rng_state()):
        raise RuntimeError("the forward pass used torch's random generator")
    return logits, lm_loss(logits, labels)


# ----------------------------------------------------------------------------
# Gradients of step 0
# ----------------------------------------------------------------------------


def use_site(model: nn.Module, use: str) -> tuple[nn.Module, str]:
    """(module, attribute) of a use "module.path.attribute"."""
    mname, attr = use.rsplit(".", 1)
    return model.get_submodule(mname), attr


def untie(model: nn.Module, mp: Mapping) -> None:
    """Give each use of a parameter held by several initializers its own copy,
    so that each initializer's own gradient (its use's contribution) appears."""
    for inames in alias_groups(mp).values():
        for iname in inames[1:]:
            mod, attr = use_site(model, mp.entries[iname]["use"])
            setattr(mod, attr, nn.Parameter(getattr(mod, attr).detach().clone()))


def step0_gradients(name: str, mp: Mapping, ids: torch.Tensor, labels: torch.Tensor, log) -> tuple[float, dict]:
    """The step-0 loss and each trainable initializer's own gradient."""
    # The model as trained (ties intact): the reference of the sums.
    model = export.build(name)
    _, loss = forward_loss(model, ids, labels)
    loss.backward()
    tied = {n: (p.grad.detach().numpy().copy() if p.grad is not None else None)
            for n, p in unique_params(model).items()}

    # Untied, with the gathered initializers' values captured as tensors.
    model_u = export.build(name)
    untie(model_u, mp)
    captured: dict[str, torch.Tensor] = {}
    handles = []
    for iname, e in mp.entries.items():
        if e["transform"] != "gather":
            continue

        def hook(mod, args, out, iname=iname):
            if iname in captured:
                raise RuntimeError(f"{name}: {mod} ran twice; cannot attribute {iname}")
            out.retain_grad()
            captured[iname] = out
        handles.append(use_site(model_u, e["use"])[0].register_forward_hook(hook))
    _, loss_u = forward_loss(model_u, ids, labels)
    loss_u.backward()
    for h in handles:
        h.remove()
    if loss_u.item() != loss.item():
        raise RuntimeError(f"{name}: untied loss {loss_u.item()!r} != tied loss {loss.item()!r}")

    grads: dict[str, np.ndarray] = {}
    named_u = dict(model_u.named_parameters(remove_duplicate=False))
    grouped = {i for inames in alias_groups(mp).values() for i in inames}
    for iname, e in mp.entries.items():
        if e["transform"] == "gather":
            t = captured[iname]
            if not np.array_equal(t.detach().numpy(), to_initializer(e, named_u[e["torch"]].detach().numpy())):
                raise RuntimeError(f"{name}: captured value of {iname} differs from the initializer")
            g = t.grad
        elif iname in grouped:
            mod, attr = use_site(model_u, e["use"])
            g = getattr(mod, attr).grad
        else:
            g = named_u[e["torch"]].grad
        if g is None:
            g = torch.zeros(e["shape"] if e["transform"] == "gather" else e["torch_shape"])
            log(f"  {iname}: no gradient at all (written as zeros)")
        gn = g.detach().numpy()
        grads[iname] = to_initializer({**e, "transform": "identity"} if e["transform"] == "gather" else e, gn)

    # Sum over each parameter's initializers == the tied torch gradient.
    sums: dict[str, np.ndarray] = {}
    for iname, e in mp.entries.items():
        c = to_torch_grad(e, grads[iname], e["torch_shape"])
        sums[e["torch"]] = sums.get(e["torch"], 0) + c
    worst = 0.0
    for pname, want in tied.items():
        want = np.zeros(sums[pname].shape) if want is None else want.astype(np.float64)
        err = float(np.max(np.abs(sums[pname] - want)))
        rel = err / max(float(np.max(np.abs(want))), 1e-30)
        if err > 0 and rel > GRAD_SUM_REL_TOL:
            raise RuntimeError(f"{name}: gradient of {pname}: sum over initializers differs from torch's by {rel:.3e}")
        worst = max(worst, rel if err > 0 else 0.0)
    log(f"  gradients: sum over each parameter's initializers vs torch: max relative diff {worst:.3e}")
    return loss.item(), grads


# ----------------------------------------------------------------------------
# onnxruntime checks
# ----------------------------------------------------------------------------


def ort_logits(m: onnx.ModelProto, ids: np.ndarray, replace: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Run the model (optionally with some initializers replaced) on `ids`."""
    if replace:
        m = onnx.ModelProto.FromString(m.SerializeToString())
        for init in m.graph.initializer:
            if init.name in replace:
                init.CopyFrom(numpy_helper.from_array(replace[init.name], name=init.name))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {m.graph.input[0].name: ids})
    return y


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    if got.shape != want.shape:
        raise RuntimeError(f"shape {got.shape} vs {want.shape}")
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    return err / max(float(np.max(np.abs(want))), 1e-30)


def check_against_ort(name: str, m: onnx.ModelProto, model: nn.Module, mp: Mapping,
                      ids: torch.Tensor, labels: torch.Tensor, what: str, log) -> None:
    """onnxruntime on the .onnx, with the initializers made from `model`'s
    current parameters, gives torch's logits and loss on (ids, labels)."""
    named = dict(model.named_parameters())
    replace = {i: to_initializer(e, named[e["torch"]].detach().numpy()) for i, e in mp.entries.items()}
    y = ort_logits(m, ids.numpy(), replace)
    with torch.no_grad():
        want, loss = forward_loss(model, ids, labels)
    r = rel_err(y, want.numpy())
    ort_loss = lm_loss(torch.from_numpy(y), labels).item()
    lr = abs(ort_loss - loss.item()) / abs(loss.item())
    log(f"  onnxruntime vs torch ({what}): logits max rel err {r:.3e}, loss {ort_loss!r} vs {loss.item()!r} "
        f"(rel {lr:.3e})")
    if r > LOGITS_REL_TOL or lr > LOSS_REL_TOL:
        raise RuntimeError(f"{name}: onnxruntime disagrees with torch ({what})")


# ----------------------------------------------------------------------------
# Training runs
# ----------------------------------------------------------------------------


def make_optimizer(kind: str, params: list[nn.Parameter]) -> torch.optim.Optimizer:
    h = OPTIMIZERS[kind]
    if h["optimizer"] == "torch.optim.SGD":
        return torch.optim.SGD(params, lr=h["lr"], momentum=h["momentum"], dampening=h["dampening"],
                               nesterov=h["nesterov"], weight_decay=h["weight_decay"])
    return torch.optim.AdamW(params, lr=h["lr"], betas=tuple(h["betas"]), eps=h["eps"],
                             weight_decay=h["weight_decay"], amsgrad=h["amsgrad"])


def train(name: str, kind: str, tokens: np.ndarray, b: int, s: int,
          unused: str = "zero") -> tuple[list[float], nn.Module, list]:
    """STEPS steps from the initial weights; the loss of each step before its
    update.  Also returns the trained model and, per step, the parameters that
    got no gradient (an MoE expert no token was routed to: Hugging Face's
    Python loop over the hit experts leaves them out of the autograd graph).

    unused="zero": such a parameter gets a zero gradient (what differentiating
    the ONNX graph gives), so the optimizer still updates it (momentum, Adam
    moments, weight decay).  unused="skip": left as None, as plain torch
    training does: SGD and AdamW skip it entirely that step."""
    model = export.build(name)
    params = list(model.parameters())
    names = [n for n, _ in model.named_parameters()]
    opt = make_optimizer(kind, params)
    clip = OPTIMIZERS[kind]["clip_grad_norm"]
    losses, no_grad = [], []
    for t in range(STEPS):
        ids, labels = batch(tokens, t, b, s)
        opt.zero_grad(set_to_none=True)
        _, loss = forward_loss(model, ids, labels)
        if not torch.isfinite(loss):
            raise RuntimeError(f"{name} {kind}: loss {loss.item()} at step {t}")
        losses.append(loss.item())
        loss.backward()
        none = [n for n, p in zip(names, params) if p.grad is None]
        if none:
            no_grad.append((t, none))
        if unused == "zero":
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
        if clip:
            torch.nn.utils.clip_grad_norm_(params, max_norm=clip["max_norm"], norm_type=clip["norm_type"])
        opt.step()
    return losses, model, no_grad


# ----------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------


def write_json(path: str, obj, one_line_items: bool = False) -> None:
    """Indented JSON; with one_line_items, a top-level object or list with
    each of its items on one line."""
    with open(path, "w") as f:
        if not one_line_items or not obj:
            json.dump(obj, f, indent=1)
        elif isinstance(obj, dict):
            f.write("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in obj.items()) + "\n}")
        else:
            f.write("[\n" + ",\n".join(f" {json.dumps(v)}" for v in obj) + "\n]")
        f.write("\n")


def write_csv(path: str, losses: list[float]) -> None:
    with open(path, "w") as f:
        f.write("step,loss\n")
        for t, v in enumerate(losses):
            f.write(f"{t},{v!r}\n")


def make(name: str, tokens: np.ndarray) -> dict:
    def log(msg: str) -> None:
        print(f"[training] {name}: {msg.strip()}", flush=True)

    path = os.path.join(HERE, name, "model.onnx")
    m = onnx.load(path)
    assert len(m.graph.input) == 1 and len(m.graph.output) == 1
    shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    b, s = shape
    model = export.build(name)
    drop = dropout_settings(model)
    mp = map_initializers(name, m, model)
    groups = alias_groups(mp)
    n_tr = sum(1 for e in mp.entries.values() if e["transform"] == "transpose")
    derived = [i for i, e in mp.entries.items() if e["transform"] == "gather"]
    log(f"{len(m.graph.initializer)} initializers: {len(mp.entries)} parameters "
        f"({n_tr} transposed, {len(derived)} gathered {derived}), {len(mp.non_params)} constants; "
        f"{len(unique_params(model))} torch parameters; alias groups {groups}")

    ids0, labels0 = batch(tokens, 0, b, s)
    check_against_ort(name, m, model, mp, ids0, labels0, "initial weights, step-0 batch", log)
    loss0, grads = step0_gradients(name, mp, ids0, labels0, log)
    zero = [i for i, g in grads.items() if not np.any(g)]
    log(f"  step-0 loss {loss0!r}; all-zero gradients: {zero or 'none'}")

    runs = {}
    for kind in OPTIMIZERS:
        losses, trained, no_grad = train(name, kind, tokens, b, s)
        if losses[0] != loss0:
            raise RuntimeError(f"{name} {kind}: step-0 loss {losses[0]!r} != {loss0!r}")
        runs[kind] = (losses, no_grad)
        log(f"  {kind}: loss {losses[0]!r} -> {losses[-1]!r} (step {STEPS - 1}); steps with parameters that got "
            f"no gradient: {[t for t, _ in no_grad] or 'none'}")
        # The mapping is complete (no parameter hides in a constant, no
        # transform is wrong): onnxruntime with the trained weights agrees.
        ids_t, labels_t = batch(tokens, STEPS, b, s)
        check_against_ort(name, m, trained, mp, ids_t, labels_t, f"weights after {STEPS} {kind} steps", log)
    # Where some parameter had no gradient, plain torch (which skips it) differs.
    skip_runs = {}
    if any(no_grad for _, no_grad in runs.values()):
        for kind in OPTIMIZERS:
            losses, _, _ = train(name, kind, tokens, b, s, unused="skip")
            skip_runs[kind] = losses
            diff = max(abs(a - z) for a, z in zip(losses, runs[kind][0]))
            log(f"  {kind}, unused parameters skipped (torch's default): loss {losses[-1]!r} at step {STEPS - 1}; "
                f"max |difference| from zero gradients {diff:.3e}")

    out = os.path.join(HERE, name, "training")
    os.makedirs(out, exist_ok=True)
    # One metadata key: safetensors writes several in a random order.
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in grads.items()},
              os.path.join(out, "grads_step0.safetensors"), metadata={"loss": repr(loss0)})
    with open(os.path.join(out, "loss_step0.txt"), "w") as f:
        f.write(f"{loss0!r}\n")
    for kind, (losses, _) in runs.items():
        write_csv(os.path.join(out, f"losses_{kind}.csv"), losses)
    for kind, losses in skip_runs.items():
        write_csv(os.path.join(out, f"losses_{kind}_torch_skip.csv"), losses)

    write_json(os.path.join(out, "param_map.json"), {
        i: {k: e[k] for k in ("torch", "transform", "shape", "torch_shape", "use", "indices") if k in e}
        for i, e in mp.entries.items()
    }, one_line_items=True)
    ties = []
    owners = param_owners(model)
    for pname, p in unique_params(model).items():
        uses = [f"{mn}.{attr}" for mn, attr, _ in owners[id(p)]]
        if len(uses) > 1:
            ties.append({"torch": pname, "torch_uses": uses,
                         "initializers": [i for i, e in mp.entries.items() if e["torch"] == pname]})
    write_json(os.path.join(out, "aliases.json"), {
        "groups": [
            {"torch": p, "initializers": [{"name": i, "transform": mp.entries[i]["transform"],
                                           "use": mp.entries[i]["use"]} for i in inames]}
            for p, inames in groups.items()
        ],
        "gathered": [
            {"name": i, "torch": mp.entries[i]["torch"],
             "rows": sorted(set(np.array(mp.entries[i]["indices"]).ravel().tolist()))}
            for i in derived
        ],
        "torch_ties": ties,
    })
    cons = consumers(m.graph)
    inits = {i.name: i for i in m.graph.initializer}
    write_json(os.path.join(out, "non_parameters.json"), [
        {"name": i, "dtype": onnx.helper.tensor_dtype_to_np_dtype(inits[i].data_type).name,
         "shape": list(inits[i].dims), "consumers": sorted(set(cons.get(i, [])))}
        for i in mp.non_params
    ], one_line_items=True)
    write_json(os.path.join(out, "config.json"), {
        "model": name,
        "onnx": f"examples/models/{name}/model.onnx",
        "tokens": {"file": TOKEN_FILE_REL, "dtype": "uint16 little-endian",
                   "source": TOKEN_SOURCE, "source_sha256": TOKEN_SOURCE_SHA256},
        "batch": b, "seq": s, "vocab": int(m.graph.output[0].type.tensor_type.shape.dim[-1].dim_value),
        "window": "step t, row b: w = t*B + b; x = tokens[w*S : w*S + S + 1]; input_ids = x[:-1]; labels = x[1:]",
        "loss": "F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1)): mean over all B*S positions",
        "mode": "eval (no dropout), gradients enabled, float32, 1 torch thread",
        "dropout_config": drop,
        "steps": STEPS,
        "loss_recorded": "loss of step t computed before step t's update",
        "optimizers": OPTIMIZERS,
        "weight_decay_applies_to": "every torch parameter (biases, norms, embeddings included), once per torch "
                                   "parameter (tied parameters once)",
        "clip_norm_over": "the gradients of the torch parameters (tied: the sum over the initializers)",
        "unused_parameters": "a parameter with no gradient in a step (an MoE expert no token was routed to) gets "
                             "a zero gradient: the optimizer still updates it (momentum, Adam moments, decay); "
                             "losses_<optimizer>_torch_skip.csv, where present, are torch's default instead "
                             "(zero_grad(set_to_none=True) leaves it None and the optimizer skips it)",
        "params_without_grad": {k: [{"step": t, "params": p} for t, p in sk] for k, (_, sk) in runs.items()},
        "all_zero_step0_gradients": zero,
        "versions": {"torch": torch.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__},
    })
    return {"loss0": loss0, "final": {k: v[0][-1] for k, v in runs.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"models (default: all of {', '.join(LM_MODELS)})")
    args = ap.parse_args()
    names = args.names or LM_MODELS
    for n in names:
        if n not in LM_MODELS:
            ap.error(f"unknown model {n!r} (the LMs: {', '.join(LM_MODELS)})")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    tokens = write_token_file()
    summary = {n: make(n, tokens) for n in names}
    last = f" step {STEPS - 1}"
    print(f"[training] {'model':21s} {'loss step 0':>12s}  " + "  ".join(f"{k + last:>20s}" for k in OPTIMIZERS))
    for n, r in summary.items():
        print(f"[training] {n:21s} {r['loss0']:12.6f}  " + "  ".join(f"{r['final'][k]:20.6f}" for k in OPTIMIZERS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
