//===- BraidDialect.h - the braid dialect -----------------------*- C++ -*-===//
//
// Include this header to use the braid dialect: its types, attributes,
// interfaces and ops.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECTS_BRAID_BRAIDDIALECT_H
#define BRAID_DIALECTS_BRAID_BRAIDDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/braid/BraidOpsDialect.h.inc"
#include "dialects/braid/BraidOpsEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/braid/BraidOpsAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "dialects/braid/BraidOpsTypes.h.inc"

#include "dialects/braid/DimensionMapping.h"

#include "dialects/braid/BraidInterfaces.h.inc"

namespace mlir {
namespace braid {
class YieldOp;
} // namespace braid
} // namespace mlir

#define GET_OP_CLASSES
#include "dialects/braid/BraidOps.h.inc"

namespace mlir {
namespace braid {
/// Optional work (braid-acco's run-time micro-batch count), as discardable
/// attributes that braid-schedule keeps and braid-to-exec lowers to the
/// plan's optional groups:
/// - `braid.optional = G : i64` on the ops of optional group G, work a run
///   may skip (its results then read as zeros);
/// - `braid.optional_until = array<i64: R0, R1, ...>` on the function:
///   group G may be skipped once every collective of communication round
///   R_G is done;
/// - `braid.round = R : i64` on the work of communication round R: its
///   collectives and the kernels between them (the optimizer update on
///   this rank's shard), which braid-schedule puts on the communication
///   stream;
/// - `braid.micro_batch = K : i64` on the ops of micro-batch K: braid-schedule
///   starts an optional micro-batch only after micro-batch K - 1, so that a
///   run decides on it when the work before it is done.
constexpr llvm::StringLiteral kMicroBatchAttrName = "braid.micro_batch";
constexpr llvm::StringLiteral kOptionalAttrName = "braid.optional";
constexpr llvm::StringLiteral kOptionalUntilAttrName = "braid.optional_until";
constexpr llvm::StringLiteral kRoundAttrName = "braid.round";

/// `braid.stop_gradient` (unit) on an op: braid-autodiff treats its results
/// as constants (no gradient flows back through it).
constexpr llvm::StringLiteral kStopGradientAttrName = "braid.stop_gradient";

/// `braid.regather` (unit) on an all-gather: it gathers again what an
/// earlier identical gather of the step (ZeRO-3's forward parameter gather,
/// sequence parallelism's forward activation gather) had, so that the first
/// copy can die after the forward pass. CSE leaves it alone; braid-schedule
/// under a memory limit keeps the earlier copy instead where it fits.
constexpr llvm::StringLiteral kRegatherAttrName = "braid.regather";
} // namespace braid
} // namespace mlir

#endif // BRAID_DIALECTS_BRAID_BRAIDDIALECT_H
