//===- Gradients.cpp - vector-Jacobian products of braid ops ---------------===//
//
// GradientOpInterface for every compute op and collective: each rule emits
// the adjoints of its operands as braid ops, from the adjoints of its
// results and the op's own operands and results (reverse mode runs after
// the forward pass, so both are available). Conventions (docs/training.md):
// a null result adjoint is zero; a null operand adjoint means the op is not
// differentiable in that operand. Collective rules assume the loss is
// computed once, replicated on every rank: the adjoint of a replicated
// value is the whole gradient on every rank, that of a sharded or partial
// value is the rank's share.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "dialects/braid/Builders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::braid;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

Value add(OpBuilder &b, Location loc, Value x, Value y) {
  return AddOp::create(b, loc, x, y);
}
Value sub(OpBuilder &b, Location loc, Value x, Value y) {
  return SubOp::create(b, loc, x, y);
}
Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  return MulOp::create(b, loc, x, y);
}
Value div(OpBuilder &b, Location loc, Value x, Value y) {
  return DivOp::create(b, loc, x, y);
}
/// `x * c` for a scalar `c` of x's element type.
Value scale(OpBuilder &b, Location loc, Value x, double c) {
  return mul(b, loc, x, scalarConstant(b, loc, typeOf(x).getElementType(), c));
}
Value neg(OpBuilder &b, Location loc, Value x) {
  return NegOp::create(b, loc, x.getType(), x);
}

Value reshape(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape) {
  if (typeOf(x).getShape() == shape)
    return x;
  return ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, typeOf(x).getElementType()), x);
}

Value reduceSum(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> dims,
                bool keepDims) {
  return ReduceSumOp::create(b, loc, x, b.getDenseI64ArrayAttr(dims),
                             keepDims ? b.getUnitAttr() : UnitAttr());
}

/// The dimensions [from, rank) of `type`.
SmallVector<int64_t> trailingDims(RankedTensorType type, int64_t from) {
  SmallVector<int64_t> dims(type.getRank() - from);
  std::iota(dims.begin(), dims.end(), from);
  return dims;
}

/// Sums `grad` (of a numpy-broadcast result's shape) down to `target`, the
/// shape of an operand that was broadcast: the leading dimensions the
/// operand lacks and those where it has size 1.
Value sumToShape(OpBuilder &b, Location loc, Value grad,
                 RankedTensorType target) {
  RankedTensorType type = typeOf(grad);
  if (type.getShape() == target.getShape())
    return grad;
  int64_t lead = type.getRank() - target.getRank();
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d < lead || (target.getDimSize(d - lead) == 1 && type.getDimSize(d) != 1))
      dims.push_back(d);
  Value sum = dims.empty() ? grad : reduceSum(b, loc, grad, dims, true);
  return reshape(b, loc, sum, target.getShape());
}

/// `grad` where `condition` holds, zero elsewhere.
Value where(OpBuilder &b, Location loc, Value condition, Value grad) {
  return SelectOp::create(
      b, loc, condition, grad,
      scalarConstant(b, loc, typeOf(grad).getElementType(), 0.0));
}

Value compare(OpBuilder &b, Location loc, CompareKind kind, Value x, Value y) {
  return CompareOp::create(b, loc, CompareKindAttr::get(b.getContext(), kind),
                           x, y);
}

/// The adjoint of every result, zeros for the null ones.
SmallVector<Value> gradsOrZeros(OpBuilder &b, Location loc, Operation *op,
                                ValueRange grads) {
  SmallVector<Value> out;
  for (auto [result, grad] : llvm::zip(op->getResults(), grads))
    out.push_back(grad ? grad : filledTensor(b, loc, typeOf(result), 0.0));
  return out;
}

/// Softmax backward along `dim`: `y * (g - sum(g * y))`.
Value softmaxGrad(OpBuilder &b, Location loc, Value y, Value g, int64_t dim) {
  Value dot = reduceSum(b, loc, mul(b, loc, g, y), {dim}, true);
  return mul(b, loc, y, sub(b, loc, g, dot));
}

