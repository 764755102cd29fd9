#!/usr/bin/env python3
"""Export the tiny example models of examples/models/ to ONNX.

Every model is built from a configuration with random weights (no download):
torch.manual_seed(SEED) right before each model is constructed, so the same
versions (requirements-export.txt) give the same weights every time, and
make_reference.py can rebuild the very same torch model to check onnxruntime
against it.

    .venv-export/bin/python examples/models/export.py            # all models
    .venv-export/bin/python examples/models/export.py gpt2 llama # some

Writes examples/models/<name>/model.onnx (weights inside the file), plus
mlp_external/model.onnx + model.data (the mlp with its weights as external
data), and examples/models/manifest.json (which exporter, which opset, the
versions used, and the error of any exporter that failed).

All shapes are static (no dynamic_axes / dynamic_shapes), no KV cache, and
the only output is the logits (or the MLP's output).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import warnings

import numpy as np
import onnx
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 0
VOCAB = 1000
BATCH, SEQ = 2, 16


# ----------------------------------------------------------------------------
# Models
# ----------------------------------------------------------------------------


class TinyMLP(nn.Module):
    """LayerNorm -> Linear 64->256 -> GELU (erf) -> Linear 256->64, plus residual."""

    def __init__(self, d: int = 64, hidden: int = 256):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class LogitsOnly(nn.Module):
    """Wraps a Hugging Face causal LM so that input_ids -> logits is the whole graph."""

    def __init__(self, lm: nn.Module):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.lm(input_ids=input_ids, use_cache=False, return_dict=False)[0]


def build_mlp() -> nn.Module:
    return TinyMLP()


def build_gpt2(attn: str) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_positions=64,
        n_embd=64,
        n_layer=2,
        n_head=4,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        attn_implementation=attn,
    )
    lm = GPT2LMHeadModel(cfg)
    assert lm.config._attn_implementation == attn, lm.config._attn_implementation
    return LogitsOnly(lm)


def build_llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # GQA: 2 query heads per kv head
        max_position_embeddings=64,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        attn_implementation="sdpa",
    )
    return LogitsOnly(LlamaForCausalLM(cfg))


def build_mixtral() -> nn.Module:
    from transformers import MixtralConfig, MixtralForCausalLM

    cfg = MixtralConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        max_position_embeddings=64,
        sliding_window=None,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        output_router_logits=False,
        attn_implementation="eager",
    )
    return LogitsOnly(MixtralForCausalLM(cfg))


def build_qwen2() -> nn.Module:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # GQA; q/k/v projections have biases
        max_position_embeddings=64,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        use_sliding_window=False,
        attn_implementation="sdpa",
    )
    return LogitsOnly(Qwen2ForCausalLM(cfg))


def build_phi3() -> nn.Module:
    from transformers import Phi3Config, Phi3ForCausalLM

    cfg = Phi3Config(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        # Fused qkv_proj [64 -> 4*16 + 2*16 + 2*16 = 128]: q, k, v parts of
        # unequal widths (64, 32, 32).  Fused gate_up_proj [64 -> 256].
        num_key_value_heads=2,
        max_position_embeddings=64,
        original_max_position_embeddings=64,
        rope_scaling=None,
        sliding_window=None,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        # The defaults (32000) are out of range for a 1000-token vocabulary.
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation="sdpa",
    )
    return LogitsOnly(Phi3ForCausalLM(cfg))


def build_opt() -> nn.Module:
    from transformers import OPTConfig, OPTForCausalLM

    cfg = OPTConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        ffn_dim=128,
        num_attention_heads=4,
        max_position_embeddings=64,  # learned positions (table of 64 + 2 offset rows)
        do_layer_norm_before=True,
        word_embed_proj_dim=64,  # = hidden: no project_in/project_out
        dropout=0.0,
        attention_dropout=0.0,
        activation_function="relu",
        enable_bias=True,
        layer_norm_elementwise_affine=True,
        tie_word_embeddings=True,  # OPT's default: lm_head shares embed_tokens
        attn_implementation="eager",
    )
    return LogitsOnly(OPTForCausalLM(cfg))


class MaskedLMLogits(nn.Module):
    """Wraps a Hugging Face masked LM so that input_ids -> MLM logits is the
    whole graph: no attention mask (all tokens attend to all), token_type_ids
    all zeros (made here, not an input)."""

    def __init__(self, lm: nn.Module):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        token_type_ids = torch.zeros_like(input_ids)
        return self.lm(input_ids=input_ids, token_type_ids=token_type_ids, return_dict=False)[0]


def build_bert() -> nn.Module:
    from transformers import BertConfig, BertForMaskedLM

    cfg = BertConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        hidden_act="gelu",  # erf form
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=64,
        type_vocab_size=2,
        pad_token_id=0,
        tie_word_embeddings=True,  # BERT's default: the MLM decoder shares word_embeddings
        attn_implementation="eager",
    )
    return MaskedLMLogits(BertForMaskedLM(cfg))


def build_qwen2moe() -> nn.Module:
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    cfg = Qwen2MoeConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,  # dense MLP size; unused (every layer is MoE)
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        use_sliding_window=False,
        num_experts=4,
        num_experts_per_tok=2,
        norm_topk_prob=False,  # Qwen2-MoE's default: top-2 weights not renormalised
        moe_intermediate_size=32,
        shared_expert_intermediate_size=64,
        decoder_sparse_step=1,
        mlp_only_layers=[],
        output_router_logits=False,
        attn_implementation="eager",
    )
    return LogitsOnly(Qwen2MoeForCausalLM(cfg))


# The models whose MoE blocks a trace unrolls over the experts it sees hit.
MOE_MODELS = {"mixtral", "qwen2moe_dynamo", "qwen2moe_torchscript"}

# Models that no exporter of theirs can export with these versions: export.py
# records the error in manifest.json, leaves no folder, and still succeeds.
# qwen2moe_dynamo: the MoE block's `.nonzero().tolist()` is data-dependent,
# as in mixtral.
KNOWN_EXPORT_FAILURES = {"qwen2moe_dynamo"}

# name -> (builder, input kind, exporters to try in order: (kind, opset))
MODELS = {
    "mlp": (build_mlp, "float", [("torchscript", 17)]),
    "gpt2": (lambda: build_gpt2("eager"), "tokens", [("torchscript", 17)]),
    "gpt2_sdpa": (lambda: build_gpt2("sdpa"), "tokens", [("torchscript", 17)]),
    "llama": (build_llama, "tokens", [("dynamo", 18), ("torchscript", 17)]),
    # dynamo is tried first to record why it cannot work here (the MoE block's
    # `.nonzero().tolist()` is data-dependent); TorchScript then traces it.
    "mixtral": (build_mixtral, "tokens", [("dynamo", 18), ("torchscript", 17)]),
    # One architecture, two folders: <arch>_dynamo/ and <arch>_torchscript/,
    # each with only its own exporter (no fallback).  Where an exporter fails,
    # there is no folder, and the error is in manifest.json.
    "qwen2_dynamo": (build_qwen2, "tokens", [("dynamo", 18)]),
    "qwen2_torchscript": (build_qwen2, "tokens", [("torchscript", 17)]),
    "phi3_dynamo": (build_phi3, "tokens", [("dynamo", 18)]),
    "phi3_torchscript": (build_phi3, "tokens", [("torchscript", 17)]),
    "opt_dynamo": (build_opt, "tokens", [("dynamo", 18)]),
    "opt_torchscript": (build_opt, "tokens", [("torchscript", 17)]),
    "bert_dynamo": (build_bert, "tokens", [("dynamo", 18)]),
    "bert_torchscript": (build_bert, "tokens", [("torchscript", 17)]),
    "qwen2moe_dynamo": (build_qwen2moe, "tokens", [("dynamo", 18)]),
    "qwen2moe_torchscript": (build_qwen2moe, "tokens", [("torchscript", 17)]),
}


def build(name: str) -> nn.Module:
    """The torch model `name`, with its deterministic random weights, in eval mode.

    Hugging Face (and torch, for LayerNorm) initialise norm weights to 1 and
    biases to 0.  A reference made with those would not catch an importer that
    drops a bias or a norm's scale, so every parameter that comes out of
    initialisation constant gets N(0, 0.1) noise added."""
    torch.manual_seed(SEED)
    model = MODELS[name][0]()
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and bool(p.min() == p.max()):
                p.add_(torch.randn_like(p) * 0.1)
    model.eval()
    return model


def input_spec(name: str):
    """(input name, numpy dtype, shape) of the model's only input."""
    if MODELS[name][1] == "float":
        return ("x", np.float32, (4, 64))
    return ("input_ids", np.int64, (BATCH, SEQ))


