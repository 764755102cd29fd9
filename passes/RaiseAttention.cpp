//===- RaiseAttention.cpp - scaled dot-product attention to one op --------===//
//
// Anchors on `matmul(softmax(S, last dim), V)` and walks S back to the Q K^T
// matmul through scalar scales and masks. The replacement is built only when
// every step is understood, so raising never changes what is computed.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDRAISEATTENTION
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

/// A fill this negative excludes a score: exp(fill - max) is 0 in f32.
static constexpr double kExcludingFill = -1.0e4;

/// The value of a splat float constant (any shape), if `value` is one.
static std::optional<double> splatConstant(Value value) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// Whether `value` has exactly one element (a scalar for broadcasting).
static bool isScalarShaped(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements() == 1;
}

/// Multiplies of `value` by scalar constants, peeled off: returns the
/// underlying value and multiplies `scale` by the factors.
static Value peelScalarScale(Value value, double &scale) {
  while (true) {
    Operation *op = value.getDefiningOp();
    if (auto mul = dyn_cast_or_null<MulOp>(op)) {
      for (int side = 0; side < 2; ++side) {
        Value factor = side ? mul.getLhs() : mul.getRhs();
        Value other = side ? mul.getRhs() : mul.getLhs();
        std::optional<double> c = splatConstant(factor);
        if (c && isScalarShaped(factor) && other.getType() == mul.getType()) {
          scale *= *c;
          value = other;
          goto next;
        }
      }
      return value;
    }
    if (auto div = dyn_cast_or_null<DivOp>(op)) {
      std::optional<double> c = splatConstant(div.getRhs());
      if (c && *c != 0.0 && isScalarShaped(div.getRhs()) &&
          div.getLhs().getType() == div.getType()) {
        scale /= *c;
        value = div.getLhs();
        continue;
      }
    }
    return value;
  next:;
  }
}

/// Whether `mask`, a constant broadcastable to [..., Sq, Sk], is exactly the
/// bottom-right-aligned causal mask: for a bool mask true exactly where
/// key <= query + Sk - Sq; for an additive mask 0 there and excluding
/// elsewhere.
static bool isCausalConstant(Value mask, int64_t sq, int64_t sk,
                             bool additive) {
  DenseElementsAttr attr;
  if (!matchPattern(mask, m_Constant(&attr)))
    return false;
  auto type = cast<RankedTensorType>(mask.getType());
  int64_t rank = type.getRank();
  if (rank < 2 || type.getDimSize(rank - 2) != sq ||
      type.getDimSize(rank - 1) != sk)
    return false;
  int64_t offset = sk - sq;
  int64_t i = 0;
  if (additive) {
    if (!isa<FloatType>(attr.getElementType()))
      return false;
    for (APFloat v : attr.getValues<APFloat>()) {
      int64_t q = (i / sk) % sq, k = i % sk;
      double d = v.convertToDouble();
      bool allowed = k <= q + offset;
      if (allowed ? d != 0.0 : !(d <= kExcludingFill))
        return false;
      ++i;
    }
    return true;
  }
  if (!attr.getElementType().isInteger(1))
    return false;
  for (bool v : attr.getValues<bool>()) {
    int64_t q = (i / sk) % sq, k = i % sk;
    if (v != (k <= q + offset))
      return false;
    ++i;
  }
  return true;
}

