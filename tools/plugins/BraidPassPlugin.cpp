//===- BraidPassPlugin.cpp - braid passes as an mlir-opt pass plugin ------===//
//
//   mlir-opt-22 --load-dialect-plugin=lib/BraidDialectPlugin.so
//     --load-pass-plugin=lib/BraidPassPlugin.so
//     --pass-pipeline='builtin.module(braid-cost-report)' model.mlir
//
// The braid passes, braid-to-exec and the named pipelines braidc runs
// (braid-import-pipeline, braid-parallel-pipeline, braid-overlap-pipeline,
// braid-lower-pipeline), all reachable through --pass-pipeline=.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Pipelines.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "BraidPasses", LLVM_VERSION_STRING, []() {
            mlir::braid::registerBraidPasses();
            mlir::braid::registerBraidPipelines();
            mlir::braid::registerLoweringPasses();
            mlir::braid::registerLoweringPipelines();
          }};
}