/// Matmul adjoints for `lhs x rhs` with the op's transposes; batch
/// dimensions broadcast like the forward op, summed back to each operand.
void matmulGrads(OpBuilder &b, Location loc, Value lhs, Value rhs, Value g,
                 bool transposeLhs, bool transposeRhs,
                 SmallVectorImpl<Value> &operandGrads) {
  RankedTensorType lhsType = typeOf(lhs), rhsType = typeOf(rhs);
  // A 2-D weight against batched activations: fold the batch into the rows
  // so that its adjoint is one matmul, not a batched one summed afterwards.
  auto flatten = [&](Value v) {
    RankedTensorType t = typeOf(v);
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < t.getRank(); ++d)
      rows *= t.getDimSize(d);
    return reshape(b, loc, v, {rows, t.getDimSize(t.getRank() - 1)});
  };
  auto make = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return MatmulOp::create(b, loc, x, y, tx ? b.getUnitAttr() : UnitAttr(),
                            ty ? b.getUnitAttr() : UnitAttr());
  };
  // d lhs: stored [M, K] (or [K, M]).
  Value dLhs = transposeLhs ? make(rhs, g, transposeRhs, true)
                            : make(g, rhs, false, !transposeRhs);
  operandGrads.push_back(sumToShape(b, loc, dLhs, lhsType));
  // d rhs: stored [K, N] (or [N, K]).
  Value dRhs;
  if (rhsType.getRank() == 2 && lhsType.getRank() > 2 && !transposeLhs) {
    Value x = flatten(lhs), gy = flatten(g);
    dRhs = transposeRhs ? make(gy, x, true, false) : make(x, gy, true, false);
  } else {
    dRhs = transposeRhs ? make(g, lhs, true, transposeLhs)
                        : make(lhs, g, !transposeLhs, false);
  }
  operandGrads.push_back(sumToShape(b, loc, dRhs, rhsType));
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Defines the rule of a unary op from `dx = g * f(x, y)`.
#define UNARY_RULE(OP, BODY)                                                   \
  LogicalResult OP::emitGradients(OpBuilder &b, ValueRange grads,              \
                                  SmallVectorImpl<Value> &out) {               \
    Location loc = getLoc();                                                   \
    Value g = grads[0], x = getInput(), y = getResult();                       \
    (void)x;                                                                   \
    (void)y;                                                                   \
    Type elt = typeOf(x).getElementType();                                     \
    (void)elt;                                                                 \
    out.push_back(BODY);                                                       \
    return success();                                                          \
  }

UNARY_RULE(NegOp, neg(b, loc, g))
UNARY_RULE(ExpOp, mul(b, loc, g, y))
UNARY_RULE(LogOp, div(b, loc, g, x))
UNARY_RULE(SqrtOp, div(b, loc, scale(b, loc, g, 0.5), y))
// d rsqrt(x) = -0.5 * y^3
UNARY_RULE(RsqrtOp,
           mul(b, loc, scale(b, loc, g, -0.5), mul(b, loc, y, mul(b, loc, y, y))))
UNARY_RULE(TanhOp,
           mul(b, loc, g, sub(b, loc, scalarConstant(b, loc, elt, 1.0), mul(b, loc, y, y))))
// d erf(x) = 2 / sqrt(pi) * exp(-x^2)
UNARY_RULE(ErfOp,
           mul(b, loc, scale(b, loc, g, 2.0 / std::sqrt(M_PI)),
               ExpOp::create(b, loc, x.getType(),
                             neg(b, loc, mul(b, loc, x, x)))))
UNARY_RULE(SigmoidOp,
           mul(b, loc, g,
               mul(b, loc, y, sub(b, loc, scalarConstant(b, loc, elt, 1.0), y))))
// silu = x s(x): d = s (1 + x (1 - s))
UNARY_RULE(SiluOp, [&] {
  Value s = SigmoidOp::create(b, loc, x.getType(), x);
  Value one = scalarConstant(b, loc, elt, 1.0);
  return mul(b, loc, g,
             mul(b, loc, s,
                 add(b, loc, one, mul(b, loc, x, sub(b, loc, one, s)))));
}())
UNARY_RULE(ReluOp,
           where(b, loc,
                 compare(b, loc, CompareKind::GT, x, scalarConstant(b, loc, elt, 0.0)),
                 g))
#undef UNARY_RULE

LogicalResult GeluOp::emitGradients(OpBuilder &b, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  Location loc = getLoc();
  Value g = grads[0], x = getInput();
  Type elt = typeOf(x).getElementType();
  Value one = scalarConstant(b, loc, elt, 1.0);
  Value half = scalarConstant(b, loc, elt, 0.5);
  Value d;
  if (getTanh()) {
    // u = c (x + a x^3), y = 0.5 x (1 + tanh u):
    // dy = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2)
    const double c = std::sqrt(2.0 / M_PI), a = 0.044715;
    Value x2 = mul(b, loc, x, x);
    Value u = scale(b, loc, add(b, loc, x, scale(b, loc, mul(b, loc, x2, x), a)),
                    c);
    Value t = TanhOp::create(b, loc, x.getType(), u);
    Value du = scale(b, loc, add(b, loc, one, scale(b, loc, x2, 3 * a)), c);
    Value sech2 = sub(b, loc, one, mul(b, loc, t, t));
    d = add(b, loc, mul(b, loc, half, add(b, loc, one, t)),
            mul(b, loc, mul(b, loc, half, x), mul(b, loc, sech2, du)));
  } else {
    // y = 0.5 x (1 + erf(x / sqrt 2)): dy = 0.5 (1 + erf) + x pdf(x)
    Value e = ErfOp::create(b, loc, x.getType(),
                            scale(b, loc, x, 1.0 / std::sqrt(2.0)));
    Value pdf = scale(b, loc,
                      ExpOp::create(b, loc, x.getType(),
                                    scale(b, loc, mul(b, loc, x, x), -0.5)),
                      1.0 / std::sqrt(2.0 * M_PI));
    d = add(b, loc, mul(b, loc, half, add(b, loc, one, e)), mul(b, loc, x, pdf));
  }
  out.push_back(mul(b, loc, g, d));
  return success();
}

