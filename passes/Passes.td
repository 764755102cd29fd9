//===- Passes.td - braid passes --------------------------------*- tablegen -*-===//

#ifndef BRAID_PASSES_PASSES_TD
#define BRAID_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def BraidCostReport : Pass<"braid-cost-report", "::mlir::ModuleOp"> {
  let summary = "Reports FLOPs and minimum bytes moved per op and per function";
  let description = [{
    Asks every op that implements the cost interface for its FLOPs and minimum
    bytes moved, and reports them as remarks: one per op (unless
    `per-op=false`) and one total per function with its arithmetic intensity
    (FLOPs per byte). Ops inside `braid.async` regions count toward the
    function. The IR is not changed.

    ```
    braid-opt --braid-cost-report=per-op=false model.mlir
    ```
  }];
  let options = [
    Option<"perOp", "per-op", "bool", /*default=*/"true",
           "Report every op, not only the function totals">
  ];
}

def BraidPrintDimensionMapping
    : Pass<"braid-print-dimension-mapping", "::mlir::ModuleOp"> {
  let summary = "Prints and checks the dimension mapping of every op";
  let description = [{
    For every op that implements the dimension-mapping interface, emits a
    remark with its factor mapping, e.g.
    `([f0, f2], [f2, f1]) -> ([f0, f1]) {f0 = 8, f1 = 32, f2 = 16 sum}`, and
    an error where the mapping contradicts the op's types (then the pass
    fails). For inspecting what partitioning and the overlap passes see.
  }];
}

def BraidRaiseAttention : Pass<"braid-raise-attention"> {
  let summary = "Raises scaled dot-product attention subgraphs to braid.attention";
  let description = [{
    Finds `softmax(scale * Q K^T + mask) V` written with matmul, transpose,
    scalar multiplies or divides, an additive mask and/or a select with a very
    negative fill, and a softmax over the key dimension, and replaces it with
    one `braid.attention`. A constant mask that is exactly causal becomes the
    `causal` attribute; any other mask is kept as the op's mask operand, with
    its semantics unchanged. The raised op computes the same values: nothing
    is raised when that cannot be shown from the IR (for example a select
    mask computed at run time, whose fully masked rows would differ).

    ```mlir
    %s = braid.matmul %q, %k transpose_rhs : ...
    %t = braid.mul %s, %c : ...          // scale
    %u = braid.add %t, %causal : ...     // constant causal mask
    %p = braid.softmax %u dim 3 : ...
    %o = braid.matmul %p, %v : ...
    // becomes
    %o = braid.attention %q, %k, %v causal scale ... : ...
    ```
  }];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

def BraidSplitFusedProjections : Pass<"braid-split-fused-projections"> {
  let summary = "Splits a fused projection into one projection per piece";
  let description = [{
    `split(reshape(x @ W + b))` along the last dimension, as GPT-2 computes q,
    k and v from one `c_attn` weight, becomes one projection per piece, each
    reading its block of `W` and `b` (`braid.get_weight ... block`). The split
    moves toward the producers through reshapes that keep the last dimension,
    elementwise add/sub/mul/div (an operand broadcast along it is shared),
    and matmul (the weight's columns are split). Nothing changes unless every
    op on the way feeds only the next one. The values are the same; the point
    is that `braid-partition` can then shard every piece by its own columns
    (Megatron's layout), which a fused weight split in contiguous blocks
    cannot give. `braidc --parallel` runs it before partitioning.

    ```mlir
    %y = braid.matmul %x, %w : (tensor<32x64xf32>, tensor<64x192xf32>) -> tensor<32x192xf32>
    %q, %k, %v = braid.split %y dim 1 : ...
    // becomes
    %wq = braid.get_weight @w block [64, 64] at [0, 0] : tensor<64x64xf32>
    %q = braid.matmul %x, %wq : ...      // and likewise k, v
    ```
  }];
  let dependentDialects = ["::mlir::braid::BraidDialect"];
}

def BraidPartition : Pass<"braid-partition", "::mlir::ModuleOp"> {
  let summary = "Partitions a single-device program over a mesh (SPMD)";
  let description = [{
    Turns `@main` into the program of one rank of a device mesh. With presets
    the pass creates `braid.mesh @world(dp = .., ep = .., cp = .., tp = ..)`
    from the axes given (outermost first; `tp` innermost, within a node);
    without presets, the program declares one mesh and annotates function
    arguments and ops with `#braid.sharding` (see the attribute).

    The mesh axes are partitioned one after another. Along one axis, every
    value is whole, sharded on one dimension, or a partial sum; shardings
    propagate forward through every op's dimension mapping, with no per-op
    cases: an op is computed in blocks of the factor that leads a sharded
    operand's dimension, when that factor is parallel, a reduction or routed
    tokens, divides by the axis size and leads every dimension it is in.
    Reshardings, cheapest first: an operand already sharded right is kept;
    one sharded on another dimension is exchanged with `braid.all_to_all`; a
    weight read only there is loaded sharded (`braid.get_weight ... sharded
    on`); anything else is sliced locally from `braid.rank`; a partial sum is
    completed by `braid.all_reduce` (or `braid.reduce_scatter` with `sp`);
    an operand the op needs whole is gathered with `braid.all_gather`. Ops
    that depend on absolute positions (causal attention's diagonal) learn
    where their block starts. Results of the function are whole on every
    rank.

    Presets:
    * `tp=N` (Megatron): a matmul or grouped matmul of a weight read only
      there is column parallel unless its contraction is already split (row
      parallel, followed by the all-reduce).
    * `sp=true` with `tp` (Megatron sequence parallelism): partial sums are
      reduce-scattered along the token dimension; column-parallel matmuls
      gather it back.
    * `dp=N`: every input is split along dimension 0 (batch).
    * `ep=N`: inputs are split along dimension 0, MoE dispatch routes this
      rank's tokens, grouped matmuls of expert weights are split by expert
      (an all-to-all before the experts and one before the combine).
    * `cp=N`: every input is split along dimension 1 (sequence); causal
      attention computes its block of queries against gathered keys/values
      (the ring and 2-D attention passes refine this).

    ```
    braid-opt --braid-partition="dp=2 tp=2" model.mlir
    ```
  }];
  let options = [
    Option<"tpSize", "tp", "int64_t", /*default=*/"0",
           "Ranks along the tensor-parallel axis 'tp' (Megatron)">,
    Option<"sequenceParallel", "sp", "bool", /*default=*/"false",
           "Sequence parallelism on the tp axis (reduce-scatter/all-gather)">,
    Option<"dpSize", "dp", "int64_t", /*default=*/"0",
           "Ranks along the data-parallel axis 'dp' (inputs split on dim 0)">,
    Option<"epSize", "ep", "int64_t", /*default=*/"0",
           "Ranks along the expert-parallel axis 'ep'">,
    Option<"cpSize", "cp", "int64_t", /*default=*/"0",
           "Ranks along the context-parallel axis 'cp' (inputs split on dim 1)">,
    Option<"functionName", "function", "std::string", /*default=*/"\"main\"",
           "The function to partition">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // BRAID_PASSES_PASSES_TD
