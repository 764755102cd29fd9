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

def BraidPartition : Pass<"braid-partition", "::mlir::ModuleOp"> {
  let summary = "Partitions a single-device program over a mesh (SPMD)";
  let description = [{
    Turns `@main` into the program of one rank of `braid.mesh @world(tp = N)`
    (created if absent). Shardings propagate forward through every op's
    dimension mapping (no per-op cases): a dimension is sharded when its
    major factor is; a reduction factor that is sharded makes the result a
    partial sum, completed by an inserted `braid.all_reduce` before its first
    use; a sharded factor an op needs whole (softmax axis, norm axis, split
    dimension) is first gathered with `braid.all_gather`. Operands that must
    match a sharded factor are sharded where they are free to be: a weight
    read only there is loaded sliced (`braid.get_weight ... sharded on`);
    anything else is sliced locally from this rank's index.

    Preset `tp` (Megatron): a matmul whose right operand is a weight and
    whose left operand is replicated becomes column parallel (the weight's
    output dimension sharded); one whose left operand's contraction is
    sharded becomes row parallel, followed by the all-reduce. Results of the
    function are gathered to full tensors.

    Preset `dp`: every rank takes its block of each input's first (batch)
    dimension and the sharding propagates from there; weights stay
    replicated; results are gathered.
  }];
  let options = [
    Option<"preset", "preset", "std::string", /*default=*/"\"tp\"",
           "The partitioning preset: tp (Megatron) or dp (batch split)">,
    Option<"tpSize", "tp", "int64_t", /*default=*/"2",
           "Number of ranks along the tensor-parallel axis (preset tp)">,
    Option<"dpSize", "dp", "int64_t", /*default=*/"2",
           "Number of ranks along the data-parallel axis (preset dp)">,
    Option<"functionName", "function", "std::string", /*default=*/"\"main\"",
           "The function to partition">
  ];
  let dependentDialects = ["::mlir::braid::BraidDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // BRAID_PASSES_PASSES_TD
