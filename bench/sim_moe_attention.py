#!/usr/bin/env python3
"""COMET and ATTENTION2D in the simulator, next to the published speed-ups.

COMET: one Mixtral-8x7B-shaped MoE layer (hidden 4096, FFN 14336, 8 experts,
top-2, bf16, 4096 tokens per GPU, capacity factor 1) under expert
parallelism on 8 H800 GPUs (one node). The per-rank SPMD program is written
as braid-partition ep=8 leaves it (dispatch, all-to-all, the expert GEMMs,
all-to-all, combine); "COMET" is the same after braid-comet (cost-model
choices) and braid-schedule. Published (COMET, MLSys'25): 1.96x per MoE
layer on average.

ATTENTION2D: one GPT-3-like causal attention (96 heads of 128, bf16) over a
context of 64 x 512, 1024 and 2048 tokens, context-parallel on 64 GPUs: braid-partition
cp=64, then braid-ring-attention (the baseline) or braid-attention-2d with
the grid the cost model picks, each scheduled. Clusters: 64 A100 on 16 nodes
(4 GPUs and 4 HDR NICs per node) and 64 H100 on 64 nodes (1 GPU and 1 NDR
NIC per node), written as variants of the DGX profiles. Published
(ATTENTION2D): up to 5x (A100) and 9.4x (H100) over Ring Attention.

usage: sim_moe_attention.py [--build BUILD] [--keep DIR] [--tokens 4096]
       [--context-per-gpu 512,1024,2048]
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time

import simlib

ROOT = simlib.ROOT
WHO = "sim_moe_attention"


def moe_layer_ir(ranks, tokens, hidden, ffn, experts, k, t):
    """One rank's program of an expert-parallel MoE layer."""
    cap = tokens * k // experts          # slots per expert from this rank
    el = experts // ranks                 # experts on this rank
    X = f"tensor<{tokens}x{hidden}x{t}>"
    D = f"tensor<{experts}x{cap}x{hidden}x{t}>"
    A = f"tensor<{el}x{ranks * cap}x{hidden}x{t}>"
    F = f"tensor<{el}x{ranks * cap}x{ffn}x{t}>"
    W1 = f"tensor<{el}x{hidden}x{ffn}x{t}>"
    W2 = f"tensor<{el}x{ffn}x{hidden}x{t}>"
    R = f"tensor<{hidden}x{experts}x{t}>"
    L = f"tensor<{tokens}x{experts}x{t}>"
    P = f"tensor<{tokens}x{k}x{t}>"
    E = f"tensor<{tokens}x{k}xi64>"
    return "\n".join([
        f"braid.mesh @world(ep = {ranks})",
        f"braid.weight @router : {R}",
        f"braid.weight @w1 : tensor<{experts}x{hidden}x{ffn}x{t}>",
        f"braid.weight @w3 : tensor<{experts}x{hidden}x{ffn}x{t}>",
        f"braid.weight @w2 : tensor<{experts}x{ffn}x{hidden}x{t}>",
        f"func.func @main(%x: {X}) -> {X} {{",
        f"  %router = braid.get_weight @router : {R}",
        f"  %w1 = braid.get_weight @w1 sharded on @world [[\"ep\"], [], []] : {W1}",
        f"  %w3 = braid.get_weight @w3 sharded on @world [[\"ep\"], [], []] : {W1}",
        f"  %w2 = braid.get_weight @w2 sharded on @world [[\"ep\"], [], []] : {W2}",
        f"  %logits = braid.matmul %x, %router : ({X}, {R}) -> {L}",
        f"  %weights, %experts = braid.router_topk %logits k {k} normalize : ({L}) -> ({P}, {E})",
        f"  %d = braid.moe_dispatch %x, %experts : ({X}, {E}) -> {D}",
        f"  %a = braid.all_to_all %d on @world[\"ep\"] split 0 concat 1 : {D} -> {A}",
        f"  %g = braid.grouped_matmul %a, %w1 : ({A}, {W1}) -> {F}",
        f"  %sg = braid.sigmoid %g : {F}",
        f"  %s = braid.mul %g, %sg : ({F}, {F}) -> {F}",
        f"  %u = braid.grouped_matmul %a, %w3 : ({A}, {W1}) -> {F}",
        f"  %m = braid.mul %s, %u : ({F}, {F}) -> {F}",
        f"  %o = braid.grouped_matmul %m, %w2 : ({F}, {W2}) -> {A}",
        f"  %b = braid.all_to_all %o on @world[\"ep\"] split 1 concat 0 : {A} -> {D}",
        f"  %y = braid.moe_combine %b, %experts, %weights : ({D}, {E}, {P}) -> {X}",
        f"  return %y : {X}",
        "}", ""])


