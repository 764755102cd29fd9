//===- BraidStructureOps.cpp - meshes, weights, async/await ---------------===//

#include "dialects/braid/BraidDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace mlir::braid;

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  if (getAxisNames().empty())
    return emitOpError("needs at least one axis");
  if (getAxisNames().size() != shape.size())
    return emitOpError("has ") << getAxisNames().size() << " axis names but "
                               << shape.size() << " sizes";
  llvm::StringSet<> seen;
  for (auto [name, size] : llvm::zip(getAxisNames(), shape)) {
    StringRef axis = cast<StringAttr>(name).getValue();
    if (axis.empty())
      return emitOpError("has an axis with an empty name");
    if (!seen.insert(axis).second)
      return emitOpError("has axis '") << axis << "' twice";
    if (size < 1)
      return emitOpError("axis '")
             << axis << "' has size " << size << "; sizes must be positive";
  }
  return success();
}

std::optional<unsigned> MeshOp::getAxisIndex(StringRef axis) {
  for (auto [i, name] : llvm::enumerate(getAxisNames()))
    if (cast<StringAttr>(name).getValue() == axis)
      return i;
  return std::nullopt;
}

int64_t MeshOp::getGroupSize(ArrayAttr axes) {
  int64_t size = 1;
  for (Attribute axis : axes)
    if (std::optional<unsigned> index =
            getAxisIndex(cast<StringAttr>(axis).getValue()))
      size *= getShape()[*index];
  return size;
}

int64_t MeshOp::getNumDevices() {
  int64_t size = 1;
  for (int64_t axis : getShape())
    size *= axis;
  return size;
}

//===----------------------------------------------------------------------===//
// RankOp
//===----------------------------------------------------------------------===//

LogicalResult RankOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(*this, getMeshAttr());
  if (!mesh)
    return emitOpError("'") << getMesh() << "' is not a braid.mesh";
  if (!mesh.getAxisIndex(getAxis()))
    return emitOpError("mesh '")
           << getMesh() << "' has no axis '" << getAxis() << "'";
  return success();
}

void RankOp::getAsmResultNames(function_ref<void(Value, StringRef)> setNameFn) {
  setNameFn(getResult(), "rank");
}

//===----------------------------------------------------------------------===//
// GetWeightOp
//===----------------------------------------------------------------------===//

LogicalResult GetWeightOp::verify() {
  if (getOffsets().has_value() != getBlock().has_value())
    return emitOpError("needs both a block and its offsets, or neither");
  return success();
}

LogicalResult
SetWeightOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto weight =
      symbolTable.lookupNearestSymbolFrom<WeightOp>(*this, getNameAttr());
  if (!weight)
    return emitOpError("'") << getName() << "' is not a braid.weight";
  if (!weight.getState())
    return emitOpError("weight '")
           << getName() << "' is not declared `state`: only state weights "
           << "change between calls";
  if (getValue().getType() != weight.getTensorType())
    return emitOpError("value of type ")
           << getValue().getType() << " for weight '" << getName()
           << "' of type " << weight.getTensorType();
  return success();
}

LogicalResult
GetWeightOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto weight =
      symbolTable.lookupNearestSymbolFrom<WeightOp>(*this, getNameAttr());
  if (!weight)
    return emitOpError("'") << getName() << "' is not a braid.weight";
  RankedTensorType declared = weight.getTensorType();
  // What the op reads before sharding: the block, or the whole weight.
  RankedTensorType read = declared;
  if (std::optional<ArrayRef<int64_t>> block = getBlock()) {
    ArrayRef<int64_t> offsets = *getOffsets();
    int64_t rank = declared.getRank();
    if ((int64_t)block->size() != rank || (int64_t)offsets.size() != rank)
      return emitOpError("block has ")
             << block->size() << " sizes and " << offsets.size()
             << " offsets for weight '" << getName() << "' of rank " << rank;
    for (int64_t d = 0; d < rank; ++d) {
      std::optional<int64_t> end =
          llvm::checkedAdd<int64_t>(offsets[d], (*block)[d]);
      if (offsets[d] < 0 || (*block)[d] < 0 || !end ||
          *end > declared.getDimSize(d))
        return emitOpError("block dimension ")
               << d << " (offset " << offsets[d] << ", size " << (*block)[d]
               << ") does not fit in size " << declared.getDimSize(d)
               << " of weight '" << getName() << "'";
    }
    read = RankedTensorType::get(*block, declared.getElementType());
  }
  StringRef dimension = getBlock() ? "block dimension " : "dimension ";
  SmallVector<int64_t> expected(read.getShape());
  if (getSharding() || getMesh()) {
    if (!getSharding() || !getMesh())
      return emitOpError("needs both a mesh and a sharding");
    auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(*this, getMeshAttr());
    if (!mesh)
      return emitOpError("'") << *getMesh() << "' is not a braid.mesh";
    if (getSharding()->size() != expected.size())
      return emitOpError("sharding has ")
             << getSharding()->size() << " entries for a weight of rank "
             << expected.size();
    for (auto [d, entry] : llvm::enumerate(*getSharding())) {
      auto axes = dyn_cast<ArrayAttr>(entry);
      if (!axes || !llvm::all_of(axes, [&](Attribute a) {
            auto name = dyn_cast<StringAttr>(a);
            return name && mesh.getAxisIndex(name.getValue());
          }))
        return emitOpError("sharding entry ")
               << d << " must list axes of mesh '" << mesh.getSymName() << "'";
      int64_t parts = mesh.getGroupSize(axes);
      if (expected[d] % parts != 0)
        return emitOpError(dimension)
               << d << " of size " << expected[d] << " does not divide over "
               << parts << " ranks";
      expected[d] /= parts;
    }
  }
  if (ArrayRef<int64_t>(expected) != getResult().getType().getShape() ||
      declared.getElementType() != getResult().getType().getElementType()) {
    StringRef whole = getSharding() ? "this rank's slice of " : "the type ";
    StringRef block =
        getSharding() ? "this rank's slice of the block " : "the block ";
    return emitOpError("result type ")
           << getResult().getType() << " differs from "
           << (getBlock() ? block : whole) << read << " of weight '"
           << getName() << "'";
  }
  return success();
}

