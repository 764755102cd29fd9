//===- SplitFusedProjections.cpp - one projection per split piece ---------===//
//
// A fused projection (GPT-2's c_attn: x @ [Wq | Wk | Wv] + [bq | bk | bv],
// then split into q, k, v) becomes one projection per piece, each reading its
// own block of the weights. Partitioning can then shard each piece by its
// own columns (heads), which one fused weight split in contiguous blocks
// cannot give. The split moves toward the producers, one op at a time.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDSPLITFUSEDPROJECTIONS
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

/// The piece types of `split` with the split dimension's size taken from
/// `split` and the rest from `shape`'s type.
SmallVector<Type> pieceTypes(SplitOp split, RankedTensorType type,
                             int64_t dim) {
  SmallVector<Type> types;
  for (Type result : split.getResultTypes()) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] =
        cast<RankedTensorType>(result).getDimSize(split.getDim());
    types.push_back(RankedTensorType::get(shape, type.getElementType()));
  }
  return types;
}

/// Splits `value` along `dim` like `split` splits its input.
SmallVector<Value> splitLike(PatternRewriter &rewriter, SplitOp split,
                             Value value, int64_t dim) {
  auto type = cast<RankedTensorType>(value.getType());
  auto pieces = SplitOp::create(rewriter, split.getLoc(),
                                pieceTypes(split, type, dim), value,
                                rewriter.getI64IntegerAttr(dim));
  return SmallVector<Value>(pieces.getResults());
}

/// Whether `split` cuts the last dimension of its input, which `producer`
/// alone uses.
bool splitsLastDimOf(SplitOp split, Operation *producer) {
  auto type = cast<RankedTensorType>(split.getInput().getType());
  return producer && producer->hasOneUse() &&
         split.getDim() == type.getRank() - 1;
}

/// split(reshape(x)) -> reshape(split(x)) when both keep the last dimension.
struct SplitThroughReshape : OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp split,
                                PatternRewriter &rewriter) const override {
    auto reshape = split.getInput().getDefiningOp<ReshapeOp>();
    if (!splitsLastDimOf(split, reshape))
      return failure();
    auto from = reshape.getInput().getType();
    auto to = reshape.getType();
    if (from.getRank() == 0 || from.getShape().back() != to.getShape().back())
      return failure();
    SmallVector<Value> pieces =
        splitLike(rewriter, split, reshape.getInput(), from.getRank() - 1);
    SmallVector<Value> results;
    for (auto [piece, type] : llvm::zip(pieces, split.getResultTypes()))
      results.push_back(
          ReshapeOp::create(rewriter, split.getLoc(), type, piece));
    rewriter.replaceOp(split, results);
    return success();
  }
};

/// split(a + b) -> split(a) + split(b), an operand that broadcasts along the
/// last dimension being shared by every piece.
struct SplitThroughElementwise : OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp split,
                                PatternRewriter &rewriter) const override {
    Operation *op = split.getInput().getDefiningOp();
    if (!splitsLastDimOf(split, op) || !isa<AddOp, SubOp, MulOp, DivOp>(op))
      return failure();
    int64_t size = split.getInput().getType().getShape().back();
    SmallVector<SmallVector<Value>> operands(split.getNumResults());
    for (Value operand : op->getOperands()) {
      auto type = cast<RankedTensorType>(operand.getType());
      bool full = type.getRank() > 0 && type.getShape().back() == size;
      SmallVector<Value> pieces =
          full ? splitLike(rewriter, split, operand, type.getRank() - 1)
               : SmallVector<Value>(split.getNumResults(), operand);
      for (auto [i, piece] : llvm::enumerate(pieces))
        operands[i].push_back(piece);
    }
    SmallVector<Value> results;
    for (auto [i, type] : llvm::enumerate(split.getResultTypes())) {
      OperationState state(op->getLoc(), op->getName(), operands[i], {type},
                           op->getAttrs());
      results.push_back(rewriter.create(state)->getResult(0));
    }
    rewriter.replaceOp(split, results);
    return success();
  }
};

/// split(x @ W) -> x @ split(W) along the output columns.
struct SplitThroughMatmul : OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp split,
                                PatternRewriter &rewriter) const override {
    auto matmul = split.getInput().getDefiningOp<MatmulOp>();
    if (!splitsLastDimOf(split, matmul) || matmul.getTransposeLhs())
      return failure();
    Value rhs = matmul.getRhs();
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    int64_t columns = rhsType.getRank() - (matmul.getTransposeRhs() ? 2 : 1);
    if (rhsType.getRank() < 2)
      return failure();
    SmallVector<Value> weights = splitLike(rewriter, split, rhs, columns);
    SmallVector<Value> results;
    for (auto [weight, type] : llvm::zip(weights, split.getResultTypes())) {
      auto piece = MatmulOp::create(rewriter, matmul.getLoc(), type,
                                    matmul.getLhs(), weight,
                                    matmul.getTransposeLhsAttr(),
                                    matmul.getTransposeRhsAttr());
      results.push_back(piece);
    }
    rewriter.replaceOp(split, results);
    return success();
  }
};

/// split(get_weight W) -> one get_weight per block of W.
struct SplitOfWeight : OpRewritePattern<SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitOp split,
                                PatternRewriter &rewriter) const override {
    auto weight = split.getInput().getDefiningOp<GetWeightOp>();
    if (!weight || !weight->hasOneUse() || weight.getMesh() ||
        weight.getSharding())
      return failure();
    auto type = weight.getType();
    SmallVector<int64_t> base(type.getRank(), 0);
    if (std::optional<ArrayRef<int64_t>> outer = weight.getOffsets())
      base.assign(outer->begin(), outer->end());
    SmallVector<Value> results;
    int64_t start = 0;
    for (Type result : split.getResultTypes()) {
      auto piece = cast<RankedTensorType>(result);
      SmallVector<int64_t> offsets(base);
      offsets[split.getDim()] += start;
      start += piece.getDimSize(split.getDim());
      results.push_back(GetWeightOp::create(
          rewriter, weight.getLoc(), piece, weight.getNameAttr(),
          rewriter.getDenseI64ArrayAttr(offsets),
          rewriter.getDenseI64ArrayAttr(piece.getShape()),
          /*mesh=*/nullptr, /*sharding=*/nullptr));
    }
    rewriter.replaceOp(split, results);
    rewriter.eraseOp(weight);
    return success();
  }
};

struct SplitFusedProjectionsPass
    : public braid::impl::BraidSplitFusedProjectionsBase<
          SplitFusedProjectionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SplitThroughReshape, SplitThroughElementwise,
                 SplitThroughMatmul, SplitOfWeight>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
