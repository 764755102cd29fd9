//===- BraidCollectiveOps.cpp - collectives on mesh axes ------------------===//

#include "dialects/braid/BraidDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::braid;

/// Looks up the mesh of a collective; null if the symbol is not a mesh.
static MeshOp lookupMesh(Operation *op, FlatSymbolRefAttr mesh,
                         SymbolTableCollection *symbolTable = nullptr) {
  if (symbolTable)
    return symbolTable->lookupNearestSymbolFrom<MeshOp>(op, mesh);
  return SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, mesh);
}

/// Checks the mesh and axes of a collective and returns its group size.
static FailureOr<int64_t> verifyMeshAxes(CollectiveOpInterface op,
                                         SymbolTableCollection &symbolTable) {
  MeshOp mesh = lookupMesh(op, op.getMeshAttr(), &symbolTable);
  if (!mesh)
    return op->emitOpError("'")
           << op.getMeshAttr().getValue() << "' is not a braid.mesh";
  llvm::StringSet<> seen;
  for (Attribute axisAttr : op.getMeshAxes()) {
    StringRef axis = cast<StringAttr>(axisAttr).getValue();
    if (!mesh.getAxisIndex(axis))
      return op->emitOpError("mesh '")
             << mesh.getSymName() << "' has no axis '" << axis << "'";
    if (!seen.insert(axis).second)
      return op->emitOpError("names axis '") << axis << "' twice";
  }
  return mesh.getGroupSize(op.getMeshAxes());
}

/// Checks that `dim` is a dimension of a rank-`rank` tensor.
static LogicalResult checkCollectiveDim(Operation *op, StringRef what,
                                        int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError(what)
           << " " << dim << " is out of range for rank " << rank;
  return success();
}

/// Checks `result` equals `input` with dimension `dim` scaled by the group.
static LogicalResult checkScaledDim(Operation *op, RankedTensorType input,
                                    RankedTensorType result, int64_t dim,
                                    int64_t groupSize, bool gather) {
  int64_t in = input.getDimSize(dim), out = result.getDimSize(dim);
  if (!gather && in % groupSize != 0)
    return op->emitOpError("dimension ")
           << dim << " of size " << in << " is not divisible by the group size "
           << groupSize;
  int64_t expected = gather ? in * groupSize : in / groupSize;
  if (out != expected)
    return op->emitOpError("result dimension ")
           << dim << " has size " << out << ", expected " << expected
           << " for a group of " << groupSize;
  return success();
}

/// Checks all dimensions but those in `skip` are equal.
static LogicalResult checkOtherDims(Operation *op, RankedTensorType input,
                                    RankedTensorType result,
                                    ArrayRef<int64_t> skip) {
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (!llvm::is_contained(skip, d) &&
        input.getDimSize(d) != result.getDimSize(d))
      return op->emitOpError("result dimension ")
             << d << " has size " << result.getDimSize(d)
             << " but the input has " << input.getDimSize(d);
  return success();
}

//===----------------------------------------------------------------------===//
// Symbol and shape verification
//===----------------------------------------------------------------------===//

#define BRAID_COLLECTIVE_VERIFY_SYMBOLS(OP)                                    \
  LogicalResult OP::verifySymbolUses(SymbolTableCollection &symbolTable) {     \
    FailureOr<int64_t> groupSize = verifyMeshAxes(*this, symbolTable);         \
    if (failed(groupSize))                                                     \
      return failure();                                                        \
    return verifyGroupShapes(*groupSize);                                      \
  }
BRAID_COLLECTIVE_VERIFY_SYMBOLS(AllReduceOp)
BRAID_COLLECTIVE_VERIFY_SYMBOLS(AllGatherOp)
BRAID_COLLECTIVE_VERIFY_SYMBOLS(ReduceScatterOp)
BRAID_COLLECTIVE_VERIFY_SYMBOLS(AllToAllOp)
BRAID_COLLECTIVE_VERIFY_SYMBOLS(CollectivePermuteOp)
BRAID_COLLECTIVE_VERIFY_SYMBOLS(BroadcastOp)
#undef BRAID_COLLECTIVE_VERIFY_SYMBOLS

LogicalResult AllReduceOp::verifyGroupShapes(int64_t) { return success(); }
LogicalResult CollectivePermuteOp::verifyGroupShapes(int64_t) {
  return success();
}

// Checks that need no mesh (dimensions in range, untouched dimensions equal)
// run in verify(), so they hold even outside a symbol table; the sizes that
// depend on the group run in verifySymbolUses.

LogicalResult AllGatherOp::verify() {
  auto input = getInput().getType(), result = getResult().getType();
  if (failed(checkCollectiveDim(*this, "gather dimension", getDim(),
                                input.getRank())))
    return failure();
  return checkOtherDims(*this, input, result, {getDim()});
}

LogicalResult AllGatherOp::verifyGroupShapes(int64_t groupSize) {
  return checkScaledDim(*this, getInput().getType(), getResult().getType(),
                        getDim(), groupSize, /*gather=*/true);
}

LogicalResult ReduceScatterOp::verify() {
  auto input = getInput().getType(), result = getResult().getType();
  if (failed(checkCollectiveDim(*this, "scatter dimension", getDim(),
                                input.getRank())))
    return failure();
  return checkOtherDims(*this, input, result, {getDim()});
}

LogicalResult ReduceScatterOp::verifyGroupShapes(int64_t groupSize) {
  return checkScaledDim(*this, getInput().getType(), getResult().getType(),
                        getDim(), groupSize, /*gather=*/false);
}