/// Binary rules: the adjoints before summing back to each operand's shape.
#define BINARY_RULE(OP, LHS, RHS)                                              \
  LogicalResult OP::emitGradients(OpBuilder &b, ValueRange grads,              \
                                  SmallVectorImpl<Value> &out) {               \
    Location loc = getLoc();                                                   \
    Value g = grads[0], x = getLhs(), y = getRhs(), z = getResult();           \
    (void)x;                                                                   \
    (void)y;                                                                   \
    (void)z;                                                                   \
    if (!isa<FloatType>(typeOf(z).getElementType())) {                         \
      out.append({Value(), Value()});                                          \
      return success();                                                        \
    }                                                                          \
    out.push_back(sumToShape(b, loc, LHS, typeOf(x)));                         \
    out.push_back(sumToShape(b, loc, RHS, typeOf(y)));                         \
    return success();                                                          \
  }

BINARY_RULE(AddOp, g, g)
BINARY_RULE(SubOp, g, neg(b, loc, g))
BINARY_RULE(MulOp, mul(b, loc, g, y), mul(b, loc, g, x))
BINARY_RULE(DivOp, div(b, loc, g, y), neg(b, loc, div(b, loc, mul(b, loc, g, z), y)))
// d x^y = y x^(y-1) (= y z / x, not used: x may be 0); d/dy = z log x
BINARY_RULE(PowOp,
            mul(b, loc, g,
                mul(b, loc, y,
                    PowOp::create(b, loc, x,
                                  sub(b, loc, y,
                                      scalarConstant(b, loc, typeOf(y).getElementType(),
                                             1.0))))),
            mul(b, loc, g, mul(b, loc, z, LogOp::create(b, loc, x.getType(), x))))
// Ties go to the left operand (one adjoint, not split).
BINARY_RULE(MaxOp, where(b, loc, compare(b, loc, CompareKind::GE, x, y), g),
            where(b, loc, compare(b, loc, CompareKind::LT, x, y), g))
BINARY_RULE(MinOp, where(b, loc, compare(b, loc, CompareKind::LE, x, y), g),
            where(b, loc, compare(b, loc, CompareKind::GT, x, y), g))
#undef BINARY_RULE

LogicalResult CompareOp::emitGradients(OpBuilder &, ValueRange,
                                       SmallVectorImpl<Value> &out) {
  out.append({Value(), Value()});
  return success();
}

LogicalResult SelectOp::emitGradients(OpBuilder &b, ValueRange grads,
                                      SmallVectorImpl<Value> &out) {
  Location loc = getLoc();
  Value g = grads[0];
  out.push_back(Value());
  out.push_back(sumToShape(b, loc, where(b, loc, getCondition(), g),
                           typeOf(getTrueValue())));
  Value notTaken = SelectOp::create(
      b, loc, getCondition(), scalarConstant(b, loc, typeOf(g).getElementType(), 0.0),
      g);
  out.push_back(sumToShape(b, loc, notTaken, typeOf(getFalseValue())));
  return success();
}

