//===- RaiseFusedOps.cpp - exporters' decompositions to fused ops ---------===//
//
// Part of the Braid project.
//
// The ONNX exporters write GELU, SiLU, RMSNorm, (below opset 17) LayerNorm
// and rotary embeddings as chains of elementwise ops (pow, mul, add, tanh or
// erf; sigmoid and mul; pow, reduce_mean, add, sqrt, div and mul; the same
// after sub of the mean; slice, neg, concat, mul and add). Each chain is one
// pass over memory as braid.gelu, braid.silu, braid.rms_norm,
// braid.layer_norm or braid.rotary. The patterns read products as
// a scalar times a multiset of factors, so the operand orders the exporters
// choose do not matter; every intermediate must feed only the chain (otherwise
// it is still needed and raising saves nothing), and every constant must be the
// formula's to within float rounding. Anything else is left as it is.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <array>
#include <cmath>

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDRAISEFUSEDOPS
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

/// Both orders of two values: (a, b) and (b, a), for patterns that accept
/// either operand order of a commutative op.
std::array<std::pair<Value, Value>, 2> bothOrders(Value a, Value b) {
  return {{{a, b}, {b, a}}};
}

/// The value of a one-element float constant, if `value` is one.
std::optional<double> scalarConstant(Value value) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()) ||
      cast<ShapedType>(value.getType()).getNumElements() != 1)
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// Whether `value`, a constant the exporter rounded to its float type (or a
/// product of such), is `expected`.
bool near(double value, double expected) {
  return std::abs(value - expected) <= 1e-6 * std::abs(expected);
}

bool isConstant(Value value, double expected) {
  std::optional<double> c = scalarConstant(value);
  return c && near(*c, expected);
}

/// An intermediate of a chain: defined by an op of type Op, used only once.
template <typename Op> Op chainOp(Value value) {
  if (!value.hasOneUse())
    return nullptr;
  return value.getDefiningOp<Op>();
}

/// `value` read as scalar * product(factors): through multiplies by scalar
/// constants, divides by them, and multiplies of two tensors of `value`'s
/// type, each an intermediate used only here. `value` itself may have other
/// uses (it is what the pattern replaces).
struct Product {
  double scalar = 1.0;
  SmallVector<Value> factors;
};

void flattenProduct(Value value, Type type, bool root, Product &product) {
  if (value.getType() == type && (root || value.hasOneUse())) {
    if (auto mul = value.getDefiningOp<MulOp>()) {
      for (auto [factor, other] : bothOrders(mul.getRhs(), mul.getLhs()))
        if (std::optional<double> c = scalarConstant(factor);
            c && other.getType() == type) {
          product.scalar *= *c;
          return flattenProduct(other, type, false, product);
        }
      if (mul.getLhs().getType() == type && mul.getRhs().getType() == type) {
        flattenProduct(mul.getLhs(), type, false, product);
        return flattenProduct(mul.getRhs(), type, false, product);
      }
    }
    if (auto div = value.getDefiningOp<DivOp>()) {
      std::optional<double> c = scalarConstant(div.getRhs());
      if (c && *c != 0.0 && div.getLhs().getType() == type) {
        product.scalar /= *c;
        return flattenProduct(div.getLhs(), type, false, product);
      }
    }
  }
  product.factors.push_back(value);
}

Product productOf(Value value) {
  Product product;
  flattenProduct(value, value.getType(), true, product);
  return product;
}

/// The other operand of an add whose one operand is the constant 1.
Value plusOne(Value value) {
  auto add = chainOp<AddOp>(value);
  if (!add || add.getType() != value.getType())
    return nullptr;
  if (isConstant(add.getRhs(), 1.0) && add.getLhs().getType() == add.getType())
    return add.getLhs();
  if (isConstant(add.getLhs(), 1.0) && add.getRhs().getType() == add.getType())
    return add.getRhs();
  return nullptr;
}

/// Whether `value` is x^3: pow(x, 3), or x x x as one product.
bool isCube(Value value, Value x) {
  if (auto pow = chainOp<PowOp>(value))
    return pow.getLhs() == x && pow.getType() == x.getType() &&
           isConstant(pow.getRhs(), 3.0);
  return false;
}

