#!/usr/bin/env python3
"""Write examples/models/inventory.txt: what an ONNX importer must support to
take in the models of examples/models/.

For each model: file sizes, ir_version, opset_import, producer, inputs and
outputs, initializers, the multiset of op types (main graph, subgraphs and
functions), attributes of note, dynamic (symbolic or unknown) dimensions in the
stored graph and after ONNX shape inference (with data propagation), ops whose
output shape depends on data, and ops whose shape operand is computed in the
graph rather than a constant.  NOTES (hand-written, from reading the graphs)
say how the causal mask, attention scaling, normalisation and MoE routing
appear.  Needs only onnx (and numpy):

    .venv-export/bin/python examples/models/inventory.py
"""

from __future__ import annotations

import collections
import json
import os
import sys
import textwrap

import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["mlp", "mlp_external", "gpt2", "gpt2_sdpa", "llama", "mixtral",
          "qwen2_dynamo", "qwen2_torchscript", "phi3_dynamo", "phi3_torchscript",
          "opt_dynamo", "opt_torchscript", "bert_dynamo", "bert_torchscript",
          "qwen2moe_torchscript"]  # qwen2moe_dynamo: no export (manifest.json)

# Ops whose output shape depends on input *values* (not only input shapes).
DATA_DEPENDENT = {"NonZero", "Unique", "Compress", "NonMaxSuppression", "Loop", "If", "Scan",
                  "StringSplit", "RegexFullMatch"}
# op -> index of the input that gives an output shape/size/count; data-dependent
# unless it is a constant (initializer or Constant node).
SHAPE_OPERAND = {"Reshape": 1, "Expand": 1, "ConstantOfShape": 0, "Tile": 1, "Range": 0, "TopK": 1,
                 "Slice": 1, "OneHot": 1, "Resize": 3, "Pad": 1, "Split": 1, "Squeeze": 1,
                 "Unsqueeze": 1, "ReduceSum": 1, "ReduceMean": 1}

