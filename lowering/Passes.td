//===- Passes.td - lowering passes -----------------------------*- tablegen -*-===//

#ifndef BRAID_LOWERING_PASSES_TD
#define BRAID_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def BraidToExec : Pass<"braid-to-exec", "::mlir::ModuleOp"> {
  let summary = "Lowers a single-rank braid program to an exec plan";
  let description = [{
    Replaces `func.func @main` (the SPMD program of one rank) by an
    `exec.plan @main`:

    * every tensor value gets a buffer in one arena; reshapes and awaits
      alias their source. Buffers whose lifetimes do not overlap share
      memory (first fit over program order); a value read inside a
      `braid.async` stays live until the matching `braid.await`, so reuse is
      safe across streams. The plan's `arena` is the peak, also reported as
      a remark when `report-memory` is set.
    * ops outside async regions go to stream "compute"; the ops of
      `braid.async on "S"` go to stream S after a wait on an event recorded
      where the async starts; `braid.await` waits for an event recorded when
      the region ends.
    * with `fuse-epilogues` (the default), an f32 `braid.matmul` takes in
      the ops that follow it on its stream, each the only user of the one
      before, with only compute on that stream between (no event) and its
      other operand made before the matmul (the op moves up to it): a bias
      add (an operand of the product's last dimension, broadcast over the
      rows), then an activation (`gelu`, `silu`, `relu`), then a residual
      add (an operand of the product's shape). The matmul kernel gets them as inputs and attributes
      (`has_bias`, `activation`, `has_addend`: out = activation(product +
      bias) + addend), the intermediate values get no buffer, and the
      product is written to memory once. Fusion is kept when the arena it
      leads to is no larger than the unfused one, or larger by at most 1%
      of it (first fit over the changed lifetimes can pack worse, often by
      an alignment unit) and within the memory limit braid-schedule kept
      (`braid.memory_limit` on the function), if any.
    * with `fuse-elementwise` (the default), after the epilogues, a tree of
      f32 elementwise ops of one shape (neg, exp, log, sqrt, rsqrt, tanh,
      erf, sigmoid, silu, relu, gelu, add, sub, mul, div) becomes one
      `elementwise` kernel at its root: an operand is taken into the tree
      when its op is such an op of the root's shape, the operand is its
      only use, and it runs earlier on the root's stream with only compute
      there in between (it moves down to the root). The kernel's inputs are
      the values the tree reads from outside (each broadcasting to the
      root's shape), `ops` names the ops in evaluation order and `operands`
      holds two registers per op (inputs first, then the ops' results; -1
      for a unary op's second); at most 8 inputs and 32 ops. Each op
      computes what its own kernel computes, so the results are the same
      bits, in one pass over memory. Kept under the same arena rule,
      judged tree by tree (and matmul by matmul for the epilogues): when
      all of them together do not fit, bisection finds the trees whose
      fusion grows the arena and leaves only those unfused.
    * a state weight's next value (`braid.set_weight`) is copied into the
      weight after the rest of the step, except when an elementwise kernel
      on the main stream makes it, the step reads the weight once, and
      every reader of the weight runs on the main stream no later than that
      kernel: the kernel then writes the value over the weight (its buffer
      is the weight's), with no copy and no buffer of its own.
    * compute ops become `exec.kernel` with their attributes and cost;
      collectives become `exec.collective`; weights, constants, inputs and
      outputs become bindings; `braid.rank` and index arithmetic become
      run-time index expressions.
  }];
  let options = [
    Option<"functionName", "function", "std::string", /*default=*/"\"main\"",
           "The function to lower (the program of one rank)">,
    Option<"reportMemory", "report-memory", "bool", /*default=*/"false",
           "Emit a remark with the arena size and the bytes saved by reuse">,
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Byte alignment of every buffer">,
    Option<"fuseEpilogues", "fuse-epilogues", "bool", /*default=*/"true",
           "Fuse the bias add, activation and residual add that follow a "
           "matmul into its kernel">,
    Option<"fuseElementwise", "fuse-elementwise", "bool", /*default=*/"true",
           "Fuse trees of f32 elementwise ops of one shape into one "
           "`elementwise` kernel">
  ];
  let dependentDialects = ["::mlir::exec::ExecDialect"];
}

#endif // BRAID_LOWERING_PASSES_TD
