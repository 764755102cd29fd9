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

#endif // BRAID_PASSES_PASSES_TD