/// The argument of tanh-GELU's tanh, sqrt(2/pi) (x + 0.044715 x^3), is of x.
bool isTanhGeluArgument(Value argument, Value x) {
  Product outer = productOf(argument);
  if (outer.factors.size() != 1 || !near(outer.scalar, std::sqrt(2.0 / M_PI)))
    return false;
  auto sum = chainOp<AddOp>(outer.factors.front());
  if (!sum || sum.getType() != x.getType())
    return false;
  for (auto [first, cubic] : bothOrders(sum.getLhs(), sum.getRhs())) {
    if (first != x || !cubic.hasOneUse())
      continue;
    Product term;
    flattenProduct(cubic, x.getType(), true, term);
    if (!near(term.scalar, 0.044715))
      continue;
    if (term.factors.size() == 1 && isCube(term.factors.front(), x))
      return true;
    if (term.factors.size() == 3 &&
        llvm::all_of(term.factors, [&](Value f) { return f == x; }))
      return true;
  }
  return false;
}

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) -> gelu tanh, and
/// 0.5 x (1 + erf(x / sqrt(2))) -> gelu, anchored on the outermost multiply.
struct RaiseGelu : public OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    Product product = productOf(mul.getResult());
    if (product.factors.size() != 2 || !near(product.scalar, 0.5))
      return rewriter.notifyMatchFailure(mul, "not 0.5 times two factors");
    for (auto [x, bracket] :
         bothOrders(product.factors[0], product.factors[1])) {
      Value inner = plusOne(bracket);
      if (!inner || x.getType() != mul.getType())
        continue;
      if (auto tanh = chainOp<TanhOp>(inner);
          tanh && isTanhGeluArgument(tanh.getInput(), x)) {
        rewriter.replaceOpWithNewOp<GeluOp>(mul, mul.getType(), x,
                                            /*tanh=*/true);
        return success();
      }
      if (auto erf = chainOp<ErfOp>(inner)) {
        Product argument = productOf(erf.getInput());
        if (argument.factors.size() == 1 && argument.factors.front() == x &&
            near(argument.scalar, M_SQRT1_2)) {
          rewriter.replaceOpWithNewOp<GeluOp>(mul, mul.getType(), x,
                                              /*tanh=*/false);
          return success();
        }
      }
    }
    return rewriter.notifyMatchFailure(mul, "not a GELU");
  }
};

/// x * sigmoid(x) -> silu(x).
struct RaiseSilu : public OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    for (auto [x, gate] : bothOrders(mul.getLhs(), mul.getRhs())) {
      auto sigmoid = chainOp<SigmoidOp>(gate);
      if (sigmoid && sigmoid.getInput() == x && x.getType() == mul.getType()) {
        rewriter.replaceOpWithNewOp<SiluOp>(mul, mul.getType(), x);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(mul, "not x * sigmoid(x)");
  }
};

/// The reduce_mean (used only here) that `value` is, over trailing
/// dimensions with keep_dims; `axis` is the first of them.
ReduceMeanOp trailingMean(Value value, int64_t &axis) {
  auto mean = chainOp<ReduceMeanOp>(value);
  if (!mean || !mean.getKeepDims() || mean.getDims().empty())
    return nullptr;
  int64_t rank = cast<RankedTensorType>(mean.getInput().getType()).getRank();
  SmallVector<int64_t> dims(mean.getDims());
  llvm::sort(dims);
  axis = rank - static_cast<int64_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != axis + static_cast<int64_t>(i))
      return nullptr;
  return mean;
}

/// The x whose mean square `meanSquare` is: reduce_mean(pow(x, 2) or x * x)
/// over trailing dimensions with keep_dims; `axis` is the first of them.
Value meanSquareOf(Value meanSquare, int64_t &axis) {
  ReduceMeanOp mean = trailingMean(meanSquare, axis);
  if (!mean)
    return nullptr;
  Value square = mean.getInput();
  Value x;
  if (auto pow = chainOp<PowOp>(square); pow && isConstant(pow.getRhs(), 2.0))
    x = pow.getLhs();
  else if (auto mul = chainOp<MulOp>(square);
           mul && mul.getLhs() == mul.getRhs())
    x = mul.getLhs();
  if (!x || x.getType() != square.getType())
    return nullptr;
  return x;
}

