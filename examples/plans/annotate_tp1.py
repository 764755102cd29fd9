#!/usr/bin/env python3
"""Turn braid-dialect IR into a Megatron tensor-parallel program on ONE rank.

`braidc --parallel tp=1` is refused (braid-partition skips axes of size 1
and then has nothing to partition over), so one-rank plans with collectives
are made from the IR instead: this script declares `braid.mesh @world(tp = 1)`
and puts a `braid.sharding` annotation on the result of every `braid.matmul`
whose weight (the right-hand `braid.get_weight`) matches --column: its last
dimension split over "tp" (column parallel). braid-partition then treats the
following projections as row parallel and completes their partial sums with
all_reduce on the group of one, and gathers the outputs with all_gather;
braid-to-exec puts the collectives on a "comm" stream synchronised with the
"compute" stream by events. Results are the same as without the annotations.

Usage: annotate_tp1.py in.mlir out.mlir --column 'REGEX'
(run braid-split-fused-projections first, so that fused q/k/v weights are
already split into blocks).
"""
import argparse
import re
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--column", required=True,
                   help="regex (fullmatch) of the weight names whose matmuls "
                        "are column parallel")
    args = p.parse_args()
    column = re.compile(args.column)
    src = open(args.src).read()
    if "braid.mesh" in src:
        sys.exit("error: the program already declares a mesh")
    if not src.startswith("module {\n"):
        sys.exit("error: expected the IR to start with 'module {'")
    src = src.replace("module {\n", "module {\n  braid.mesh @world(tp = 1)\n",
                      1)
    weights = {m.group(1): m.group(2).strip('"') for m in re.finditer(
        r'(%[\w]+) = braid\.get_weight @("[^"]+"|[\w.]+)', src)}
    count = 0

    def annotate(m):
        nonlocal count
        if not column.fullmatch(weights.get(m.group(3), "")):
            return m.group(0)
        rank = m.group(4).split("-> tensor<")[1].count("x")
        dims = ", ".join(["[]"] * (rank - 1) + ['["tp"]'])
        count += 1
        return (f"{m.group(1)}{m.group(2)}, {m.group(3)} {{braid.sharding = "
                f"#braid.sharding<@world, [{dims}]>}} : {m.group(4)}")

    src = re.sub(r"(%\w+ = braid\.matmul )(%\w+), (%\w+) : "
                 r"(\(.*?\) -> tensor<[^>]*>)", annotate, src)
    if count == 0:
        sys.exit(f"error: no braid.matmul has a weight matching "
                 f"'{args.column}'")
    open(args.dst, "w").write(src)
    print(f"annotate_tp1: {count} column-parallel matmuls", file=sys.stderr)


if __name__ == "__main__":
    main()
