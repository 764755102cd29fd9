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

def BraidVerifyCollectives
    : Pass<"braid-verify-collectives", "::mlir::ModuleOp"> {
  let summary = "Checks that every rank issues its collectives in one order";
  let description = [{
    Rejects SPMD programs that can deadlock because of `braid.async`: every
    rank runs the same program, so collectives issued by one stream keep
    the same order on every rank, but two streams that nothing orders may
    issue their collectives in different orders on different ranks, and
    collectives on one group must be issued in the same order by every
    member (the runtime's `Communicator` contract, as in MPI and NCCL).

    Ordering, as `braid-to-exec` lowers streams and events: ops outside any
    async run on the main stream ("compute") in program order; the body of
    `braid.async on "S"` runs on stream S, after everything before the
    async on the stream that reaches it and after every earlier async on S;
    a `braid.await` makes its stream wait until the awaited async's body is
    done. Collective A *happens before* B if a chain of these edges leads
    from A to B: for example A sits in the main flow before B's async, or
    A's async is awaited before B (or B's async) is reached, or both are on
    one stream. Ops inside other regions count at their place in program
    order.

    Two collectives *conflict* when neither happens before the other and
    both involve other ranks (their group, spanned by the mesh axes longer
    than 1, has more than one rank), and

    1. they use the same group: same mesh and same set of axes longer than
       1 (`["dp", "tp"]` and `["tp", "dp"]` are one group; so are `["tp"]`
       and `["dp", "tp"]` when `dp` has size 1). Ranks may issue them in
       different orders, which hangs or mismatches them; or
    2. their axis sets differ but share an axis, e.g. `["tp"]` and
       `["dp", "tp"]`. A backend may run a collective over several axes as
       collectives over some of them (hierarchical all-reduce: reduce-scatter
       within `tp`, all-reduce across `dp`, all-gather within `tp`), so both
       may end up on the `tp` communicator, in different orders on different
       ranks.

    Collectives on disjoint axis sets (`["dp"]` and `["tp"]`) or on two
    meshes use different communicators and do not conflict: the runtime
    progresses every communicator independently. NCCL on one GPU per rank
    does not promise that: NCCL kernels block while they wait for their
    peers, and NCCL's guide ("Using multiple NCCL communicators
    concurrently") asks for operations on different communicators to be
    issued in the same order on every rank. `serialized-collectives`
    checks for such a backend: then any two unordered collectives conflict.

    Each conflict is an error on the later collective in program order,
    with a note on the other; the pass fails. It also rejects what the
    ordering above does not cover (and `braid-to-exec` does not run): an
    async nested in another, and an async on the main stream's name. The
    IR is not changed.

    ```mlir
    %a = braid.async on "a" {
      %r = braid.all_reduce %x on @world["tp"] sum : tensor<8xf32>
      braid.yield %r : tensor<8xf32>
    } : !braid.future<tensor<8xf32>>
    %b = braid.async on "b" {
      // error: may be issued in different orders on different ranks
      %r = braid.all_reduce %y on @world["tp"] sum : tensor<8xf32>
      braid.yield %r : tensor<8xf32>
    } : !braid.future<tensor<8xf32>>
    ```
    Putting both on one stream, or awaiting `%a` before the second async,
    orders them.
  }];
  let options = [
    Option<"serializedCollectives", "serialized-collectives", "bool",
           /*default=*/"false",
           "Assume a rank runs one collective at a time (NCCL on one GPU): "
           "any two unordered collectives conflict">
  ];
}

#endif // BRAID_PASSES_PASSES_TD