def output_name(name: str) -> str:
    return "y" if MODELS[name][1] == "float" else "logits"


def make_input(name: str, seed: int) -> np.ndarray:
    """A random input for `name` (token ids in [0, VOCAB) or N(0, 1) floats)."""
    _, dtype, shape = input_spec(name)
    rng = np.random.default_rng(seed)
    if dtype == np.int64:
        return rng.integers(0, VOCAB, size=shape, dtype=np.int64)
    return rng.standard_normal(shape).astype(np.float32)


# The input the exporters trace with; make_reference.py uses other seeds, so a
# graph that a trace specialised to this input would be caught there.
TRACE_SEED = 1234


# ----------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------


def check_all_experts_hit(model: nn.Module, example: torch.Tensor) -> None:
    """Mixtral's and Qwen2-MoE's MoE blocks loop over
    `expert_mask...nonzero().tolist()`; a trace keeps only the experts that the
    traced input routes tokens to.  The graph is right for every input only if
    every expert of every layer was hit.  (Both blocks return
    (hidden_states, router_logits) and have `top_k` and `num_experts`.)"""
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
    from transformers.models.qwen2_moe.modeling_qwen2_moe import Qwen2MoeSparseMoeBlock

    moe_blocks = (MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock)

    seen: list[tuple[str, set[int], int]] = []

    def hook(mod, args, out):
        logits = out[1]
        top = torch.topk(logits, mod.top_k, dim=-1).indices
        seen.append((mod_name[mod], set(top.flatten().tolist()), mod.num_experts))

    mod_name = {}
    handles = []
    for n, m in model.named_modules():
        if isinstance(m, moe_blocks):
            mod_name[m] = n
            handles.append(m.register_forward_hook(hook))
    with torch.no_grad():
        model(example)
    for h in handles:
        h.remove()
    assert seen, "no MoE block found"
    for n, hit, total in seen:
        if len(hit) != total:
            raise RuntimeError(f"trace input leaves experts of {n} unused: hit {sorted(hit)} of {total}")