NOTES = {
    "mlp": """\
Plain torch MLP: y = x + fc2(gelu(fc1(layernorm(x)))).
- LayerNorm is one LayerNormalization (opset 17; axis=-1, epsilon=1e-5).
- nn.Linear on a 2-D input is Gemm with transB=1 (weight stored [out, in], as
  torch keeps it) and a bias.
- GELU (exact, erf) is decomposed: Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x ->
  Mul 0.5, with the scalars as Constant nodes.
- mlp_external is the same graph with every initializer (size_threshold=0) in
  one external file, model.data (TensorProto.data_location = EXTERNAL,
  external_data {location, offset, length}).""",
    "gpt2": """\
Hugging Face GPT-2, attn_implementation="eager", TorchScript exporter.
- Constants are Constant nodes (65), not initializers; initializers hold only
  weights.  Several Cast ops are no-ops (float -> float).
- Embeddings: Reshape(input_ids, [-1, 16]) -> Gather(wte); Gather(wpe, constant
  position ids [1, 16]); Add.
- Conv1D layers (c_attn, c_proj, c_fc, mlp c_proj) are addmm on a 2-D view:
  Reshape [-1, 64] -> Gemm (transB=0: weight stored [in, out], plus bias) ->
  Reshape [2, 16, N].
- QKV: one Gemm to 192, Split(axis=2, sizes [64, 64, 64] as an input), Reshape
  [2, 16, -1, 16], Transpose; k is transposed straight to [0, 2, 3, 1].
- LayerNorm: LayerNormalization (5 = 2 per block + ln_f).
- GELU: gelu_new (tanh approximation) decomposed: Mul 0.5, Pow 3, Mul 0.044715,
  Add, Mul sqrt(2/pi), Tanh, Add 1, Mul.
- Attention scaling: MatMul(q, k^T) then Div by (ConstantOfShape 0 +
  Pow(16, 0.5)) = 4, all from constants (foldable).
- Causal mask, two of them:
  (a) per block, the `bias` buffer as a constant bool [1, 1, 16, 16] lower
      triangle: Where(mask, scores, float32 min);
  (b) once, transformers' 4-D additive mask: Constant [16, 17] of float32 min
      -> Trilu(upper=1, k=1) -> Mul by a constant [16, 17] 0/1 (the folded
      arange > cache_position test) -> Unsqueeze 0 -> Unsqueeze 1 -> Expand to
      [2, 1, 16, 17], whose target shape comes out of Equal/Where on constants
      (TorchScript's lowering of expand(2, 1, -1, -1)); per block Slice it to
      [.., :16] and Add to the scores; then Softmax(axis=-1).
  ONNX shape inference cannot see through that Where, so the Expand output and
  the two Slices have unknown leading dims until constants are folded.
- lm_head is tied to wte, but the exporter writes the transposed embedding as
  a second initializer (onnx::MatMul_*, [64, 1000]) for the final MatMul: the
  tie is lost and the weight is stored twice.""",
    "gpt2_sdpa": """\
Same weights as gpt2, attn_implementation="sdpa": torch's
scaled_dot_product_attention through the TorchScript symbolic.
- Attention scaling: computed in the graph from q's shape: Shape(q) ->
  Slice [-1:] -> Cast -> Sqrt -> Div(1, .) -> Cast -> Sqrt, and that
  sqrt(1/sqrt(d)) multiplies BOTH q and k^T (two Sqrt + two Mul) before the
  MatMul, instead of one Div after it.  The 2 Shape ops are on static shapes
  (foldable).
- Causal mask: only the additive 4-D mask (b) of gpt2 (Trilu/Expand/Slice),
  Added to the scores; no Where on the `bias` buffer, no is_causal.""",
    "llama": """\
Hugging Face LLaMA (sdpa attention; GQA 4 query / 2 kv heads), dynamo
exporter (torch.export + onnxscript, optimize=True): opset 18, IR 10.
- Heavily constant-folded by the onnxscript optimizer: no Constant nodes (all
  constants, including shape operands, are initializers: the INT64 ones), no
  Shape ops, no Cast; value_info is stored for every intermediate value, all
  with static shapes.
- Reshape uses allowzero=1 (the TorchScript graphs use 0).
- RMSNorm is decomposed: Pow(x, 2) -> ReduceMean(axes=[-1] as an input,
  keepdims=1) -> Add 1e-6 -> Sqrt -> Reciprocal -> Mul x -> Mul weight.
  (5 = 2 per layer + final norm.)
- nn.Linear (no bias) is MatMul with a pre-transposed [in, out] initializer
  (no Gemm).  SwiGLU MLP: MatMul gate, Sigmoid + Mul (SiLU), Mul by MatMul up,
  MatMul down.
- Rotary embedding: cos/sin are folded initializers [1, 1, 16, 16]; q*cos +
  rotate_half(q)*sin with rotate_half = Slice [0:8], Slice [8:], Neg, Concat.
- GQA repeat_kv: Unsqueeze(axis 2) -> Expand to [2, 2, 2, 16, 16] -> Reshape
  [2, 4, 16, 16].
- Attention (sdpa decomposed by onnxscript): k^T by Reshape [-1, 16, 16] ->
  Transpose [0, 2, 1] -> Reshape back; q and k^T each Mul by the constant 0.5
  (= sqrt(1/sqrt(16))); MatMul; Add the causal mask; Softmax(axis=-1); MatMul v.
- Causal mask: a folded float initializer [2, 1, 16, 17] (0 / float32 min),
  sliced per layer to [.., :16] (Slice) and Added.
- Nodes carry metadata_props (namespace, class hierarchy, fx node, name
  scopes); export.py drops only pkg.torch.onnx.stack_trace (absolute paths).""",
    "mixtral": """\
Hugging Face Mixtral (eager attention; GQA 4/2; 4 experts, top-2), TorchScript
exporter, opset 17 (the dynamo exporter fails on it: see above).  The one
graph with data-dependent shapes.
- RMSNorm: Cast (no-op) -> Pow 2 -> ReduceMean (axes=[-1] as an attribute at
  opset 17, keepdims=1) -> Add 1e-6 -> Sqrt -> Div(1, .) -> Mul x -> Cast ->
  Mul weight.
- Rotary cos/sin are computed in the graph from constants: inv_freq [1, 8, 1]
  Expand -> MatMul positions [1, 1, 16] -> Transpose -> Concat -> Cos, Sin
  (x attention_scaling 1.0).  Applied as in llama (Slice/Neg/Concat).
- GQA repeat_kv: Unsqueeze -> Expand (5-D, shape from the Equal/Where pattern)
  -> Reshape [2, 4, 16, 16].
- Attention: MatMul(q, Transpose(k, [0, 1, 3, 2])) -> Mul 0.25 (head_dim^-0.5)
  -> Add the causal mask -> Softmax(axis=-1) -> Cast, Cast -> MatMul v.
- Causal mask: already a constant [1, 1, 16, 17] here (no Trilu), Expanded to
  [2, 1, 16, 17] (Equal/Where shape pattern) and Sliced per layer.
- MoE routing, per layer: gate MatMul (no bias) -> Softmax(axis=1) ->
  TopK(K=2 as a constant input, axis=-1, largest=1, sorted=1) -> ReduceSum +
  Div (renormalise the top-2 weights) -> OneHot(selected, depth 4, values
  [0, 1]) -> Transpose [2, 1, 0] = expert_mask [4, 2, 32].
  The Python loop over the experts that were hit was unrolled by the trace into
  all 4 experts (export.py checks that the trace input hits every expert of
  every layer; had one been missed, it would be silently absent).  No Loop, no
  If.  Per expert e:
    Gather(expert_mask, e) -> Cast bool -> NonZero [2, n] -> Transpose ->
    Split -> Squeeze x2 (slot idx, token top_x: n data-dependent) ->
    Gather(Unsqueeze(hidden), top_x, axis=1) -> Reshape [-1, 64] ->
    expert SwiGLU (MatMul w1, Sigmoid, Mul, MatMul w3, Mul, MatMul w2) ->
    Mul by routing_weights[top_x, idx] (advanced indexing lowered to Flatten,
    index arithmetic Mul/Add with Shape/Gather, Gather, and Reshapes whose
    shapes are Concat'ed from Shape outputs) ->
    index_add_ as ScatterElements(axis=0, no reduction) of the rows into a
    constant zeros [32, 64], indices = Expand(Unsqueeze(top_x), Shape(rows)),
    then Add onto the running sum.  (Exact because one expert sees a token at
    most once.  Not ScatterND, not reduction="add".)
- Counts: 8 NonZero (4 experts x 2 layers), 8 ScatterElements, 2 TopK,
  2 OneHot, 30 Shape.  Everything downstream of a NonZero has an unknown first
  dim (n tokens routed to that expert) until run time.""",
    "qwen2_dynamo": """\
Hugging Face Qwen2 (sdpa attention; GQA 4/2; q/k/v projections with biases),
dynamo exporter, opset 18.  The same graph as llama's except the biases:
- q/k/v: MatMul [64, 64] / [64, 32] / [64, 32] then Add a bias [64] / [32] /
  [32]; o_proj has no bias (MatMul only).  Reshape [2, 16, -1, 16] ->
  Transpose [0, 2, 1, 3].
- RMSNorm as llama (Pow, ReduceMean axes input, Add 1e-6, Sqrt, Reciprocal,
  Mul, Mul weight); rotary cos/sin folded initializers [1, 1, 16, 16];
  repeat_kv Unsqueeze -> Expand (constant 5-D shape) -> Reshape; q and k^T
  each Mul 0.5; causal mask a folded initializer [2, 1, 16, 17], Sliced.
- Untied lm_head: MatMul [64, 1000].""",
    "qwen2_torchscript": """\
The qwen2 model (same weights), TorchScript exporter, opset 17.  Like mixtral's
attention: rotary cos/sin computed in the graph (inv_freq Expand -> MatMul ->
Cos, Sin); the Equal/Where-built Expand shapes (mask, rotary, repeat_kv) leave
dims unknown to ONNX shape inference (constant folding makes them static);
RMSNorm with Div(1, .) and ReduceMean(axes attribute).
- q/k/v: MatMul then Add bias; sdpa lowered to MatMul(q * 0.5,
  Transpose(k, [0, 1, 3, 2]) * 0.5) + mask -> Softmax -> MatMul v; causal
  mask a constant [1, 1, 16, 17] Expanded (Equal/Where shape) and Sliced.""",
    "phi3_dynamo": """\
Hugging Face Phi-3 (sdpa attention; GQA 4/2; rope_scaling None,
sliding_window None), dynamo exporter, opset 18.  The fused projections:
- qkv_proj: one MatMul [64, 128] (no bias), then three Slices on axis 2 of
  UNEQUAL widths: q = [0, 64) (4 heads x 16), k = [64, 96), v = [96, end)
  (2 kv heads x 16 each).  Each Reshape [2, 16, -1, 16] -> Transpose.
- gate_up_proj: one MatMul [64, 256], then Split(axis 2, num_outputs=2) into
  gate [.., 128] and up [.., 128]; SiLU(gate) * up -> down_proj MatMul
  [128, 64].
- Otherwise as llama: RMSNorm decomposed (Reciprocal form), rotary cos/sin
  folded [1, 1, 16, 16] (full rotary: partial_rotary_factor 1), repeat_kv
  Unsqueeze/Expand/Reshape, q and k^T each Mul 0.5, causal mask a folded
  [2, 1, 16, 17] Sliced; untied lm_head MatMul [64, 1000].
- Residuals add the block input (before the norm).""",
    "phi3_torchscript": """\
The phi3 model (same weights), TorchScript exporter, opset 17.
- qkv_proj: MatMul [64, 128] -> Slice [0, 64), [64, 96), [96, end) on axis 2
  (constant starts/ends), as in phi3_dynamo.
- gate_up_proj: MatMul [64, 256] -> `chunk(2)` lowered to two Slices whose
  ends are computed in-graph: Shape -> Gather(-1) -> Add 1 -> Div 2 -> Mul
  (1, 2); ONNX shape inference leaves the halves (and the MLP after them)
  with unknown dims.
- Rotary applied through the partial-rotary path: q/k are Sliced [0, 16) and
  [16, end) on the head dim (the second slice is EMPTY, [2, h, 16, 0]), the
  rotation done on the first, then Concat with the empty slice.
- Rotary cos/sin computed in-graph, Equal/Where Expand shapes, RMSNorm with
  Div(1, .), mask a constant [1, 1, 16, 17] Expanded, as qwen2_torchscript.""",
    "opt_dynamo": """\
Hugging Face OPT (eager attention, do_layer_norm_before=True, ReLU, learned
positions, lm_head tied to embed_tokens), dynamo exporter, opset 18.
- Embeddings: Reshape [-1, 16] -> Gather(embed_tokens [1000, 64]) + Gather
  (embed_positions [66, 64], a folded constant index [2, 16] = cumsum of the
  all-ones mask - 1 + offset 2, i.e. 2..17).
- Pre-LN blocks: LayerNormalization (eps 1e-5, stash_type 1) -> q/k/v
  MatMul + Add bias; q scaled by Mul 0.25 BEFORE the MatMul (head_dim^-0.5);
  k Transposed [0, 2, 3, 1]; scores + a folded causal mask [2, 1, 16, 16]
  (0 / float32 min) -> Softmax -> MatMul v -> out_proj MatMul + bias ->
  residual Add.
- FFN on a 2-D view: Reshape [-1, 64] -> LayerNormalization -> Gemm
  (transB=1, bias) 64->128 -> Relu -> Gemm 128->64 -> residual Add ->
  Reshape [2, 16, 64].
- Final LayerNormalization, then the tied lm_head as MatMul with
  Transpose(embed_tokens) (the embedding is stored once).""",
    "opt_torchscript": """\
The opt model (same weights), TorchScript exporter, opset 17.  The causal +
padding mask is built in the graph:
- Trilu(upper=1, k=1) on a [16, 16] float32-min constant -> Mul (0/1) ->
  Unsqueeze x2 -> Expand (Equal/Where shape) to [2, 1, 16, 16]; the padding
  mask (all ones, a constant) added and compared with 0 (Equal), Where(min)
  -> written back into the causal mask with ScatterND (the `mask[..., :n] =
  masked_fill(...)` slice assignment), with a [2, 1, 16, 16, 4] index tensor
  Concat'ed from four Expanded aranges.  ONNX shape inference leaves these
  values with unknown dims.
- Positions: CumSum of the constant all-ones mask -> Mul -> Sub 1 -> Cast
  int64 -> Add 2 -> Gather(embed_positions [66, 64]).
- Layers as opt_dynamo (q/k/v MatMul + Add bias, Mul 0.25 on q, Gemm for
  fc1/fc2 on a 2-D view, Relu); the tied lm_head is a second, pre-transposed
  copy of the embedding (MatMul [64, 1000]).""",
    "bert_dynamo": """\
Hugging Face BertForMaskedLM (eager attention; GELU erf; post-LN), dynamo
exporter, opset 18.  Output: the MLM logits [2, 16, 1000].  The wrapper passes
token_type_ids = zeros and no attention mask.
- Embeddings: Gather(word_embeddings) + a folded constant [2, 16, 64] (the
  token-type embedding of the all-zeros ids) + Gather(position_embeddings,
  constant [1, 16]) -> LayerNormalization (eps 1e-12).
- Attention (bidirectional, no causal mask): q/k/v MatMul + Add bias; k
  Transposed [0, 2, 3, 1]; scores Div 4 (sqrt(head_dim)) + a constant
  [2, 1, 1, 16] (the extended attention mask of an all-ones mask: all -0.0)
  -> Softmax -> MatMul v -> dense + bias -> Add residual -> LayerNormalization.
- FFN: MatMul + bias 64->128 -> GELU (Div sqrt2, Erf, Add 1, Mul 0.5, Mul) ->
  MatMul + bias -> Add residual -> LayerNormalization.
- MLM head: dense + bias -> GELU -> LayerNormalization -> decoder MatMul with
  Transpose(word_embeddings) (tied) -> Add bias [1000].""",
    "bert_torchscript": """\
The bert model (same weights), TorchScript exporter, opset 17.  As
bert_dynamo, except: the token-type embedding is a Gather of
token_type_embeddings [2, 64] with a constant zeros index [2, 16] (not
folded); the tied decoder is a second, pre-transposed copy of the word
embeddings (MatMul [64, 1000]); GELU's Mul 0.5 comes last; scalars are
Constant nodes.""",
    "qwen2moe_torchscript": """\
Hugging Face Qwen2-MoE (eager attention; GQA 4/2; q/k/v biases; every layer
MoE: 4 experts top-2, moe_intermediate_size 32, a shared expert of 64 with a
sigmoid gate; norm_topk_prob False), TorchScript exporter, opset 17 (the
dynamo exporter fails on it, as on mixtral: see above).  Attention as
qwen2_torchscript but eager: MatMul(q, k^T) -> Div 4 (sqrt(head_dim)) -> Add
the mask -> Softmax -> MatMul v.
- MoE routing, per layer: Reshape [-1, 64] -> gate MatMul [64, 4] ->
  Softmax(axis 1) -> TopK(2) (weights NOT renormalised: no ReduceSum/Div) ->
  OneHot(depth 4) -> Transpose [2, 1, 0] = expert_mask [4, 2, 32].  Then per
  expert, unrolled for all 4 (export.py checks the trace input hits every
  expert of both layers): Gather -> Cast bool -> NonZero -> Transpose/Split/
  Squeeze -> Gather the routed rows -> expert SwiGLU (MatMul [64, 32] x2,
  Sigmoid, Mul, MatMul [32, 64]) -> Mul by the routing weight (Flatten and
  index arithmetic) -> ScatterElements(axis 0) into a constant zeros [32, 64]
  -> Add onto the running sum.  As in mixtral.
- Shared expert: SwiGLU (MatMul [64, 64] x2, [64, 64]) on all 32 tokens,
  times Sigmoid(MatMul [64, 1]) (the shared_expert_gate), added to the
  routed sum.
- Counts: 8 NonZero, 8 ScatterElements, 2 TopK, 2 OneHot.""",
}