LogicalResult CastOp::emitGradients(OpBuilder &b, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  RankedTensorType in = typeOf(getInput());
  if (!isa<FloatType>(in.getElementType()) ||
      !isa<FloatType>(typeOf(getResult()).getElementType())) {
    out.push_back(Value());
    return success();
  }
  out.push_back(CastOp::create(b, getLoc(), in, grads[0]));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions, reductions, normalizations
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::emitGradients(OpBuilder &b, ValueRange grads,
                                      SmallVectorImpl<Value> &out) {
  matmulGrads(b, getLoc(), getLhs(), getRhs(), grads[0], getTransposeLhs(),
              getTransposeRhs(), out);
  return success();
}

LogicalResult GroupedMatmulOp::emitGradients(OpBuilder &b, ValueRange grads,
                                             SmallVectorImpl<Value> &out) {
  // Expert e's rows times expert e's weight: a matmul batched over experts.
  matmulGrads(b, getLoc(), getInput(), getWeight(), grads[0], false,
              getTransposeRhs(), out);
  return success();
}

/// The adjoint of a reduction's result broadcast back over the input.
static Value expandReduced(OpBuilder &b, Location loc, Value g,
                           RankedTensorType input, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> kept(input.getShape());
  for (int64_t d : dims)
    kept[d] = 1;
  return BroadcastToOp::create(
      b, loc, RankedTensorType::get(input.getShape(), typeOf(g).getElementType()),
      reshape(b, loc, g, kept));
}

LogicalResult ReduceSumOp::emitGradients(OpBuilder &b, ValueRange grads,
                                         SmallVectorImpl<Value> &out) {
  out.push_back(expandReduced(b, getLoc(), grads[0], typeOf(getInput()),
                              getDims()));
  return success();
}

LogicalResult ReduceMeanOp::emitGradients(OpBuilder &b, ValueRange grads,
                                          SmallVectorImpl<Value> &out) {
  RankedTensorType input = typeOf(getInput());
  int64_t count = 1;
  for (int64_t d : getDims())
    count *= input.getDimSize(d);
  out.push_back(scale(b, getLoc(),
                      expandReduced(b, getLoc(), grads[0], input, getDims()),
                      1.0 / static_cast<double>(count)));
  return success();
}

LogicalResult ReduceMaxOp::emitGradients(OpBuilder &b, ValueRange grads,
                                         SmallVectorImpl<Value> &out) {
  // Every position equal to the maximum gets the adjoint.
  Location loc = getLoc();
  RankedTensorType input = typeOf(getInput());
  Value max = expandReduced(b, loc, getResult(), input, getDims());
  Value g = expandReduced(b, loc, grads[0], input, getDims());
  out.push_back(where(b, loc, compare(b, loc, CompareKind::EQ, getInput(), max),
                      g));
  return success();
}

LogicalResult SoftmaxOp::emitGradients(OpBuilder &b, ValueRange grads,
                                       SmallVectorImpl<Value> &out) {
  out.push_back(softmaxGrad(b, getLoc(), getResult(), grads[0], getDim()));
  return success();
}

/// Means over a norm's trailing dimensions (kept as size 1) and the
/// inverse root of `meanSquare + epsilon`.
struct NormAxes {
  OpBuilder &b;
  Location loc;
  SmallVector<int64_t> dims;
  Value mean(Value v) const {
    return ReduceMeanOp::create(b, loc, v, b.getDenseI64ArrayAttr(dims),
                                b.getUnitAttr());
  }
  Value inverseRoot(Value meanSquare, double epsilon) const {
    return RsqrtOp::create(
        b, loc, meanSquare.getType(),
        add(b, loc, meanSquare,
            scalarConstant(b, loc, typeOf(meanSquare).getElementType(), epsilon)));
  }
};

LogicalResult LayerNormOp::emitGradients(OpBuilder &b, ValueRange grads,
                                         SmallVectorImpl<Value> &out) {
  // xhat = (x - mean) r, r = 1 / sqrt(var + eps), y = xhat gamma + beta:
  // dx = r (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = g gamma.
  Location loc = getLoc();
  Value x = getInput(), g = grads[0];
  NormAxes axes{b, loc, trailingDims(typeOf(x), getAxis())};
  auto mean = [&](Value v) { return axes.mean(v); };
  Value centered = sub(b, loc, x, mean(x));
  Value r = axes.inverseRoot(mean(mul(b, loc, centered, centered)),
                             getEpsilon().convertToDouble());
  Value xhat = mul(b, loc, centered, r);
  Value dxhat = mul(b, loc, g, getGamma());
  Value dx = mul(b, loc, r,
                 sub(b, loc, sub(b, loc, dxhat, mean(dxhat)),
                     mul(b, loc, xhat, mean(mul(b, loc, dxhat, xhat)))));
  out.push_back(dx);
  out.push_back(sumToShape(b, loc, mul(b, loc, g, xhat), typeOf(getGamma())));
  if (getBeta())
    out.push_back(sumToShape(b, loc, g, typeOf(getBeta())));
  return success();
}

LogicalResult RmsNormOp::emitGradients(OpBuilder &b, ValueRange grads,
                                       SmallVectorImpl<Value> &out) {
  // r = 1 / sqrt(mean(x^2) + eps), y = x r gamma:
  // dx = r (dxh - x r^2 mean(dxh x)), dxh = g gamma.
  Location loc = getLoc();
  Value x = getInput(), g = grads[0];
  NormAxes axes{b, loc, trailingDims(typeOf(x), getAxis())};
  auto mean = [&](Value v) { return axes.mean(v); };
  Value r = axes.inverseRoot(mean(mul(b, loc, x, x)),
                             getEpsilon().convertToDouble());
  Value dxh = mul(b, loc, g, getGamma());
  Value inner = mul(b, loc, mul(b, loc, x, mul(b, loc, r, r)),
                    mean(mul(b, loc, dxh, x)));
  out.push_back(mul(b, loc, r, sub(b, loc, dxh, inner)));
  out.push_back(
      sumToShape(b, loc, mul(b, loc, g, mul(b, loc, x, r)), typeOf(getGamma())));
  return success();
}

LogicalResult RotaryOp::emitGradients(OpBuilder &b, ValueRange grads,
                                      SmallVectorImpl<Value> &out) {
  // out = x cos + R(x) sin with R antisymmetric: dx = g cos - R(g sin), and
  // -R(v) is rotary(v, 0, -1).
  Location loc = getLoc();
  Value g = grads[0];
  Value rotated = RotaryOp::create(b, loc, g.getType(), mul(b, loc, g, getSin()),
                                   filledTensor(b, loc, typeOf(getCos()), 0.0),
                                   filledTensor(b, loc, typeOf(getSin()), -1.0),
                                   getInterleavedAttr());
  out.push_back(add(b, loc, mul(b, loc, g, getCos()), rotated));
  // The tables come from positions, not from anything trained.
  out.append({Value(), Value()});
  return success();
}

LogicalResult CrossEntropyOp::emitGradients(OpBuilder &b, ValueRange grads,
                                            SmallVectorImpl<Value> &out) {
  // d logits = (softmax(logits) - onehot(labels)) * g, g per sample.
  Location loc = getLoc();
  Value logits = getLogits();
  RankedTensorType type = typeOf(logits);
  int64_t classDim = type.getRank() - 1;
  Value p = SoftmaxOp::create(b, loc, type, logits,
                              b.getI64IntegerAttr(classDim));
  Value diff = sub(b, loc, p,
                   oneHot(b, loc, getLabels(), type.getDimSize(classDim),
                          type.getElementType()));
  Value g = grads[0];
  SmallVector<int64_t> perSample(type.getShape());
  perSample.back() = 1;
  switch (getReduction()) {
  case LossReduction::None:
    g = reshape(b, loc, g, perSample);
    break;
  case LossReduction::Mean: {
    int64_t samples = type.getNumElements() / type.getDimSize(classDim);
    g = scale(b, loc, g, 1.0 / static_cast<double>(samples));
    break;
  }
  case LossReduction::Sum:
    break;
  }
  out.push_back(mul(b, loc, diff, g));
  out.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::emitGradients(OpBuilder &b, ValueRange grads,
                                       SmallVectorImpl<Value> &out) {
  out.push_back(reshape(b, getLoc(), grads[0], typeOf(getInput()).getShape()));
  return success();
}

LogicalResult TransposeOp::emitGradients(OpBuilder &b, ValueRange grads,
                                         SmallVectorImpl<Value> &out) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  out.push_back(TransposeOp::create(b, getLoc(), getInput().getType(), grads[0],
                                    b.getDenseI64ArrayAttr(inverse)));
  return success();
}

LogicalResult BroadcastToOp::emitGradients(OpBuilder &b, ValueRange grads,
                                           SmallVectorImpl<Value> &out) {
  out.push_back(sumToShape(b, getLoc(), grads[0], typeOf(getInput())));
  return success();
}

LogicalResult SliceOp::emitGradients(OpBuilder &b, ValueRange grads,
                                     SmallVectorImpl<Value> &out) {
  // The adjoint lands in the sliced box, zeros around it: one concat per
  // sliced dimension. Runtime offsets and strides other than 1 are not
  // differentiated.
  Location loc = getLoc();
  if (!getOffsets().empty() ||
      llvm::any_of(getStaticStrides(), [](int64_t s) { return s != 1; }))
    return emitOpError("has no gradient rule for runtime offsets or strides "
                       "other than 1");
  RankedTensorType input = typeOf(getInput());
  Value g = grads[0];
  for (int64_t d = 0; d < input.getRank(); ++d) {
    int64_t offset = getStaticOffsets()[d];
    int64_t size = getStaticSizes()[d];
    int64_t after = input.getDimSize(d) - offset - size;
    if (offset == 0 && after == 0)
      continue;
    SmallVector<Value> parts;
    RankedTensorType gType = typeOf(g);
    auto zeros = [&](int64_t n) {
      SmallVector<int64_t> shape(gType.getShape());
      shape[d] = n;
      return filledTensor(b, loc, RankedTensorType::get(shape, gType.getElementType()),
                    0.0);
    };
    if (offset > 0)
      parts.push_back(zeros(offset));
    parts.push_back(g);
    if (after > 0)
      parts.push_back(zeros(after));
    SmallVector<int64_t> shape(gType.getShape());
    shape[d] = input.getDimSize(d);
    g = ConcatOp::create(b, loc,
                         RankedTensorType::get(shape, gType.getElementType()),
                         parts, b.getI64IntegerAttr(d));
  }
  out.push_back(g);
  return success();
}

LogicalResult ConcatOp::emitGradients(OpBuilder &b, ValueRange grads,
                                      SmallVectorImpl<Value> &out) {
  int64_t dim = getDim(), offset = 0;
  for (Value input : getInputs()) {
    int64_t size = typeOf(input).getDimSize(dim);
    out.push_back(sliceAlong(b, getLoc(), grads[0], dim, offset, size));
    offset += size;
  }
  return success();
}

LogicalResult SplitOp::emitGradients(OpBuilder &b, ValueRange grads,
                                     SmallVectorImpl<Value> &out) {
  SmallVector<Value> parts = gradsOrZeros(b, getLoc(), *this, grads);
  out.push_back(ConcatOp::create(b, getLoc(), getInput().getType(), parts,
                                 b.getI64IntegerAttr(getDim())));
  return success();
}

LogicalResult GatherOp::emitGradients(OpBuilder &b, ValueRange grads,
                                      SmallVectorImpl<Value> &out) {
  // The table's adjoint accumulates each gathered row's adjoint at its
  // index.
  out.push_back(ScatterAddOp::create(b, getLoc(), getInput().getType(),
                                     grads[0], getIndices(), getAxisAttr()));
  out.push_back(Value());
  return success();
}

LogicalResult ScatterAddOp::emitGradients(OpBuilder &b, ValueRange grads,
                                          SmallVectorImpl<Value> &out) {
  out.push_back(GatherOp::create(b, getLoc(), getUpdates().getType(), grads[0],
                                 getIndices(), getAxisAttr()));
  out.push_back(Value());
  return success();
}

LogicalResult ConstantOp::emitGradients(OpBuilder &, ValueRange,
                                        SmallVectorImpl<Value> &) {
  return success();
}

LogicalResult GetWeightOp::emitGradients(OpBuilder &, ValueRange,
                                         SmallVectorImpl<Value> &) {
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::emitGradients(OpBuilder &b, ValueRange grads,
                                         SmallVectorImpl<Value> &out) {
  // Recomputes the probabilities (memory Sq x Sk per head, as the forward
  // would keep them) and differentiates softmax(s Q K^T + mask) V.
  Location loc = getLoc();
  if (getCausalOffset())
    return emitOpError("has no gradient rule for a runtime causal offset");
  Value q = getQuery(), k = getKey(), v = getValue(), g = grads[0];
  RankedTensorType qType = typeOf(q), kType = typeOf(k), vType = typeOf(v);
  Type elt = qType.getElementType();
  int64_t batch = qType.getDimSize(0), heads = qType.getDimSize(1),
          sq = qType.getDimSize(2), kvHeads = kType.getDimSize(1),
          sk = kType.getDimSize(2);
  int64_t group = heads / kvHeads;
  // Grouped-query attention: key/value head h / group serves query head h.
  auto expand = [&](Value t) {
    if (group == 1)
      return t;
    RankedTensorType type = typeOf(t);
    int64_t len = type.getDimSize(2), width = type.getDimSize(3);
    Value five = reshape(b, loc, t, {batch, kvHeads, 1, len, width});
    Value wide = BroadcastToOp::create(
        b, loc,
        RankedTensorType::get({batch, kvHeads, group, len, width}, elt), five);
    return reshape(b, loc, wide, {batch, heads, len, width});
  };
  auto fold = [&](Value t, RankedTensorType type) {
    if (group == 1)
      return t;
    int64_t len = type.getDimSize(2), width = type.getDimSize(3);
    Value five = reshape(b, loc, t, {batch, kvHeads, group, len, width});
    return reshape(b, loc, reduceSum(b, loc, five, {2}, false),
                   type.getShape());
  };
  Value ke = expand(k), ve = expand(v);
  double s = getScale().convertToDouble();
  Value scores = scale(b, loc,
                       MatmulOp::create(b, loc, q, ke, UnitAttr(), b.getUnitAttr()),
                       s);
  if (Value mask = getMask()) {
    if (typeOf(mask).getElementType().isInteger(1))
      scores = SelectOp::create(b, loc, mask, scores,
                                scalarConstant(b, loc, elt, -INFINITY));
    else
      scores = add(b, loc, scores, mask);
  }
  if (getCausal()) {
    // Query i sees key j when j <= i + (Sk - Sq).
    int64_t offset = sk - sq;
    auto boolType = RankedTensorType::get({sq, sk}, b.getI1Type());
    SmallVector<bool> visible(sq * sk);
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j)
        visible[i * sk + j] = j <= i + offset;
    Value keep = ConstantOp::create(b, loc, boolType,
                                    DenseElementsAttr::get(boolType, visible));
    scores = SelectOp::create(b, loc, keep, scores,
                              scalarConstant(b, loc, elt, -INFINITY));
  }
  Value p = SoftmaxOp::create(b, loc, scores.getType(), scores,
                              b.getI64IntegerAttr(3));
  Value dv = MatmulOp::create(b, loc, p, g, b.getUnitAttr(), UnitAttr());
  Value dp = MatmulOp::create(b, loc, g, ve, UnitAttr(), b.getUnitAttr());
  Value ds = scale(b, loc, softmaxGrad(b, loc, p, dp, 3), s);
  Value dq = MatmulOp::create(b, loc, ds, ke, UnitAttr(), UnitAttr());
  Value dk = MatmulOp::create(b, loc, ds, q, b.getUnitAttr(), UnitAttr());
  out.push_back(dq);
  out.push_back(fold(dk, kType));
  out.push_back(fold(dv, vType));
  if (getMask())
    out.push_back(Value());
  if (getCausalOffset())
    out.push_back(Value());
  return success();
}

LogicalResult AttentionPartialOp::emitGradients(OpBuilder &, ValueRange,
                                                SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule: differentiate before "
                     "braid-ring-attention / braid-attention-2d");
}