def attention_ir(seq, heads, dim, t):
    """Single-device causal attention over [1, seq, heads, dim] inputs, its
    output summed."""
    I = f"tensor<1x{seq}x{heads}x{dim}x{t}>"
    H = f"tensor<1x{heads}x{seq}x{dim}x{t}>"
    # The output is reduced to one number so that gathering it to every
    # rank (what a partitioned program's result needs) does not swamp the
    # attention being compared.
    S = f"tensor<{t}>"
    lines = [f"func.func @main(%q: {I}, %k: {I}, %v: {I}) -> {S} {{"]
    for n in "qkv":
        lines.append(f"  %{n}t = braid.transpose %{n} [0, 2, 1, 3] : {I} -> {H}")
    lines.append(f"  %o = braid.attention %qt, %kt, %vt causal scale {1 / dim ** 0.5:.8f} : ({H}, {H}, {H}) -> {H}")
    lines.append(f"  %r = braid.reduce_sum %o dims [0, 1, 2, 3] : {H} -> {S}")
    lines.append(f"  return %r : {S}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def simulate(tools, work, stem, ir, passes, profile, ranks, nodes):
    out, head = simlib.simulate(tools, work, stem, ir, passes, profile, ranks,
                                WHO, nodes)
    choice = re.findall(r"braid\.(comm_sms|comet_combine_chunks|attention_2d_grid) = "
                        r"\"?([0-9x]+)", head)
    return {"makespan": simlib.seconds(out, "makespan", WHO),
            "exposed": simlib.seconds(out, "exposed communication", WHO),
            "choice": ", ".join(f"{k}={v}" for k, v in choice) or "-"}


def variant_profile(work, base, name, gpus_per_node, nics):
    with open(os.path.join(ROOT, "runtime", "profiles", base + ".json")) as f:
        profile = json.load(f)
    profile["name"] = name
    profile["node"]["gpus_per_node"] = gpus_per_node
    profile["node"]["inter"]["nics_per_node"] = nics
    profile.setdefault("sources", {})["node.gpus_per_node"] = (
        f"bench/sim_moe_attention.py: {base} with {gpus_per_node} GPU(s) and "
        f"{nics} NIC(s) per node (ATTENTION2D's cluster layout)")
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(profile, f, indent=1)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--keep", help="keep IR, plans and timelines here")
    parser.add_argument("--tokens", type=int, default=4096,
                        help="MoE tokens per GPU")
    parser.add_argument("--context-per-gpu", default="512,1024,2048",
                        help="tokens of context per GPU (comma-separated sweep)")
    args = parser.parse_args()
    tools = simlib.tools(args.build, WHO)
    work = args.keep or tempfile.mkdtemp(prefix="braid-sim-moe-attn-")
    os.makedirs(work, exist_ok=True)
    rows = []

    started = time.perf_counter()
    ir = moe_layer_ir(8, args.tokens, 4096, 14336, 8, 2, "bf16")
    hw = "h800-node"
    base = simulate(tools, work, "moe-ep", ir, [], hw, 8, 1)
    comet = simulate(tools, work, "moe-comet", ir,
                     [f"--braid-comet=hw={hw}", f"--braid-schedule=hw={hw}",
                      "--braid-verify-collectives"], hw, 8, 1)
    rows.append(("Mixtral-8x7B MoE layer", "8 H800, 1 node", "plain EP",
                 "COMET", base, comet, "1.96x (average per layer)",
                 time.perf_counter() - started))
    print(f"  COMET done in {rows[-1][-1]:.1f} s", file=sys.stderr)

    for per_gpu in [int(c) for c in args.context_per_gpu.split(",")]:
        seq = 64 * per_gpu
        attention = attention_ir(seq, 96, 128, "bf16")
        for base_hw, label, gpn, nics, nodes, paper in [
                ("dgx-a100", "64 A100, 16 nodes", 4, 4, 16, "up to 5x"),
                ("dgx-h100", "64 H100, 64 nodes", 1, 1, 64, "up to 9.4x")]:
            started = time.perf_counter()
            hw = variant_profile(work, base_hw, f"{base_hw}-{gpn}gpn", gpn, nics)
            stem = f"{base_hw}-{per_gpu}"
            ring = simulate(tools, work, f"ring-{stem}", attention,
                            ["--braid-partition=cp=64", "--braid-ring-attention",
                             f"--braid-schedule=hw={hw}"], hw, 64, nodes)
            grid = simulate(tools, work, f"a2d-{stem}", attention,
                            ["--braid-partition=cp=64",
                             f"--braid-attention-2d=grid=auto hw={hw}",
                             f"--braid-schedule=hw={hw}",
                             "--braid-verify-collectives"], hw, 64, nodes)
            rows.append((f"GPT-3 attention, {seq // 1024}K ctx", label,
                         "Ring Attention", "ATTENTION2D", ring, grid, paper,
                         time.perf_counter() - started))
            print(f"  ATTENTION2D {seq // 1024}K on {label} done in "
                  f"{rows[-1][-1]:.1f} s", file=sys.stderr)

    print(f"\n{'setup':<30} {'cluster':<18} {'baseline':>11} {'overlapped':>11} "
          f"{'speed-up':>8} {'exposed comm.':>20}  {'choice':<34} published")
    for name, cluster, bname, oname, b, o, paper, _ in rows:
        print(f"{name:<30} {cluster:<18} {b['makespan'] * 1e3:>9.2f}ms "
              f"{o['makespan'] * 1e3:>9.2f}ms {b['makespan'] / o['makespan']:>7.2f}x "
              f"{b['exposed'] * 1e3:>8.2f}->{o['exposed'] * 1e3:>8.2f}ms  "
              f"{o['choice']:<34} {paper}")
    print("\n(baseline: plain EP / Ring Attention; overlapped: braid-comet / "
          "braid-attention-2d, both scheduled; one layer, simulated with "
          "contention)")


if __name__ == "__main__":
    main()
