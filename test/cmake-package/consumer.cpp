// braid-consumer FILE PIPELINE: parses FILE with the braid dialect, runs the
// textual PIPELINE on its module (any Braid pass or named pipeline, as in
// "braid-domino{chunks=2 force=true}") and prints the result.
#include "dialects/braid/BraidDialect.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    llvm::errs() << "usage: braid-consumer FILE PIPELINE\n";
    return 2;
  }
  mlir::braid::registerBraidPasses();
  mlir::braid::registerBraidPipelines();
  mlir::MLIRContext context;
  context.loadDialect<mlir::braid::BraidDialect, mlir::arith::ArithDialect,
                      mlir::func::FuncDialect,
                      mlir::tensor::TensorDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  mlir::PassManager pm(&context, mlir::ModuleOp::getOperationName());
  if (!module || mlir::failed(mlir::parsePassPipeline(argv[2], pm)) ||
      mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
