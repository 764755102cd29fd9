//===- Passes.h - braid passes ----------------------------------*- C++ -*-===//

#ifndef BRAID_PASSES_PASSES_H
#define BRAID_PASSES_PASSES_H

#include "passes/AutoCount.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace braid {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace braid
} // namespace mlir

#endif // BRAID_PASSES_PASSES_H