def export_one(name: str, path: str, exporter: str, opset: int) -> None:
    model = build(name)
    in_name, _, _ = input_spec(name)
    example = torch.from_numpy(make_input(name, TRACE_SEED))
    if name in MOE_MODELS:
        check_all_experts_hit(model, example)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings about python control flow
        if exporter == "torchscript":
            torch.onnx.export(
                model,
                (example,),
                path,
                dynamo=False,
                opset_version=opset,
                input_names=[in_name],
                output_names=[output_name(name)],
                do_constant_folding=True,
            )
        elif exporter == "dynamo":
            prog = torch.onnx.export(
                model,
                (example,),
                dynamo=True,
                opset_version=opset,
                input_names=[in_name],
                output_names=[output_name(name)],
                optimize=True,
                external_data=False,
            )
            prog.save(path, external_data=False)
        else:
            raise ValueError(exporter)
    m = onnx.load(path)
    if strip_stack_traces(m):
        onnx.save_model(m, path)
    onnx.checker.check_model(m, full_check=True)
    # A file that needs external data would have been written beside it.
    for init in m.graph.initializer:
        assert init.data_location != onnx.TensorProto.EXTERNAL, f"{name}: external initializer {init.name}"


def strip_stack_traces(m: onnx.ModelProto) -> bool:
    """Drop the dynamo exporter's per-node `pkg.torch.onnx.stack_trace` metadata:
    it holds absolute paths of this checkout, so the bytes would depend on where
    the export ran.  The other metadata (namespace, class hierarchy, fx node,
    name scopes) stays, as a sample of what real exports carry."""
    changed = False
    for node in m.graph.node:
        keep = [p for p in node.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        if len(keep) != len(node.metadata_props):
            del node.metadata_props[:]
            node.metadata_props.extend(keep)
            changed = True
    return changed


def save_external(src: str, dst: str) -> None:
    """The same model with every initializer in one external file, model.data."""
    m = onnx.load(src)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    for f in ("model.onnx", "model.data"):
        p = os.path.join(os.path.dirname(dst), f)
        if os.path.exists(p):
            os.remove(p)
    onnx.save_model(
        m,
        dst,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.data",
        size_threshold=0,
    )
    onnx.checker.check_model(dst, full_check=True)


def summarize_error(e: BaseException) -> str:
    """One line for the manifest: the exception, and the root cause the torch
    exporter reports under "## Exception summary" (or the innermost cause)."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", f"{type(e).__name__}: {e}")
    text = re.sub(r'File "[^"]*/site-packages/', 'File "site-packages/', text)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    out = lines[0] if lines else type(e).__name__
    if "## Exception summary" in lines:
        i = lines.index("## Exception summary")
        if i + 1 < len(lines):
            out += " | " + lines[i + 1]
        call = [ln for ln in lines if ln.startswith("File ")]
        j = lines.index(call[-1]) if call else -1
        if call and j + 1 < len(lines):
            out += " | at " + call[-1] + ": " + lines[j + 1]
    else:
        cause = e.__cause__
        while cause is not None and cause.__cause__ is not None:
            cause = cause.__cause__
        if cause is not None:
            out += f" | caused by {type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}"
    return out[:1500]


def versions() -> dict:
    import onnxruntime
    import transformers

    v = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "numpy": np.__version__,
    }
    from importlib.metadata import PackageNotFoundError, version

    for pkg in ("onnxscript", "onnx_ir", "protobuf"):
        try:
            v[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return v


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"models to export (default: all of {', '.join(MODELS)})")
    args = ap.parse_args()
    names = args.names or list(MODELS)
    for n in names:
        if n not in MODELS:
            ap.error(f"unknown model {n!r}")

    manifest_path = os.path.join(HERE, "manifest.json")
    manifest = {"versions": {}, "models": {}}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    manifest["versions"] = versions()

    failed = False
    for name in names:
        path = os.path.join(HERE, name, "model.onnx")
        in_name, in_dtype, in_shape = input_spec(name)
        entry = {
            "input": {"name": in_name, "dtype": np.dtype(in_dtype).name, "shape": list(in_shape)},
            "output": output_name(name),
            "failed_exporters": [],
        }
        done = False
        for exporter, opset in MODELS[name][2]:
            print(f"[export] {name}: {exporter} exporter, opset {opset}", flush=True)
            try:
                export_one(name, path, exporter, opset)
            except Exception as e:  # noqa: BLE001 - report and fall back
                msg = summarize_error(e)
                print(f"[export] {name}: {exporter} FAILED: {msg}", flush=True)
                traceback.print_exc()
                entry["failed_exporters"].append({"exporter": exporter, "opset": opset, "error": msg})
                continue
            entry.update(exporter=exporter, opset=opset)
            done = True
            print(f"[export] {name}: wrote {path} ({os.path.getsize(path)} bytes)", flush=True)
            break
        if not done:
            entry.update(exporter=None, opset=None)
            # No folder for a model that could not be exported.
            d = os.path.dirname(path)
            for f in (path, os.path.join(d, "test_data_set_0", "input_0.pb"),
                      os.path.join(d, "test_data_set_0", "output_0.pb")):
                if os.path.exists(f):
                    os.remove(f)
            for sub in (os.path.join(d, "test_data_set_0"), d):
                if os.path.isdir(sub) and not os.listdir(sub):
                    os.rmdir(sub)
            if name in KNOWN_EXPORT_FAILURES:
                print(f"[export] {name}: no exporter worked (known; recorded in manifest.json)", flush=True)
            else:
                failed = True
        elif name in KNOWN_EXPORT_FAILURES:
            print(f"[export] {name}: exported, but listed in KNOWN_EXPORT_FAILURES; update export.py", flush=True)
        manifest["models"][name] = entry
        if name == "mlp" and done:
            dst = os.path.join(HERE, "mlp_external", "model.onnx")
            save_external(path, dst)
            manifest["models"]["mlp_external"] = dict(entry, derived_from="mlp", external_data="model.data")
            print(f"[export] mlp_external: wrote {dst} + model.data", flush=True)

    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