/// The x and epsilon of `value` = 1 / sqrt(mean(x^2) + eps), written as
/// rsqrt(...), 1 / sqrt(...), or (for `divisor`) sqrt(...) itself.
Value rmsOf(Value value, bool divisor, int64_t &axis, double &epsilon) {
  Value sum;
  if (auto rsqrt = chainOp<RsqrtOp>(value); rsqrt && !divisor) {
    sum = rsqrt.getInput();
  } else if (auto sqrt = chainOp<SqrtOp>(value); sqrt && divisor) {
    sum = sqrt.getInput();
  } else if (auto div = chainOp<DivOp>(value);
             div && !divisor && isConstant(div.getLhs(), 1.0)) {
    if (auto sqrt = chainOp<SqrtOp>(div.getRhs()))
      sum = sqrt.getInput();
  }
  auto add = sum ? chainOp<AddOp>(sum) : nullptr;
  if (!add || add.getType() != sum.getType())
    return nullptr;
  for (auto [meanSquare, eps] : bothOrders(add.getLhs(), add.getRhs())) {
    std::optional<double> c = scalarConstant(eps);
    if (!c || *c < 0 || meanSquare.getType() != add.getType())
      continue;
    if (Value x = meanSquareOf(meanSquare, axis)) {
      epsilon = *c;
      return x;
    }
  }
  return nullptr;
}

/// gamma * (x * rsqrt(mean(x^2) + eps)), in the exporters' spellings ->
/// rms_norm(x, gamma), anchored on the multiply by gamma.
struct RaiseRmsNorm : public OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(mul.getType());
    for (auto [gamma, normed] : bothOrders(mul.getLhs(), mul.getRhs())) {
      if (normed.getType() != type || !normed.hasOneUse())
        continue;
      int64_t axis = 0;
      double epsilon = 0;
      Value x;
      if (auto scaled = normed.getDefiningOp<MulOp>()) {
        for (auto [candidate, rms] :
             bothOrders(scaled.getLhs(), scaled.getRhs())) {
          Value of = rmsOf(rms, /*divisor=*/false, axis, epsilon);
          if (of && of == candidate) {
            x = of;
            break;
          }
        }
      } else if (auto divided = normed.getDefiningOp<DivOp>()) {
        Value of = rmsOf(divided.getRhs(), /*divisor=*/true, axis, epsilon);
        if (of && of == divided.getLhs())
          x = of;
      }
      if (!x || x.getType() != type)
        continue;
      // gamma holds the normalized dimensions exactly.
      auto gammaType = dyn_cast<RankedTensorType>(gamma.getType());
      if (!gammaType ||
          gammaType.getShape() != type.getShape().drop_front(axis) ||
          gammaType.getElementType() != type.getElementType())
        continue;
      rewriter.replaceOpWithNewOp<RmsNormOp>(
          mul, type, x, gamma, rewriter.getI64IntegerAttr(axis),
          rewriter.getF32FloatAttr(static_cast<float>(epsilon)));
      return success();
    }
    return rewriter.notifyMatchFailure(mul, "not gamma * rms-normalized x");
  }
};

/// LayerNorm without its shift: rms_norm of x - mean(x) over the same
/// dimensions (what RaiseRmsNorm makes of the exporters' centre, variance,
/// rsqrt chain) is layer_norm(x).
struct RaiseLayerNorm : public OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RmsNormOp norm,
                                PatternRewriter &rewriter) const override {
    auto centred = chainOp<SubOp>(norm.getInput());
    int64_t axis = norm.getAxis();
    int64_t meanAxis = -1;
    ReduceMeanOp mean =
        centred ? trailingMean(centred.getRhs(), meanAxis) : nullptr;
    if (!mean || meanAxis != axis || mean.getInput() != centred.getLhs() ||
        centred.getLhs().getType() != norm.getType())
      return rewriter.notifyMatchFailure(norm, "not of x - mean(x)");
    rewriter.replaceOpWithNewOp<LayerNormOp>(
        norm, norm.getType(), centred.getLhs(), norm.getGamma(), Value(),
        norm.getAxisAttr(), norm.getEpsilonAttr());
    return success();
  }
};

