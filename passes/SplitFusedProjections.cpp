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

#include <set>

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

/// Whether `op` is a static unit-stride slice of the last dimension of its
/// input that keeps every other dimension whole; sets [begin, end).
static bool slicesLastDim(SliceOp op, int64_t &begin, int64_t &end) {
  auto type = op.getInput().getType();
  int64_t last = type.getRank() - 1;
  if (last < 0 || !op.getOffsets().empty())
    return false;
  for (int64_t d = 0; d <= last; ++d) {
    if (op.getStaticStrides()[d] != 1)
      return false;
    if (d != last && (op.getStaticOffsets()[d] != 0 ||
                      op.getStaticSizes()[d] != type.getDimSize(d)))
      return false;
  }
  begin = op.getStaticOffsets()[last];
  end = begin + op.getStaticSizes()[last];
  return end > begin;
}

/// Whether a split of the last dimension of `value` can move to a
/// projection's weight: through reshapes that keep the last dimension and
/// elementwise ops (a bias add) to a matmul.
static bool reachesProjection(Value value) {
  Operation *op = value.getDefiningOp();
  if (isa_and_nonnull<MatmulOp>(op))
    return true;
  if (auto reshape = dyn_cast_or_null<ReshapeOp>(op)) {
    auto from = reshape.getInput().getType();
    return from.getRank() > 0 &&
           from.getShape().back() == reshape.getType().getShape().back() &&
           reachesProjection(reshape.getInput());
  }
  if (isa_and_nonnull<AddOp, SubOp, MulOp, DivOp>(op))
    return llvm::any_of(op->getOperands(), reachesProjection);
  return false;
}

