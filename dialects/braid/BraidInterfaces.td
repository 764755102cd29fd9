//===- BraidInterfaces.td - dimension mapping and cost ---------*- tablegen -*-===//
//
// The two interfaces every braid compute op implements. Partitioning and the
// overlap passes (Domino, ISO, COMET) are written against these, never against
// op names, so a new op needs no change in any pass.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAIDINTERFACES_TD
#define BRAID_DIALECT_BRAIDINTERFACES_TD

include "mlir/IR/OpBase.td"

def Braid_DimensionMappingOpInterface : OpInterface<"DimensionMappingOpInterface"> {
  let cppNamespace = "::mlir::braid";
  let description = [{
    Describes how the dimensions of an op's tensor operands and results relate,
    in the style of Shardy's sharding rules: the op has an iteration space of
    *factors*; every dimension of every tensor operand and result is the
    (major-to-minor) product of zero or more factors. Each factor has a kind:

    * `parallel`: slices along it are independent; it appears in a result.
    * `reduction`: it appears only in operands; a slice of it yields a partial
      result that the factor's combiner (sum, max, ...) completes.
    * `whole`: the op needs the dimension in one piece (softmax axis, norm
      axis, top-k axis, a gathered table's rows).
    * `causal`: it appears only in operands; chunk i along the factor named by
      `prefixOf` needs chunks 0..i of this one (keys/values of causal
      attention along the sequence).

    Example: `matmul [2x8x16] x [16x32]` maps as
    `([f0, f1, f3], [f3, f2]) -> ([f0, f1, f2]) {f0 = 2, f1 = 8, f2 = 32, f3 = 16 sum}`.
  }];
  let methods = [
    InterfaceMethod<
      "Returns the factor mapping of every tensor operand and result dimension.",
      "::mlir::braid::DimensionMapping", "getDimensionMapping">,
    InterfaceMethod<[{
        Whether the op can compute only a block of factor `factor` of
        `mapping` split `within` ways (see `FactorBlock`): an op whose
        meaning depends on absolute positions along the factor can compute a
        contiguous block (`within` = 1), whose start it is told, but not a
        strided one. Most ops can compute any block.
      }],
      "bool", "canComputeBlock",
      (ins "const ::mlir::braid::DimensionMapping &":$mapping,
           "unsigned":$factor, "int64_t":$within),
      [{}], [{ return true; }]>,
    InterfaceMethod<[{
        Called when this op is about to compute only `block` of one factor
        of `mapping` (the op's mapping before the rewrite), after its
        operands and result types were made the block's: partitioning (a
        rank's share) and chunking (Domino, ISO) both call it, through
        `computeOnBlock`. An op that keeps shapes in attributes updates them
        from its types (slice sizes); an op whose meaning depends on
        absolute positions records the block's start (causal attention
        shifts its diagonal). Returns failure if it cannot. Most ops need
        nothing.
      }],
      "::mlir::LogicalResult", "restrictToBlock",
      (ins "::mlir::OpBuilder &":$builder,
           "const ::mlir::braid::DimensionMapping &":$mapping,
           "const ::mlir::braid::FactorBlock &":$block),
      [{}], [{ return ::mlir::success(); }]>,
    InterfaceMethod<[{
        Whether the op is linear in the operands marked in `partial` (one
        entry per operand) jointly: computed on every rank's partial sums of
        those operands and the same whole values of the others, it gives
        partial sums of its results. An add of two partial sums is one; an
        add of a partial sum and a whole value is not (the whole value would
        be counted once per rank). Partitioning lets a partial sum flow
        through such ops and completes it later, once (Megatron's single
        all-reduce after an MoE layer's combine and shared expert). Default:
        not linear.
      }],
      "bool", "propagatesPartialSums", (ins "::llvm::ArrayRef<bool>":$partial),
      [{}], [{ return false; }]>
  ];
}

def Braid_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::braid";
  let description = [{
    Reverse-mode differentiation of one op: its vector-Jacobian product,
    emitted as braid ops. `braid-autodiff` walks a function backwards and
    asks each op for the adjoints of its operands given the adjoints of its
    results; it never names an op, so a new op needs only this method.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits, at the builder's insertion point, the adjoint of every operand
        given `resultGrads` (one per result, each of its result's type; a
        null value is a zero adjoint, and at least one is non-null). Appends
        one value per operand to `operandGrads`: the operand's adjoint (of
        the operand's type), or null where the op is not differentiable in
        that operand (indices, masks, conditions, a runtime offset). The
        rule may read the op's operands and results (they stay available:
        reverse mode runs after the forward pass). Fails, with a diagnostic
        on the op, when it cannot differentiate this instance.
      }],
      "::mlir::LogicalResult", "emitGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
    InterfaceMethod<[{
        Whether the op is differentiable in operand `index`: its rule gives
        that operand an adjoint. By default every float tensor operand is;
        ops with float operands that only select or position (a comparison,
        rotary tables, an attention mask) say no. `braid-autodiff` does not
        train a weight read only through such operands.
      }],
      "bool", "isDifferentiableIn", (ins "unsigned":$index), [{}], [{
        auto type = ::llvm::dyn_cast<::mlir::RankedTensorType>(
            $_op->getOperand(index).getType());
        return type && ::llvm::isa<::mlir::FloatType>(type.getElementType());
      }]>
  ];
}

def Braid_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::braid";
  let description = [{
    The work an op does for its operand and result shapes: floating-point
    operations (a multiply-add counts as two) and the minimum bytes it must move
    to and from memory (each operand read once, each result written once, less
    where the op provably touches less). The cost model turns these into time
    with a roofline per device.
  }];
  let methods = [
    InterfaceMethod<"Returns the number of arithmetic operations.",
      "int64_t", "getFlops">,
    InterfaceMethod<"Returns the minimum number of bytes read plus written.",
      "int64_t", "getMinBytes", (ins), [{}], [{
        return ::mlir::braid::getOperandAndResultBytes($_op);
      }]>
  ];
}

def Braid_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::braid";
  let description = [{
    Implemented by every collective: the mesh and the axes that span its group,
    and the one tensor it communicates. Passes that reorder, split or verify
    communication use this instead of listing collective ops.
  }];
  let methods = [
    InterfaceMethod<"Returns the mesh symbol.", "::mlir::FlatSymbolRefAttr",
      "getMeshAttr">,
    InterfaceMethod<"Returns the names of the mesh axes spanning the group.",
      "::mlir::ArrayAttr", "getMeshAxes">,
    InterfaceMethod<"Returns the communicated tensor.", "::mlir::Value",
      "getInput">
  ];
}

#endif // BRAID_DIALECT_BRAIDINTERFACES_TD