/// layer_norm(x, gamma) + beta, beta holding the normalized dimensions ->
/// layer_norm(x, gamma, beta).
struct FoldLayerNormShift : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (auto [normed, beta] : bothOrders(add.getLhs(), add.getRhs())) {
      auto norm = chainOp<LayerNormOp>(normed);
      if (!norm || norm.getBeta() || norm.getType() != add.getType() ||
          beta.getType() != norm.getGamma().getType())
        continue;
      rewriter.replaceOpWithNewOp<LayerNormOp>(
          add, add.getType(), norm.getInput(), norm.getGamma(), beta,
          norm.getAxisAttr(), norm.getEpsilonAttr());
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not layer_norm(x, gamma) + beta");
  }
};

/// Whether `value` is one half of x's last dimension, x[..., D/2:] for
/// `upper` or x[..., :D/2], as a static unit-stride slice of the whole of
/// every other dimension.
bool isHalfOf(Value value, Value x, bool upper) {
  auto slice = value.getDefiningOp<SliceOp>();
  if (!slice || slice.getInput() != x || !slice.getOffsets().empty())
    return false;
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  int64_t last = static_cast<int64_t>(shape.size()) - 1;
  for (int64_t d = 0; d <= last; ++d) {
    int64_t size = d == last ? shape[d] / 2 : shape[d];
    int64_t offset = d == last && upper ? shape[d] / 2 : 0;
    if (slice.getStaticOffsets()[d] != offset ||
        slice.getStaticSizes()[d] != size || slice.getStaticStrides()[d] != 1)
      return false;
  }
  return true;
}

/// Whether `value` is rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2])
/// along the last dimension (LLaMA's and its descendants' rotate_half), its
/// concat and neg used only here.
bool isRotateHalf(Value value, Value x) {
  auto concat = chainOp<ConcatOp>(value);
  auto type = cast<RankedTensorType>(x.getType());
  if (!concat || concat.getType() != type || concat.getInputs().size() != 2 ||
      concat.getDim() != type.getRank() - 1 || type.getShape().back() % 2 != 0)
    return false;
  auto neg = chainOp<NegOp>(concat.getInputs()[0]);
  return neg && isHalfOf(neg.getInput(), x, /*upper=*/true) &&
         isHalfOf(concat.getInputs()[1], x, /*upper=*/false);
}

/// x * cos + rotate_half(x) * sin -> rotary(x, cos, sin), anchored on the
/// add; either operand order of the add and of each multiply. Each table
/// broadcasts to x with x's last dimension (the multiplies' result is x's
/// type), so the rotary op computes the same function.
struct RaiseRotary : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(add.getType());
    auto isTable = [&](Value table) {
      auto tableType = cast<RankedTensorType>(table.getType());
      return tableType.getRank() >= 1 &&
             tableType.getElementType() == type.getElementType() &&
             tableType.getShape().back() == type.getShape().back();
    };
    for (auto [direct, rotated] : bothOrders(add.getLhs(), add.getRhs())) {
      auto directMul = chainOp<MulOp>(direct);
      auto rotatedMul = chainOp<MulOp>(rotated);
      if (!directMul || !rotatedMul || directMul.getType() != type ||
          rotatedMul.getType() != type)
        continue;
      for (auto [x, cos] : bothOrders(directMul.getLhs(), directMul.getRhs()))
        for (auto [half, sin] :
             bothOrders(rotatedMul.getLhs(), rotatedMul.getRhs()))
          if (x.getType() == type && isTable(cos) && isTable(sin) &&
              isRotateHalf(half, x)) {
            rewriter.replaceOpWithNewOp<RotaryOp>(add, type, x, cos, sin,
                                                  /*interleaved=*/false);
            return success();
          }
    }
    return rewriter.notifyMatchFailure(add,
                                       "not x * cos + rotate_half(x) * sin");
  }
};

struct RaiseFusedOpsPass
    : public braid::impl::BraidRaiseFusedOpsBase<RaiseFusedOpsPass> {
  using BraidRaiseFusedOpsBase::BraidRaiseFusedOpsBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    if (activations)
      patterns.add<RaiseGelu, RaiseSilu>(&getContext());
    if (norms)
      patterns.add<RaiseRmsNorm, RaiseLayerNorm, FoldLayerNormShift>(
          &getContext());
    if (rotary)
      patterns.add<RaiseRotary>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
