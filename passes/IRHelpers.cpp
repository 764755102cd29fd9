//===- IRHelpers.cpp - small IR builders the passes share -----------------===//

#include "passes/IRHelpers.h"

#include "mlir/IR/Verifier.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::braid;

Value mlir::braid::sliceAlong(OpBuilder &b, Location loc, Value v, int64_t dim,
                              int64_t offset, int64_t size) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
      strides(type.getRank(), 1);
  offsets[dim] = offset;
  sizes[dim] = size;
  return SliceOp::create(b, loc,
                         RankedTensorType::get(sizes, type.getElementType()),
                         v, ValueRange{}, b.getDenseI64ArrayAttr(offsets),
                         b.getDenseI64ArrayAttr(sizes),
                         b.getDenseI64ArrayAttr(strides));
}

Value mlir::braid::groupIndex(OpBuilder &b, Location loc, MeshOp mesh,
                              ArrayRef<StringRef> axes) {
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  Value index;
  for (StringRef axis : axes) {
    Value r = RankOp::create(b, loc, meshRef, b.getStringAttr(axis));
    if (!index) {
      index = r;
      continue;
    }
    int64_t size = mesh.getGroupSize(b.getStrArrayAttr({axis}));
    index = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, index,
                              arith::ConstantIndexOp::create(b, loc, size)),
        r);
  }
  return index;
}

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