namespace {
struct RaiseAttentionPattern : public OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp pv,
                                PatternRewriter &rewriter) const override {
    auto softmax = pv.getLhs().getDefiningOp<SoftmaxOp>();
    if (!softmax || pv.getTransposeLhs() || pv.getTransposeRhs())
      return rewriter.notifyMatchFailure(pv, "not softmax(...) @ V");
    auto scoresType = softmax.getType();
    if (scoresType.getRank() != 4 || softmax.getDim() != 3)
      return rewriter.notifyMatchFailure(pv, "softmax is not over the keys");
    int64_t sq = scoresType.getDimSize(2), sk = scoresType.getDimSize(3);

    // Walk the scores back to the Q K^T product.
    double scale = 1.0;
    SmallVector<Value> additiveMasks, selectMasks;
    bool scaledAfterMasks = false;
    Value scores = softmax.getInput();
    while (!scores.getDefiningOp<MatmulOp>()) {
      Operation *op = scores.getDefiningOp();
      if (!op || !scores.hasOneUse())
        return rewriter.notifyMatchFailure(pv, "scores are not Q K^T");
      double factor = 1.0;
      Value peeled = peelScalarScale(scores, factor);
      if (peeled != scores) {
        scale *= factor;
        scaledAfterMasks = additiveMasks.empty() && selectMasks.empty();
        scores = peeled;
        continue;
      }
      // Walking backwards: a scale seen before this mask was applied after
      // it, and would have scaled the mask too.
      if (scaledAfterMasks && (isa<AddOp>(op) || isa<SelectOp>(op)))
        return rewriter.notifyMatchFailure(pv, "scale applied after a mask");
      if (auto add = dyn_cast<AddOp>(op)) {
        bool lhsIsScores = add.getLhs().getType() == scoresType;
        Value mask = lhsIsScores ? add.getRhs() : add.getLhs();
        scores = lhsIsScores ? add.getLhs() : add.getRhs();
        if (scores.getType() != scoresType)
          return rewriter.notifyMatchFailure(pv, "mask add changes shape");
        additiveMasks.push_back(mask);
        continue;
      }
      if (auto select = dyn_cast<SelectOp>(op)) {
        std::optional<double> fill = splatConstant(select.getFalseValue());
        if (!fill || *fill > kExcludingFill ||
            select.getTrueValue().getType() != scoresType)
          return rewriter.notifyMatchFailure(pv, "select is not a mask");
        selectMasks.push_back(select.getCondition());
        scores = select.getTrueValue();
        continue;
      }
      return rewriter.notifyMatchFailure(pv, "unknown op between QK and softmax");
    }
    auto qk = scores.getDefiningOp<MatmulOp>();
    if (!scores.hasOneUse() || qk.getTransposeLhs())
      return rewriter.notifyMatchFailure(pv, "QK product is shared");

    Value q = peelScalarScale(qk.getLhs(), scale);
    Value k = qk.getRhs();
    bool keyTransposed = qk.getTransposeRhs();
    if (!keyTransposed) {
      // K^T given explicitly: look through scales and the transpose.
      Value kt = peelScalarScale(k, scale);
      auto transpose = kt.getDefiningOp<TransposeOp>();
      if (transpose &&
          transpose.getPermutation() == ArrayRef<int64_t>({0, 1, 3, 2})) {
        k = peelScalarScale(transpose.getInput(), scale);
        keyTransposed = true;
      } else {
        k = kt;
      }
    } else {
      k = peelScalarScale(k, scale);
    }
    Value v = pv.getRhs();
    auto qType = cast<RankedTensorType>(q.getType());
    auto vType = cast<RankedTensorType>(v.getType());
    if (qType.getRank() != 4 || vType.getRank() != 4 ||
        cast<RankedTensorType>(k.getType()).getRank() != 4)
      return rewriter.notifyMatchFailure(pv, "operands are not 4-D");
    if (!keyTransposed)
      k = TransposeOp::create(rewriter, qk.getLoc(), k,
                              rewriter.getDenseI64ArrayAttr({0, 1, 3, 2}));

    // Masks: constant causal ones become the attribute (several causal masks
    // exclude the same scores as one); at most one other additive mask stays
    // an operand; a select mask must be causal (a computed one could mask a
    // whole row, where excluding and filling disagree).
    bool causal = false;
    Value mask;
    for (Value select : selectMasks) {
      if (!isCausalConstant(select, sq, sk, /*additive=*/false))
        return rewriter.notifyMatchFailure(pv, "non-causal select mask");
      causal = true;
    }
    for (Value additive : additiveMasks) {
      if (isCausalConstant(additive, sq, sk, /*additive=*/true)) {
        causal = true;
        continue;
      }
      if (mask)
        return rewriter.notifyMatchFailure(pv, "two non-causal masks");
      mask = additive;
    }
    if (causal && sk < sq)
      return rewriter.notifyMatchFailure(pv, "causal with fewer keys");

    // Let the op's verifier decide whether the shapes fit.
    SmallVector<Type> inferred;
    AttentionOp::Properties properties;
    properties.scale = rewriter.getF32FloatAttr(static_cast<float>(scale));
    if (causal)
      properties.causal = rewriter.getUnitAttr();
    SmallVector<Value> operands{q, k, v};
    if (mask)
      operands.push_back(mask);
    properties.operandSegmentSizes = {1, 1, 1, mask ? 1 : 0, 0};
    if (failed(AttentionOp::inferReturnTypes(
            rewriter.getContext(), std::nullopt, operands, nullptr,
            &properties, {}, inferred)) ||
        inferred.front() != pv.getType())
      return rewriter.notifyMatchFailure(pv, "shapes do not fit attention");
    rewriter.replaceOpWithNewOp<AttentionOp>(
        pv, q, k, v, mask, Value(), causal ? rewriter.getUnitAttr() : UnitAttr(),
        properties.scale);
    return success();
  }
};

struct RaiseAttentionPass
    : public braid::impl::BraidRaiseAttentionBase<RaiseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseAttentionPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