/// Slices of a projection's output columns (q, k and v of unequal widths
/// under GQA, as exporters write `qkv[..., :a]`, `qkv[..., a:b]`, ...) ->
/// one split at every boundary, each slice the piece (or the concatenation
/// of the pieces) it covers; the split then moves to the weight like any
/// other.
struct SlicesOfProjection : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp anchor,
                                PatternRewriter &rewriter) const override {
    Value input = anchor.getInput();
    if (!reachesProjection(input))
      return failure();
    SmallVector<std::pair<SliceOp, std::pair<int64_t, int64_t>>> slices;
    std::set<int64_t> bounds;
    for (Operation *user : input.getUsers()) {
      auto slice = dyn_cast<SliceOp>(user);
      int64_t begin, end;
      if (!slice || slice.getInput() != input ||
          !slicesLastDim(slice, begin, end))
        return failure();
      slices.push_back({slice, {begin, end}});
      bounds.insert(begin);
      bounds.insert(end);
    }
    auto type = cast<RankedTensorType>(input.getType());
    int64_t size = type.getShape().back(), last = type.getRank() - 1;
    bounds.insert(0);
    bounds.insert(size);
    SmallVector<int64_t> points(bounds.begin(), bounds.end());
    SmallVector<Type> pieceTypes;
    for (unsigned i = 0; i + 1 < points.size(); ++i) {
      SmallVector<int64_t> shape(type.getShape());
      shape[last] = points[i + 1] - points[i];
      pieceTypes.push_back(RankedTensorType::get(shape, type.getElementType()));
    }
    rewriter.setInsertionPointAfterValue(input);
    auto split = SplitOp::create(rewriter, anchor.getLoc(), pieceTypes, input,
                                 rewriter.getI64IntegerAttr(last));
    for (auto &[slice, range] : slices) {
      SmallVector<Value> covered;
      for (unsigned i = 0; i + 1 < points.size(); ++i)
        if (points[i] >= range.first && points[i + 1] <= range.second)
          covered.push_back(split.getResult(i));
      rewriter.setInsertionPoint(slice);
      Value replacement =
          covered.size() == 1
              ? covered.front()
              : ConcatOp::create(rewriter, slice.getLoc(), slice.getType(),
                                 covered, rewriter.getI64IntegerAttr(last))
                    .getResult();
      rewriter.replaceOp(slice, replacement);
    }
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

/// Whether two boxes (offsets, sizes) share an element.
bool overlap(ArrayRef<int64_t> aStart, ArrayRef<int64_t> aSize,
             ArrayRef<int64_t> bStart, ArrayRef<int64_t> bSize) {
  for (size_t d = 0; d < aStart.size(); ++d)
    if (aStart[d] + aSize[d] <= bStart[d] || bStart[d] + bSize[d] <= aStart[d])
      return false;
  return true;
}

/// Every weight read only in disjoint blocks, each without a sharding,
/// becomes one weight per block, `part of` the stored tensor.
void declareParts(ModuleOp module) {
  llvm::MapVector<StringAttr, SmallVector<GetWeightOp>> reads;
  module.walk([&](GetWeightOp read) {
    reads[read.getNameAttr().getAttr()].push_back(read);
  });
  OpBuilder b(module.getContext());
  for (auto &[name, list] : reads) {
    auto decl = module.lookupSymbol<WeightOp>(name);
    if (!decl || decl.getPartOf() || decl.getZeros() || decl.getState() ||
        llvm::any_of(list, [](GetWeightOp read) {
          return !read.getBlock() || read.getSharding();
        }))
      continue;
    // The distinct blocks, in order of first read.
    SmallVector<std::pair<ArrayRef<int64_t>, ArrayRef<int64_t>>> blocks;
    for (GetWeightOp read : list) {
      std::pair<ArrayRef<int64_t>, ArrayRef<int64_t>> block{*read.getOffsets(),
                                                            *read.getBlock()};
      if (!llvm::is_contained(blocks, block))
        blocks.push_back(block);
    }
    bool disjoint = true;
    for (size_t i = 0; i < blocks.size() && disjoint; ++i)
      for (size_t j = i + 1; j < blocks.size() && disjoint; ++j)
        disjoint = !overlap(blocks[i].first, blocks[i].second, blocks[j].first,
                            blocks[j].second);
    if (!disjoint || blocks.size() < 2)
      continue;
    b.setInsertionPointAfter(decl);
    SmallVector<WeightOp> parts;
    for (auto [i, block] : llvm::enumerate(blocks)) {
      auto type = RankedTensorType::get(block.second,
                                        decl.getTensorType().getElementType());
      std::string symbol = (decl.getSymName() + "#" + Twine(i)).str();
      if (module.lookupSymbol(symbol))
        break;
      WeightOp part = WeightOp::create(
          b, decl.getLoc(), b.getStringAttr(symbol), TypeAttr::get(type));
      part.setPartOf(decl.getSymName());
      part.setPartShape(decl.getTensorType().getShape());
      part.setPartOffsets(block.first);
      parts.push_back(part);
      b.setInsertionPointAfter(part);
    }
    if (parts.size() != blocks.size()) {
      for (WeightOp part : parts)
        part.erase();
      continue;
    }
    for (GetWeightOp read : list) {
      size_t i = llvm::find(blocks, std::make_pair(*read.getOffsets(),
                                                   *read.getBlock())) -
                 blocks.begin();
      b.setInsertionPoint(read);
      Value whole = GetWeightOp::create(
          b, read.getLoc(), read.getType(),
          FlatSymbolRefAttr::get(parts[i].getSymNameAttr()));
      read.replaceAllUsesWith(whole);
      read.erase();
    }
    decl.erase();
  }
}

struct SplitFusedProjectionsPass
    : public braid::impl::BraidSplitFusedProjectionsBase<
          SplitFusedProjectionsPass> {
  using BraidSplitFusedProjectionsBase::BraidSplitFusedProjectionsBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SlicesOfProjection, SplitThroughReshape,
                 SplitThroughElementwise, SplitThroughMatmul, SplitOfWeight>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    if (!parts)
      return;
    auto module = dyn_cast<ModuleOp>(getOperation());
    if (!module) {
      getOperation()->emitError("braid-split-fused-projections: parts=true "
                                "declares weights and runs on a module");
      return signalPassFailure();
    }
    declareParts(module);
  }
};

} // namespace