LogicalResult AttentionMergeOp::emitGradients(OpBuilder &, ValueRange,
                                              SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule: differentiate before "
                     "braid-ring-attention / braid-attention-2d");
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult RouterTopKOp::emitGradients(OpBuilder &b, ValueRange grads,
                                          SmallVectorImpl<Value> &out) {
  // w = p[e] (renormalized with `normalize`), p = softmax(logits); the
  // chosen experts are piecewise constant. dp = sum_j dw_j onehot(e_j).
  Location loc = getLoc();
  Value logits = getLogits();
  RankedTensorType type = typeOf(logits);
  int64_t tokens = type.getDimSize(0), experts = type.getDimSize(1),
          k = getK();
  Type elt = type.getElementType();
  Value dw = grads[0];
  if (!dw) {
    out.push_back(filledTensor(b, loc, type, 0.0));
    return success();
  }
  Value p = SoftmaxOp::create(b, loc, type, logits, b.getI64IntegerAttr(1));
  Value hot = oneHot(b, loc, getExperts(), experts, elt); // [T, k, E]
  if (getNormalize()) {
    // w = c / sum(c), c = p[e]: dc = (dw - sum(dw w)) / sum(c).
    Value c = reduceSum(
        b, loc,
        mul(b, loc, hot, reshape(b, loc, p, {tokens, 1, experts})), {2}, false);
    Value total = reduceSum(b, loc, c, {1}, true);
    Value dot = reduceSum(b, loc, mul(b, loc, dw, getWeights()), {1}, true);
    dw = div(b, loc, sub(b, loc, dw, dot), total);
  }
  Value dp = reduceSum(b, loc,
                       mul(b, loc, hot, reshape(b, loc, dw, {tokens, k, 1})),
                       {1}, false);
  out.push_back(softmaxGrad(b, loc, p, dp, 1));
  return success();
}

