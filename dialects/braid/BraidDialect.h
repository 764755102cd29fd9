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

#endif // BRAID_DIALECTS_BRAID_BRAIDDIALECT_H
