#!/usr/bin/env python3
"""Convert an ONNX model (and float input tensors) from float32 to bfloat16.

Every float32 value of the model becomes bfloat16:

- initializers,
- the element type of graph inputs, outputs and value_info,
- the `to` attribute of Cast nodes that cast to float32,
- tensor-valued attributes (Constant `value`, ConstantOfShape `value`, ...).

Values are rounded to nearest, ties to even (NaN stays NaN). The graph is
otherwise unchanged: every op then runs in bfloat16, as a bf16 model exported
by a framework would. Integer and boolean tensors are left alone.

Usage:
  to_bf16.py model.onnx model_bf16.onnx
  to_bf16.py --tensor input_0.pb input_0_bf16.pb   # a TensorProto file
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, numpy_helper

FLOAT = TensorProto.FLOAT
BF16 = TensorProto.BFLOAT16


def bf16_bits(a):
    """float32 array -> uint16 bfloat16 bits, round to nearest even."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    # Keep NaNs NaN (rounding could carry a NaN payload into infinity).
    nan = np.isnan(a)
    rounded[nan] = ((u[nan] >> 16).astype(np.uint16)) | 0x0040
    return rounded


def convert_tensor(t):
    """A float32 TensorProto -> its bfloat16 copy (raw_data)."""
    a = numpy_helper.to_array(t).astype(np.float32)
    out = TensorProto()
    out.dims.extend(t.dims)
    out.data_type = BF16
    out.raw_data = bf16_bits(a).tobytes()
    out.name = t.name
    if t.doc_string:
        out.doc_string = t.doc_string
    return out


def convert_graph(g):
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        tt = vi.type.tensor_type
        if tt.elem_type == FLOAT:
            tt.elem_type = BF16
    for i, init in enumerate(g.initializer):
        if init.data_type == FLOAT:
            g.initializer[i].CopyFrom(convert_tensor(init))
    if any(s.values.data_type == FLOAT for s in g.sparse_initializer):
        sys.exit("error: float sparse initializers are not supported")
    for n in g.node:
        for a in n.attribute:
            if a.type == AttributeProto.GRAPH:
                convert_graph(a.g)
            elif a.type == AttributeProto.GRAPHS:
                for sub in a.graphs:
                    convert_graph(sub)
            elif a.type == AttributeProto.TENSOR and a.t.data_type == FLOAT:
                a.t.CopyFrom(convert_tensor(a.t))
            elif a.type == AttributeProto.TENSORS:
                for k, t in enumerate(a.tensors):
                    if t.data_type == FLOAT:
                        a.tensors[k].CopyFrom(convert_tensor(t))
            elif n.op_type == "Cast" and a.name == "to" and a.i == FLOAT:
                a.i = BF16
            elif n.op_type == "Constant" and a.name in ("value_float",
                                                        "value_floats"):
                sys.exit(f"error: Constant '{n.name}' has {a.name}; "
                         "not supported")


def convert_model(src, dst):
    m = onnx.load(src)
    convert_graph(m.graph)
    onnx.save(m, dst)


def convert_tensor_file(src, dst):
    t = onnx.load_tensor(src)
    if t.data_type == FLOAT:
        t = convert_tensor(t)
    onnx.save_tensor(t, dst)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("src", help="model.onnx (or a TensorProto .pb with --tensor)")
    p.add_argument("dst", help="where to write the converted file")
    p.add_argument("--tensor", action="store_true",
                   help="convert one TensorProto file (input_N.pb); "
                        "non-float tensors are copied unchanged")
    args = p.parse_args()
    if args.tensor:
        convert_tensor_file(args.src, args.dst)
    else:
        convert_model(args.src, args.dst)


if __name__ == "__main__":
    main()
