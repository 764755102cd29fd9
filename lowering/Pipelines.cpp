//===- Pipelines.cpp - braidc's lowering, as a named pipeline -------------===//

#include "lowering/Pipelines.h"

#include "lowering/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::braid;

void mlir::braid::buildLowerPipeline(OpPassManager &pm) {
  pm.addPass(createBraidToExec());
}

void mlir::braid::registerLoweringPipelines() {
  PassPipelineRegistration<>(
      "braid-lower-pipeline",
      "What braidc runs for --emit=exec and --emit=plan: braid-to-exec",
      buildLowerPipeline);
}
