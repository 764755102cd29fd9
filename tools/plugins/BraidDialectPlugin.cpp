//===- BraidDialectPlugin.cpp - braid as an mlir-opt dialect plugin -------===//
//
//   mlir-opt-22 --load-dialect-plugin=lib/BraidDialectPlugin.so model.mlir
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Braid", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            registry->insert<mlir::braid::BraidDialect>();
          }};
}
