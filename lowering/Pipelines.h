//===- Pipelines.h - braidc's lowering, as a named pipeline -----*- C++ -*-===//
//
//   braid-lower-pipeline    braid-to-exec (braidc --emit=exec and plan)
//
// The pipelines before it are in passes/Pipelines.h.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LOWERING_PIPELINES_H
#define BRAID_LOWERING_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace braid {

/// Adds braid-lower-pipeline: the braid program of one rank to exec.
void buildLowerPipeline(OpPassManager &pm);

/// Registers braid-lower-pipeline by name.
void registerLoweringPipelines();

} // namespace braid
} // namespace mlir

#endif // BRAID_LOWERING_PIPELINES_H