namespace {
/// Reads only the sliced box of a weight: a unit-stride slice with constant
/// offsets of an unsharded get_weight that nothing else uses becomes a
/// get_weight of a block (offsets add up with an existing block's).
struct SliceOfWeightToBlock : public OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto weight = slice.getInput().getDefiningOp<GetWeightOp>();
    if (!weight || weight.getMesh() || weight.getSharding() ||
        !weight->hasOneUse())
      return failure();
    if (!slice.getOffsets().empty() ||
        !llvm::all_of(slice.getStaticStrides(),
                      [](int64_t stride) { return stride == 1; }))
      return failure();
    SmallVector<int64_t> offsets(slice.getStaticOffsets());
    if (std::optional<ArrayRef<int64_t>> outer = weight.getOffsets())
      for (auto [offset, base] : llvm::zip_equal(offsets, *outer))
        offset += base;
    rewriter.replaceOpWithNewOp<GetWeightOp>(
        slice, slice.getType(), weight.getNameAttr(),
        rewriter.getDenseI64ArrayAttr(offsets),
        rewriter.getDenseI64ArrayAttr(slice.getStaticSizes()),
        /*mesh=*/nullptr, /*sharding=*/nullptr);
    rewriter.eraseOp(weight);
    return success();
  }
};
} // namespace

void GetWeightOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<SliceOfWeightToBlock>(context);
}

DimensionMapping GetWeightOp::getDimensionMapping() {
  return getElementwiseMapping(*this);
}

//===----------------------------------------------------------------------===//
// AsyncOp
//===----------------------------------------------------------------------===//

YieldOp AsyncOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

LogicalResult AsyncOp::verify() {
  if (getStream().empty())
    return emitOpError("needs a stream name");
  if (getResults().empty())
    return emitOpError("must return at least one future");
  Block &body = getBody().front();
  auto yield = dyn_cast_or_null<YieldOp>(body.empty() ? nullptr : &body.back());
  if (!yield)
    return emitOpError("body must end with braid.yield");
  if (yield.getValues().size() != getResults().size())
    return emitOpError("yields ")
           << yield.getValues().size() << " values but returns "
           << getResults().size() << " futures";
  for (auto [i, value, future] :
       llvm::enumerate(yield.getValues(), getResults())) {
    auto futureType = cast<FutureType>(future.getType());
    if (futureType.getValueType() != value.getType())
      return emitOpError("future #")
             << i << " has type " << futureType << " but the body yields "
             << value.getType();
  }
  return success();
}

namespace {
/// Drops futures nobody awaits; an async with none left is erased (its body
/// has no side effects beyond the values it computes).
struct RemoveUnusedFutures : public OpRewritePattern<AsyncOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AsyncOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<unsigned> used;
    for (auto [i, result] : llvm::enumerate(op.getResults()))
      if (!result.use_empty())
        used.push_back(i);
    if (used.size() == op.getNumResults())
      return failure();
    if (used.empty()) {
      if (!isMemoryEffectFree(op))
        return failure();
      rewriter.eraseOp(op);
      return success();
    }
    YieldOp yield = op.getYield();
    SmallVector<Type> types;
    SmallVector<Value> values;
    for (unsigned i : used) {
      types.push_back(op.getResult(i).getType());
      values.push_back(yield.getValues()[i]);
    }
    auto newOp =
        AsyncOp::create(rewriter, op.getLoc(), types, op.getStreamAttr());
    rewriter.inlineRegionBefore(op.getBody(), newOp.getBody(),
                                newOp.getBody().end());
    rewriter.setInsertionPoint(yield);
    rewriter.replaceOpWithNewOp<YieldOp>(yield, values);
    for (auto [newIndex, oldIndex] : llvm::enumerate(used))
      rewriter.replaceAllUsesWith(op.getResult(oldIndex),
                                  newOp.getResult(newIndex));
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void AsyncOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<RemoveUnusedFutures>(context);
}
