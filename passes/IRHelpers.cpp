//===- IRHelpers.cpp - small IR builders the passes share -----------------===//

#include "passes/IRHelpers.h"

#include "mlir/IR/Verifier.h"


using namespace mlir;
using namespace mlir::braid;

LogicalResult mlir::braid::computeOnBlock(OpBuilder &b, Operation *op,
                                          const DimensionMapping &mapping,
                                          ArrayRef<FactorBlock> blocks) {
  for (auto [result, dims] :
       llvm::zip(op->getResults(), mapping.getResults())) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      continue;
    SmallVector<int64_t> shape(type.getShape());
    for (auto [d, dimFactors] : llvm::enumerate(dims))
      if (!dimFactors.empty())
        shape[d] = mapping.blockDimSize(dimFactors, blocks);
    result.setType(RankedTensorType::get(shape, type.getElementType()));
  }
  auto mappingOp = cast<DimensionMappingOpInterface>(op);
  for (const FactorBlock &block : blocks)
    if (failed(mappingOp.restrictToBlock(b, mapping, block)))
      return op->emitOpError("cannot compute a block of factor f")
             << block.factor << " of its dimension mapping";
  if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
    return op->emitOpError("does not verify when computing a block of "
                           "factor f")
           << blocks.front().factor << " of its dimension mapping";
  return success();
}
