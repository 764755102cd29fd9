//===- braid-opt.cpp - the braid optimizer driver -------------------------===//
//
// MlirOptMain with the braid dialect, its passes and named pipelines (what
// braidc runs: passes/Pipelines.h, lowering/Pipelines.h), and the upstream
// dialects and passes Braid programs use.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "dialects/exec/ExecDialect.h"
#include "lowering/Passes.h"
#include "lowering/Pipelines.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "tools/common/ToolOptions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  // What libMLIR registered at load time is LLVM's backends and codegen
  // (and mlir-opt's -o); MlirOptMain registers --pass-pipeline and the
  // --mlir-* flags after this, so they stay.
  mlir::braid::hideRegisteredOptions({"o"});
  mlir::braid::setBraidVersionPrinter("braid-opt");

  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  mlir::registerSCCPPass();
  mlir::braid::registerBraidPasses();
  mlir::braid::registerBraidPipelines();
  mlir::braid::registerLoweringPasses();
  mlir::braid::registerLoweringPipelines();

  mlir::DialectRegistry registry;
  registry.insert<mlir::braid::BraidDialect, mlir::exec::ExecDialect,
                  mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::tensor::TensorDialect>();
  // The pass and pipeline flags first in --help: MlirOptMain registers them
  // here (again there, to the same options).
  mlir::MlirOptMainConfig::registerCLOptions(registry);
  if (llvm::cl::Option *passes =
          llvm::cl::getRegisteredOptions().lookup("braid-partition"))
    passes->addCategory(mlir::braid::getBraidToolCategory());
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Braid optimizer: passes on the braid dialect\n", registry));
}