def human(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def dims(t: onnx.TypeProto) -> list[str] | None:
    if not t.HasField("tensor_type"):
        return None
    tt = t.tensor_type
    if not tt.HasField("shape"):
        return None  # unknown rank
    out = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            out.append(str(d.dim_value))
        elif d.HasField("dim_param"):
            out.append(d.dim_param)
        else:
            out.append("?")
    return out


def is_dynamic(t: onnx.TypeProto) -> bool:
    d = dims(t)
    return d is None or any(not x.isdigit() for x in d)


def vi_str(v: onnx.ValueInfoProto) -> str:
    et = onnx.TensorProto.DataType.Name(v.type.tensor_type.elem_type)
    d = dims(v.type)
    return f"{v.name}: {et}[{', '.join(d) if d is not None else 'unknown rank'}]"


def all_nodes(g: onnx.GraphProto):
    for n in g.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sg in a.graphs:
                    yield from all_nodes(sg)


def attr_val(a: onnx.AttributeProto):
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, onnx.TensorProto):
        arr = numpy_helper.to_array(v)
        return f"tensor {arr.dtype}{list(arr.shape)}" + (f"={arr.tolist()}" if arr.size <= 4 else "")
    return v


def section(name: str, manifest: dict) -> list[str]:
    d = os.path.join(HERE, name)
    path = os.path.join(d, "model.onnx")
    out = [f"== {name} " + "=" * (74 - len(name))]
    files = sorted(f for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))
    out.append("files: " + ", ".join(f"{f} ({human(os.path.getsize(os.path.join(d, f)))})" for f in files))
    m = onnx.load(path)  # loads external data too
    mm = manifest.get("models", {}).get(name, {})
    if mm:
        out.append(f"exporter: {mm.get('exporter')} (opset {mm.get('opset')})"
                   + (f"; derived from {mm['derived_from']}" if "derived_from" in mm else ""))
        for f in mm.get("failed_exporters", []):
            out.append(f"  exporter {f['exporter']} (opset {f['opset']}) failed:")
            for part in f["error"].split(" | "):
                out.extend(textwrap.wrap(part, 100, initial_indent="    ", subsequent_indent="      "))
    out.append(f"ir_version: {m.ir_version}")
    out.append("opset_import: " + ", ".join(f"{o.domain or 'ai.onnx'}={o.version}" for o in m.opset_import))
    out.append(f"producer: {m.producer_name} {m.producer_version}")
    out.append(f"functions: {len(m.functions)}; model metadata_props: {[p.key for p in m.metadata_props]}")
    g = m.graph
    out.append("inputs:  " + "; ".join(vi_str(v) for v in g.input))
    out.append("outputs: " + "; ".join(vi_str(v) for v in g.output))
    ext = sum(1 for t in g.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    m_raw = onnx.load(path, load_external_data=False)
    ext = sum(1 for t in m_raw.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    init_dtypes = collections.Counter(onnx.TensorProto.DataType.Name(t.data_type) for t in g.initializer)
    nbytes = sum(numpy_helper.to_array(t).nbytes for t in g.initializer)
    out.append(f"initializers: {len(g.initializer)} ({human(nbytes)}; dtypes {dict(init_dtypes)}; "
               f"{ext} stored as external data)")
    nodes = list(all_nodes(g))
    for f in m.functions:
        nodes.extend(f.node)
    node_meta = collections.Counter(p.key for n in nodes for p in n.metadata_props)
    if node_meta:
        out.append(f"node metadata_props keys: {dict(node_meta)}")
    domains = collections.Counter(n.domain or "ai.onnx" for n in nodes)
    out.append(f"nodes: {len(nodes)} (domains {dict(domains)}); stored value_info: {len(g.value_info)}")

    counts = collections.Counter(n.op_type for n in nodes)
    out.append("op types (op_type: count):")
    for op, c in sorted(counts.items()):
        out.append(f"  {op}: {c}")

    # Attributes of note, per op type (distinct non-default-looking values).
    attrs = collections.defaultdict(set)
    for n in nodes:
        if n.op_type == "Constant":
            continue
        for a in n.attribute:
            if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                continue
            attrs[n.op_type].add(f"{a.name}={attr_val(a)}")
    if attrs:
        out.append("attributes seen (op: distinct name=value):")
        for op in sorted(attrs):
            out.append(f"  {op}: {', '.join(sorted(attrs[op]))}")

    # Dynamic dimensions.
    stored = [v for v in list(g.input) + list(g.output) + list(g.value_info) if is_dynamic(v.type)]
    out.append(f"dynamic dims in stored graph inputs/outputs/value_info: "
               f"{'none' if not stored else '; '.join(vi_str(v) for v in stored)}")
    inferred = onnx.shape_inference.infer_shapes(m_raw, check_type=True, strict_mode=True, data_prop=True)
    ig = inferred.graph
    produced = {o for n in ig.node for o in n.output if o}
    vis = {v.name: v for v in ig.value_info}
    dyn = [vis[o] for o in produced if o in vis and is_dynamic(vis[o].type)]
    missing = sorted(o for o in produced if o not in vis and o not in {v.name for v in ig.output})
    out.append(f"after onnx.shape_inference (data_prop=True): {len(produced)} values produced, "
               f"{len(dyn)} with a dynamic dim, {len(missing)} with no inferred type")
    for v in sorted(dyn, key=lambda v: v.name)[:12]:
        out.append(f"  {vi_str(v)}")
    if len(dyn) > 12:
        out.append(f"  ... and {len(dyn) - 12} more")

    # Data-dependent output shapes.
    dd = collections.Counter(n.op_type for n in nodes if n.op_type in DATA_DEPENDENT)
    out.append(f"ops with data-dependent output shapes: {dict(dd) if dd else 'none'}")
    consts = {t.name for t in g.initializer} | {o for n in g.node if n.op_type == "Constant" for o in n.output}
    computed = collections.Counter()
    for n in g.node:
        i = SHAPE_OPERAND.get(n.op_type)
        if i is not None and i < len(n.input) and n.input[i] and n.input[i] not in consts:
            computed[n.op_type] += 1
    out.append(f"ops whose shape/size operand is computed in-graph (not a constant): "
               f"{dict(computed) if computed else 'none'}")
    tdd = os.path.join(d, "test_data_set_0")
    if os.path.isdir(tdd):
        out.append(f"reference: test_data_set_0/{', '.join(sorted(os.listdir(tdd)))}")
    out.append("notes:")
    note = NOTES.get(name, "")
    if name == "mlp_external":
        note = NOTES["mlp"].split("\n- mlp_external", 1)[0].replace("Plain torch MLP", "The mlp model")
        note += "\n- Every initializer is external: one file, model.data, offsets in order."
    out.extend("  " + line for line in note.splitlines())
    return out


def main() -> int:
    manifest = {}
    mp = os.path.join(HERE, "manifest.json")
    if os.path.exists(mp):
        with open(mp) as f:
            manifest = json.load(f)
    lines = ["Inventory of examples/models/ (generated by inventory.py; do not edit by hand).",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(manifest.get("versions", {}).items())),
             ""]
    for name in MODELS:
        lines.extend(section(name, manifest))
        lines.append("")
    union = collections.Counter()
    for name in MODELS:
        m = onnx.load(os.path.join(HERE, name, "model.onnx"), load_external_data=False)
        union.update({n.op_type for n in all_nodes(m.graph)})
    lines.append(f"== all models: op types and in how many of the {len(MODELS)} models they appear ==")
    lines.append("  " + ", ".join(f"{op}({c})" for op, c in sorted(union.items())))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(HERE, "inventory.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
