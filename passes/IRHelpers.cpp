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

FailureOr<OneRankStep> mlir::braid::checkOneRankStep(ModuleOp module,
                                                     StringRef pass,
                                                     StringRef algorithm) {
  auto error = [&](Operation *at) { return at->emitError() << pass << ": "; };
  OneRankStep step;
  step.main = module.lookupSymbol<func::FuncOp>("main");
  if (!step.main || step.main.isExternal())
    return error(module) << "no function @main with a body", failure();
  step.training = step.main->getAttrOfType<DictionaryAttr>("braid.training");
  if (!step.training)
    return error(step.main)
               << "@main is not a training step (no braid.training: run "
                  "braid-next-token-loss, braid-autodiff and "
                  "braid-training-step first)",
           failure();
  if (step.training.get("steps"))
    return error(step.main) << "@main already runs several steps per call",
           failure();
  if (!module.getOps<MeshOp>().empty())
    return error(step.main)
               << "the module is partitioned already (it declares a mesh); "
               << algorithm
               << " runs a one-rank step on each data-parallel rank",
           failure();
  step.ret = cast<func::ReturnOp>(step.main.getBody().front().getTerminator());
  step.lossType =
      step.ret.getNumOperands() == 1
          ? dyn_cast<RankedTensorType>(step.ret.getOperand(0).getType())
          : RankedTensorType();
  if (!step.lossType || step.lossType.getRank() != 0 ||
      !step.lossType.getElementType().isF32())
    return error(step.main) << "@main must return only the scalar f32 loss",
           failure();
  StringRef tokens = step.training.getAs<StringAttr>("tokens").getValue();
  StringRef labels = step.training.getAs<StringAttr>("labels").getValue();
  step.batch = step.training.getAs<IntegerAttr>("batch").getInt();
  for (unsigned i = 0; i < step.main.getNumArguments(); ++i) {
    auto name = step.main.getArgAttrOfType<StringAttr>(i, "braid.name");
    step.data.push_back(name && (name.getValue() == tokens ||
                                 name.getValue() == labels));
  }
  return step;
}

AllGatherOp mlir::braid::firstSameGather(AllGatherOp gather) {
  Value root = gather.getInput();
  while (auto reshape = root.getDefiningOp<ReshapeOp>())
    root = reshape.getInput();
  AllGatherOp first;
  SmallVector<Value> pending{root};
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (auto reshape = dyn_cast<ReshapeOp>(user)) {
        pending.push_back(reshape.getResult());
        continue;
      }
      auto other = dyn_cast<AllGatherOp>(user);
      if (!other || other == gather ||
          other->getBlock() != gather->getBlock() ||
          !other->isBeforeInBlock(gather) ||
          other.getInput().getType() != gather.getInput().getType() ||
          other.getType() != gather.getType() ||
          other.getDim() != gather.getDim() ||
          other.getMeshAttr() != gather.getMeshAttr() ||
          other.getMeshAxesAttr() != gather.getMeshAxesAttr())
        continue;
      if (!first || other->isBeforeInBlock(first))
        first = other;
    }
  }
  return first;
}
