"""Runs a model with onnxruntime on random inputs and writes both as test data.

    ort_reference.py MODEL OUT_DIR [--small-ints] [--seed N]

MODEL is ONNX text (.onnxtxt, as the importer tests are written) or binary.
OUT_DIR gets input_N.pb and output_N.pb (ONNX's test-data layout, what
braid-eval and braid-run read) for the graph inputs that are not initializers.
Floating inputs are N(0, 1), integer inputs in [-2, 2]; with --small-ints the
floating inputs are integers in [-2, 2] too, so that reductions meet ties.
onnxruntime runs on the CPU with graph optimizations off.
"""

import argparse
import pathlib

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.parser
import onnxruntime


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--small-ints", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    data = pathlib.Path(args.model).read_bytes()
    if args.model.endswith(".onnxtxt"):
        model = onnx.parser.parse_model(data.decode())
    else:
        model = onnx.load_from_string(data)

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = (
        onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL)
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options,
        providers=["CPUExecutionProvider"])

    rng = np.random.default_rng(args.seed)
    initializers = {init.name for init in model.graph.initializer}
    feeds = {}
    for info in model.graph.input:
        if info.name in initializers:
            continue
        tensor = info.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        shape = [dim.dim_value for dim in tensor.shape.dim]
        if dtype == np.bool_:
            value = rng.integers(0, 2, size=shape).astype(dtype)
        elif args.small_ints or np.issubdtype(dtype, np.integer):
            value = rng.integers(-2, 3, size=shape).astype(dtype)
        else:
            value = rng.standard_normal(shape).astype(dtype)
        feeds[info.name] = value

    outputs = session.run(None, feeds)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for i, (name, value) in enumerate(feeds.items()):
        tensor = onnx.numpy_helper.from_array(value, name)
        (out / f"input_{i}.pb").write_bytes(tensor.SerializeToString())
    for i, (info, value) in enumerate(zip(model.graph.output, outputs)):
        tensor = onnx.numpy_helper.from_array(np.asarray(value), info.name)
        (out / f"output_{i}.pb").write_bytes(tensor.SerializeToString())


if __name__ == "__main__":
    main()
