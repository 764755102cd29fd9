//===- ExecDialect.h - the exec dialect -------------------------*- C++ -*-===//

#ifndef BRAID_DIALECTS_EXEC_EXECDIALECT_H
#define BRAID_DIALECTS_EXEC_EXECDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"

#include "dialects/exec/ExecOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/exec/ExecOps.h.inc"

#endif // BRAID_DIALECTS_EXEC_EXECDIALECT_H
