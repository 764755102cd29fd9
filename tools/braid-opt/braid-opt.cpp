//===- braid-opt.cpp - the braid optimizer driver -------------------------===//
//
// MlirOptMain with the braid dialect, its passes, and the upstream dialects
// and passes Braid programs use.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "dialects/exec/ExecDialect.h"
#include "lowering/Passes.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  mlir::registerSCCPPass();
  mlir::braid::registerBraidPasses();
  mlir::braid::registerLoweringPasses();

  mlir::DialectRegistry registry;
  registry.insert<mlir::braid::BraidDialect, mlir::exec::ExecDialect,
                  mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::tensor::TensorDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Braid optimizer: passes on the braid dialect\n", registry));
}
