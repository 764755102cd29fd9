//===- Passes.h - lowering passes -------------------------------*- C++ -*-===//

#ifndef BRAID_LOWERING_PASSES_H
#define BRAID_LOWERING_PASSES_H

#include "dialects/exec/ExecDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace braid {

#define GEN_PASS_DECL
#include "lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lowering/Passes.h.inc"

} // namespace braid
} // namespace mlir

#endif // BRAID_LOWERING_PASSES_H
