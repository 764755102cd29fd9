//===- BraidPassPlugin.cpp - braid passes as an mlir-opt pass plugin ------===//
//
//   mlir-opt-22 --load-dialect-plugin=lib/BraidDialectPlugin.so
//     --load-pass-plugin=lib/BraidPassPlugin.so
//     --pass-pipeline='builtin.module(braid-cost-report)' model.mlir
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "BraidPasses", LLVM_VERSION_STRING,
          []() { mlir::braid::registerBraidPasses(); }};
}
