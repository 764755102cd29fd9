//===- BraidStructureOps.cpp - meshes, weights, async/await ---------------===//

#include "dialects/braid/BraidDialect.h"
#include "dialects/braid/Builders.h"

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

/// Divides `shape` (a weight's, or its block's) by the sharding `sharding`
/// over `meshRef` that `op` reads or writes it with: this rank's slice. Both
/// or neither must be given; `dimension` names what `shape` is in errors.
static LogicalResult shardShape(Operation *op,
                                SymbolTableCollection &symbolTable,
                                FlatSymbolRefAttr meshRef, ArrayAttr sharding,
                                StringRef dimension,
                                SmallVectorImpl<int64_t> &shape) {
  if (!sharding && !meshRef)
    return success();
  if (!sharding || !meshRef)
    return op->emitOpError("needs both a mesh and a sharding");
  auto mesh = symbolTable.lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!mesh)
    return op->emitOpError("'") << meshRef.getValue() << "' is not a braid.mesh";
  if (sharding.size() != shape.size())
    return op->emitOpError("sharding has ")
           << sharding.size() << " entries for a weight of rank "
           << shape.size();
  for (auto [d, entry] : llvm::enumerate(sharding)) {
    auto axes = dyn_cast<ArrayAttr>(entry);
    if (!axes || !llvm::all_of(axes, [&](Attribute a) {
          auto name = dyn_cast<StringAttr>(a);
          return name && mesh.getAxisIndex(name.getValue());
        }))
      return op->emitOpError("sharding entry ")
             << d << " must list axes of mesh '" << mesh.getSymName() << "'";
    int64_t parts = mesh.getGroupSize(axes);
    if (shape[d] % parts != 0)
      return op->emitOpError(dimension)
             << d << " of size " << shape[d] << " does not divide over "
             << parts << " ranks";
    shape[d] /= parts;
  }
  return success();
}

/// Checks that the box of `sizes` at `offsets` lies inside `shape` (all of
/// the same rank); names the first dimension that does not fit as
/// "`what` dimension D ... of `of`".
static LogicalResult checkBoxFits(Operation *op, StringRef what,
                                  ArrayRef<int64_t> offsets,
                                  ArrayRef<int64_t> sizes,
                                  ArrayRef<int64_t> shape, const Twine &of) {
  for (size_t d = 0; d < shape.size(); ++d) {
    std::optional<int64_t> end =
        llvm::checkedAdd<int64_t>(offsets[d], sizes[d]);
    if (offsets[d] < 0 || sizes[d] < 0 || !end || *end > shape[d])
      return op->emitOpError(what)
             << " dimension " << d << " (offset " << offsets[d] << ", size "
             << sizes[d] << ") does not fit in size " << shape[d] << " of "
             << of;
  }
  return success();
}

LogicalResult WeightOp::verify() {
  if (getPartOf().has_value() != getPartShape().has_value() ||
      getPartOf().has_value() != getPartOffsets().has_value())
    return emitOpError("a part needs the stored name, shape and offsets");
  if (!getPartOf())
    return success();
  RankedTensorType type = getTensorType();
  ArrayRef<int64_t> shape = *getPartShape(), offsets = *getPartOffsets();
  int64_t rank = type.getRank();
  if ((int64_t)shape.size() != rank || (int64_t)offsets.size() != rank)
    return emitOpError("is a part of rank ")
           << rank << " of '" << *getPartOf() << "' given " << shape.size()
           << " sizes and " << offsets.size() << " offsets";
  return checkBoxFits(*this, "part", offsets, type.getShape(), shape,
                      "'" + *getPartOf() + "'");
}

