#!/usr/bin/env python3
"""PyTorch's bf16 mixed-precision training curves, for braidc --precision bf16.

Writes <name>/training/losses_<optimizer>_bf16.csv (step,loss; 20 steps) for
the example language models given (default: gpt2, llama), on the batches and
hyperparameters of make_training_reference.py, trained the way Megatron-LM's
--bf16 does and braid-mixed-precision compiles: every parameter and float
buffer cast to bf16 for the forward and backward pass (torch.func's
functional_call over the cast tensors, so the gradients arrive in f32 on the
f32 parameters through the casts), the logits cast to f32 for the loss, the
optimizer on the f32 parameters.

    .venv-export/bin/python examples/models/make_bf16_reference.py [names]

Deterministic (one thread, deterministic algorithms). PyTorch rounds after
every eager op as Braid's kernels do, but its modules keep some steps in f32
that Braid's ONNX graph runs in bf16 (Hugging Face's RMSNorm upcasts; the
exported graph does not): the curves agree to bf16's noise, not bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402
import make_training_reference as ref  # noqa: E402


def train_bf16(name: str, kind: str, tokens, b: int, s: int) -> list[float]:
    model = export.build(name)
    named = dict(model.named_parameters())
    params = list(named.values())
    opt = ref.make_optimizer(kind, params)
    clip = ref.OPTIMIZERS[kind]["clip_grad_norm"]
    buffers = {n: (t.to(torch.bfloat16) if t.is_floating_point() else t)
               for n, t in model.named_buffers()}
    losses = []
    for t in range(ref.STEPS):
        ids, labels = ref.batch(tokens, t, b, s)
        opt.zero_grad(set_to_none=True)
        cast = {n: p.to(torch.bfloat16) for n, p in named.items()}
        logits = torch.func.functional_call(model, {**cast, **buffers}, (ids,))
        if logits.dtype != torch.bfloat16:
            raise RuntimeError(f"{name}: the logits are {logits.dtype}, not bf16")
        loss = ref.lm_loss(logits.float(), labels)
        if not torch.isfinite(loss):
            raise RuntimeError(f"{name} {kind}: loss {loss.item()} at step {t}")
        losses.append(loss.item())
        loss.backward()
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        if clip:
            torch.nn.utils.clip_grad_norm_(params, max_norm=clip["max_norm"],
                                           norm_type=clip["norm_type"])
        opt.step()
    return losses


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", default=["gpt2", "llama"])
    ap.add_argument("--optimizers", default="adamw")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    tokens = ref.write_token_file()
    for name in args.names:
        config = os.path.join(export.HERE, name, "training", "config.json")
        if not os.path.exists(config):
            ap.error(f"{name}: no training reference ({config}); run "
                     "make_training_reference.py first")
        with open(config) as f:
            data = json.load(f)
        for kind in args.optimizers.split(","):
            losses = train_bf16(name, kind, tokens, data["batch"], data["seq"])
            path = os.path.join(export.HERE, name, "training",
                                f"losses_{kind}_bf16.csv")
            ref.write_csv(path, losses)
            print(f"[bf16] {name} {kind}: loss {losses[0]:.6f} -> {losses[-1]:.6f}"
                  f"  ({os.path.relpath(path, ref.REPO)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
