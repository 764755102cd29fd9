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
           "Byte alignment of every buffer">
  ];
  let dependentDialects = ["::mlir::exec::ExecDialect"];
}

#endif // BRAID_LOWERING_PASSES_TD