LogicalResult MoeDispatchOp::emitGradients(OpBuilder &b, ValueRange grads,
                                           SmallVectorImpl<Value> &out) {
  // Each token's adjoint sums its slots' adjoints: a combine with weight 1.
  Location loc = getLoc();
  RankedTensorType experts = typeOf(getExperts());
  Value ones = filledTensor(
      b, loc,
      RankedTensorType::get(experts.getShape(), typeOf(getInput()).getElementType()),
      1.0);
  out.push_back(MoeCombineOp::create(b, loc, getInput().getType(), grads[0],
                                     getExperts(), ones));
  out.push_back(Value());
  return success();
}

LogicalResult MoeCombineOp::emitGradients(OpBuilder &b, ValueRange grads,
                                          SmallVectorImpl<Value> &out) {
  // With one (token, choice) pair per row (experts reshaped to [T*k, 1]),
  // dispatch and combine place pairs in the same slots as the k-wide ones:
  // d input = dispatch(w * g per pair), d w = <g, the pair's slot>.
  Location loc = getLoc();
  Value g = grads[0], input = getInput(), weights = getWeights();
  RankedTensorType experts = typeOf(getExperts());
  int64_t tokens = experts.getDimSize(0), k = experts.getDimSize(1);
  int64_t width = typeOf(g).getDimSize(1);
  Type elt = typeOf(g).getElementType();
  Value pairs = reshape(b, loc, getExperts(), {tokens * k, 1});
  Value weighted = mul(b, loc, reshape(b, loc, g, {tokens, 1, width}),
                       reshape(b, loc, weights, {tokens, k, 1}));
  out.push_back(MoeDispatchOp::create(b, loc, input.getType(),
                                      reshape(b, loc, weighted, {tokens * k, width}),
                                      pairs));
  out.push_back(Value());
  Value slots = MoeCombineOp::create(
      b, loc, RankedTensorType::get({tokens * k, width}, elt), input, pairs,
      filledTensor(b, loc, RankedTensorType::get({tokens * k, 1}, elt), 1.0));
  Value dot = reduceSum(b, loc,
                        mul(b, loc, reshape(b, loc, slots, {tokens, k, width}),
                            reshape(b, loc, g, {tokens, 1, width})),
                        {2}, false);
  out.push_back(dot);
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives (the loss is replicated; see the file comment)
//===----------------------------------------------------------------------===//

/// The mesh a collective names.
static MeshOp meshOf(Operation *op) {
  auto collective = cast<CollectiveOpInterface>(op);
  return SymbolTable::lookupNearestSymbolFrom<MeshOp>(op,
                                                      collective.getMeshAttr());
}

static SmallVector<StringRef> axesOf(Operation *op) {
  SmallVector<StringRef> axes;
  for (Attribute a : cast<CollectiveOpInterface>(op).getMeshAxes())
    axes.push_back(cast<StringAttr>(a).getValue());
  return axes;
}

LogicalResult AllReduceOp::emitGradients(OpBuilder &b, ValueRange grads,
                                         SmallVectorImpl<Value> &out) {
  // Each rank's contribution reaches the replicated result once.
  Location loc = getLoc();
  Value g = grads[0];
  switch (getReduction()) {
  case ReductionKind::Sum:
    out.push_back(g);
    return success();
  case ReductionKind::Avg: {
    MeshOp mesh = meshOf(*this);
    out.push_back(scale(b, loc, g,
                        1.0 / static_cast<double>(
                                  mesh.getGroupSize(getMeshAxes()))));
    return success();
  }
  case ReductionKind::Max:
  case ReductionKind::Min:
    out.push_back(
        where(b, loc, compare(b, loc, CompareKind::EQ, getInput(), getResult()),
              g));
    return success();
  }
  return failure();
}

LogicalResult AllGatherOp::emitGradients(OpBuilder &b, ValueRange grads,
                                         SmallVectorImpl<Value> &out) {
  // This rank's block of the replicated adjoint.
  Location loc = getLoc();
  MeshOp mesh = meshOf(*this);
  if (!mesh)
    return emitOpError("names no mesh");
  int64_t dim = getDim(), size = typeOf(getInput()).getDimSize(dim);
  if (mesh.getGroupSize(getMeshAxes()) == 1) {
    out.push_back(grads[0]);
    return success();
  }
  Value index = groupIndex(b, loc, mesh, axesOf(*this));
  Value offset = arith::MulIOp::create(
      b, loc, index, arith::ConstantIndexOp::create(b, loc, size));
  out.push_back(sliceAlongAt(b, loc, grads[0], dim, offset, size));
  return success();
}

LogicalResult ReduceScatterOp::emitGradients(OpBuilder &b, ValueRange grads,
                                             SmallVectorImpl<Value> &out) {
  if (getReduction() != ReductionKind::Sum)
    return emitOpError("has a gradient rule only for sum");
  out.push_back(AllGatherOp::create(b, getLoc(), getInput().getType(),
                                    getMeshAttr(), getMeshAxesAttr(), grads[0],
                                    getDimAttr()));
  return success();
}

LogicalResult AllToAllOp::emitGradients(OpBuilder &b, ValueRange grads,
                                        SmallVectorImpl<Value> &out) {
  out.push_back(AllToAllOp::create(b, getLoc(), getInput().getType(),
                                   getMeshAttr(), getMeshAxesAttr(), grads[0],
                                   getConcatDimAttr(), getSplitDimAttr()));
  return success();
}

LogicalResult CollectivePermuteOp::emitGradients(OpBuilder &b, ValueRange grads,
                                                 SmallVectorImpl<Value> &out) {
  MeshOp mesh = meshOf(*this);
  if (!mesh)
    return emitOpError("names no mesh");
  int64_t size = mesh.getGroupSize(getMeshAxes());
  int64_t back = ((size - getShift() % size) % size + size) % size;
  out.push_back(CollectivePermuteOp::create(
      b, getLoc(), getInput().getType(), getMeshAttr(), getMeshAxesAttr(),
      grads[0], b.getI64IntegerAttr(back)));
  return success();
}

LogicalResult BroadcastOp::emitGradients(OpBuilder &, ValueRange,
                                         SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule (only the root's input matters)");
}