LogicalResult AllToAllOp::verify() {
  auto input = getInput().getType(), result = getResult().getType();
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (failed(checkCollectiveDim(*this, "split dimension", split,
                                input.getRank())) ||
      failed(checkCollectiveDim(*this, "concat dimension", concat,
                                input.getRank())))
    return failure();
  if (split == concat)
    return checkOtherDims(*this, input, result, {});
  return checkOtherDims(*this, input, result, {split, concat});
}

LogicalResult AllToAllOp::verifyGroupShapes(int64_t groupSize) {
  auto input = getInput().getType(), result = getResult().getType();
  int64_t split = getSplitDim(), concat = getConcatDim();
  if (input.getDimSize(split) % groupSize != 0)
    return emitOpError("split dimension ")
           << split << " of size " << input.getDimSize(split)
           << " is not divisible by the group size " << groupSize;
  if (split == concat)
    return success();
  if (failed(checkScaledDim(*this, input, result, split, groupSize,
                            /*gather=*/false)))
    return failure();
  return checkScaledDim(*this, input, result, concat, groupSize,
                        /*gather=*/true);
}

LogicalResult BroadcastOp::verifyGroupShapes(int64_t groupSize) {
  if (getRoot() < 0 || getRoot() >= groupSize)
    return emitOpError("root ")
           << getRoot() << " is not a member of the group of " << groupSize;
  return success();
}

//===----------------------------------------------------------------------===//
// Dimension mappings
//===----------------------------------------------------------------------===//

/// Dimensions in `moved` change size through the collective; every other
/// dimension is one parallel factor.
static DimensionMapping getCollectiveMapping(Operation *op,
                                             ArrayRef<int64_t> moved) {
  return getResizeMapping(
      op, [&](int64_t d) { return !llvm::is_contained(moved, d); });
}

DimensionMapping AllReduceOp::getDimensionMapping() {
  return getCollectiveMapping(*this, {});
}
DimensionMapping AllGatherOp::getDimensionMapping() {
  return getCollectiveMapping(*this, {getDim()});
}
DimensionMapping ReduceScatterOp::getDimensionMapping() {
  return getCollectiveMapping(*this, {getDim()});
}
DimensionMapping AllToAllOp::getDimensionMapping() {
  return getCollectiveMapping(*this, {getSplitDim(), getConcatDim()});
}
DimensionMapping CollectivePermuteOp::getDimensionMapping() {
  return getCollectiveMapping(*this, {});
}
DimensionMapping BroadcastOp::getDimensionMapping() {
  return getCollectiveMapping(*this, {});
}

//===----------------------------------------------------------------------===//
// Canonicalization
//===----------------------------------------------------------------------===//

namespace {
/// A collective over a group of one rank is the identity: every kind then
/// returns its input unchanged, so the op disappears.
template <typename OpTy>
struct RemoveTrivialGroupCollective : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (op.getInput().getType() != op.getResult().getType())
      return failure();
    MeshOp mesh = lookupMesh(op, op.getMeshAttr());
    if (!mesh || mesh.getGroupSize(op.getMeshAxes()) != 1)
      return failure();
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

/// An all-reduce of an all-reduce over other axes of the same mesh, with
/// the same reduction, is one all-reduce over both groups' axes: the group
/// of the union is the product of the two groups, and sum, max, min and avg
/// (over groups of equal size) compose. One collective instead of two: a
/// latency less, and fewer bytes on a ring (2(N-1)/N of the tensor over
/// the N ranks instead of 2(A-1)/A + 2(B-1)/B). The partitioner makes such
/// chains where a value is a partial sum on several axes (a weight gradient
/// under dp and cp).
struct MergeChainedAllReduces : public OpRewritePattern<AllReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AllReduceOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<AllReduceOp>();
    if (!inner || !inner->hasOneUse() ||
        inner.getMeshAttr() != op.getMeshAttr() ||
        inner.getReduction() != op.getReduction())
      return failure();
    MeshOp mesh = lookupMesh(op, op.getMeshAttr());
    if (!mesh)
      return failure();
    llvm::SmallDenseSet<StringRef> wanted;
    for (ArrayAttr axes : {inner.getMeshAxes(), op.getMeshAxes()})
      for (StringRef axis : axes.getAsValueRange<StringAttr>())
        if (!wanted.insert(axis).second)
          return failure();
    // The union in the mesh's order.
    SmallVector<StringRef> axes;
    for (StringRef axis : mesh.getAxisNames().getAsValueRange<StringAttr>())
      if (wanted.contains(axis))
        axes.push_back(axis);
    if (axes.size() != wanted.size())
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.setMeshAxesAttr(rewriter.getStrArrayAttr(axes));
      op.getInputMutable().assign(inner.getInput());
    });
    rewriter.eraseOp(inner);
    return success();
  }
};
} // namespace

#define BRAID_COLLECTIVE_CANONICALIZE(OP)                                      \
  void OP::getCanonicalizationPatterns(RewritePatternSet &results,             \
                                       MLIRContext *context) {                 \
    results.add<RemoveTrivialGroupCollective<OP>>(context);                    \
  }
void AllReduceOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results
      .add<RemoveTrivialGroupCollective<AllReduceOp>, MergeChainedAllReduces>(
          context);
}
BRAID_COLLECTIVE_CANONICALIZE(AllGatherOp)
BRAID_COLLECTIVE_CANONICALIZE(ReduceScatterOp)
BRAID_COLLECTIVE_CANONICALIZE(AllToAllOp)
BRAID_COLLECTIVE_CANONICALIZE(CollectivePermuteOp)
BRAID_COLLECTIVE_CANONICALIZE(BroadcastOp)
#undef BRAID_COLLECTIVE_CANONICALIZE