std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
WeightOp::getStoredBox(std::optional<ArrayRef<int64_t>> offsets,
                       std::optional<ArrayRef<int64_t>> sizes) {
  if (!getPartOf() && !sizes)
    return std::nullopt;
  ArrayRef<int64_t> shape = getTensorType().getShape();
  SmallVector<int64_t> start(shape.size(), 0);
  if (std::optional<ArrayRef<int64_t>> part = getPartOffsets())
    start.assign(part->begin(), part->end());
  if (offsets)
    for (auto [s, o] : llvm::zip(start, *offsets))
      s += o;
  return std::make_pair(start, SmallVector<int64_t>(sizes ? *sizes : shape));
}

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
  SmallVector<int64_t> expected(weight.getTensorType().getShape());
  if (failed(shardShape(*this, symbolTable, getMeshAttr(), getShardingAttr(),
                        "dimension ", expected)))
    return failure();
  if (ArrayRef<int64_t>(expected) != getValue().getType().getShape() ||
      weight.getTensorType().getElementType() !=
          getValue().getType().getElementType())
    return emitOpError("value of type ")
           << getValue().getType() << " for "
           << (getSharding() ? "this rank's slice of " : "") << "weight '"
           << getName() << "' of type " << weight.getTensorType();
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
    if (failed(checkBoxFits(*this, "block", offsets, *block,
                            declared.getShape(), "weight '" + getName() + "'")))
      return failure();
    read = RankedTensorType::get(*block, declared.getElementType());
  }
  SmallVector<int64_t> expected(read.getShape());
  if (failed(shardShape(*this, symbolTable, getMeshAttr(), getShardingAttr(),
                        getBlock() ? "block dimension " : "dimension ",
                        expected)))
    return failure();
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
/// The block of the stored weight that `slice` of `weight` reads, as
/// (offsets, sizes) in the weight's unsharded coordinates; none unless the
/// slice has constant offsets and unit strides and cuts only dimensions the
/// read does not shard (a cut of a sharded dimension would take a different
/// box on every rank).
std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
sliceAsBlock(GetWeightOp weight, SliceOp slice) {
  if (!slice.getOffsets().empty() ||
      !llvm::all_of(slice.getStaticStrides(),
                    [](int64_t stride) { return stride == 1; }))
    return std::nullopt;
  auto decl = SymbolTable::lookupNearestSymbolFrom<WeightOp>(
      weight, weight.getNameAttr());
  if (!decl || decl.getState())
    return std::nullopt;
  ArrayRef<int64_t> local = weight.getType().getShape();
  ArrayRef<int64_t> declared = decl.getTensorType().getShape();
  SmallVector<int64_t> offsets(local.size(), 0), sizes(declared);
  if (std::optional<ArrayRef<int64_t>> base = weight.getOffsets())
    offsets.assign(base->begin(), base->end());
  if (std::optional<ArrayRef<int64_t>> block = weight.getBlock())
    sizes.assign(block->begin(), block->end());
  if (offsets.size() != local.size() || sizes.size() != local.size())
    return std::nullopt;
  for (auto [d, offset, size] : llvm::enumerate(slice.getStaticOffsets(),
                                                slice.getStaticSizes())) {
    if (offset == 0 && size == local[d])
      continue;
    if (std::optional<ArrayAttr> sharding = weight.getSharding()) {
      auto axes = dyn_cast<ArrayAttr>((*sharding)[d]);
      if (!axes || !axes.empty())
        return std::nullopt;
    }
    offsets[d] += offset;
    sizes[d] = size;
  }
  return std::make_pair(std::move(offsets), std::move(sizes));
}

/// Reads only the sliced boxes of `weight` (see readWeightSlicesAsBlocks).
LogicalResult sliceReadsToBlocks(GetWeightOp weight, RewriterBase &rewriter) {
  if (weight->use_empty())
    return failure();
  SmallVector<std::pair<SliceOp, std::pair<SmallVector<int64_t>,
                                           SmallVector<int64_t>>>>
      blocks;
  for (Operation *user : weight->getUsers()) {
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice || slice.getInput() != weight.getResult())
      return failure();
    auto block = sliceAsBlock(weight, slice);
    if (!block)
      return failure();
    blocks.emplace_back(slice, std::move(*block));
  }
  for (auto &[slice, block] : blocks) {
    rewriter.setInsertionPoint(slice);
    rewriter.replaceOpWithNewOp<GetWeightOp>(
        slice, slice.getType(), weight.getNameAttr(),
        rewriter.getDenseI64ArrayAttr(block.first),
        rewriter.getDenseI64ArrayAttr(block.second), weight.getMeshAttr(),
        weight.getShardingAttr());
  }
  rewriter.eraseOp(weight);
  return success();
}

/// Reads only the sliced boxes of a weight: when every use of a
/// `braid.get_weight` of a (non-state) weight is a unit-stride slice with
/// constant offsets that cuts only unsharded dimensions, each slice becomes
/// a get_weight of a block (offsets add up with an existing block's), which
/// the runtime cuts once at load instead of a copy kernel every run. Every
/// use or none, so no weight is loaded both whole and in blocks.
struct SliceOfWeightToBlock : public OpRewritePattern<GetWeightOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GetWeightOp weight,
                                PatternRewriter &rewriter) const override {
    return sliceReadsToBlocks(weight, rewriter);
  }
};
} // namespace

int64_t mlir::braid::readWeightSlicesAsBlocks(Operation *root) {
  SmallVector<GetWeightOp> reads;
  root->walk([&](GetWeightOp read) { reads.push_back(read); });
  IRRewriter rewriter(root->getContext());
  int64_t replaced = 0;
  for (GetWeightOp read : reads)
    replaced += succeeded(sliceReadsToBlocks(read, rewriter));
  return replaced;
}

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
