//===- OnnxEmit.cpp - braid ops for ONNX ops ------------------------------===//
//
// The handler table: one entry per supported ONNX op type. Handlers build
// braid ops; the ops' own type inference produces the static result types.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ImporterImpl.h"

#include "onnx/onnx_pb.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::onnx_import;
using namespace mlir::braid::onnx_import::detail;

static RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

Value Importer::reshape(Value value, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, typeOf(value).getElementType());
  if (type == value.getType())
    return value;
  return verified(ReshapeOp::create(builder, loc, type, value));
}

Value Importer::scalar(double value, Type type) {
  auto tensorType = RankedTensorType::get({}, type);
  Attribute element;
  if (auto floatType = dyn_cast<FloatType>(type)) {
    APFloat f(value);
    bool losesInfo;
    f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
              &losesInfo);
    element = FloatAttr::get(type, f);
  } else {
    element = IntegerAttr::get(type, static_cast<int64_t>(value));
  }
  return ConstantOp::create(builder, loc, tensorType,
                            DenseElementsAttr::get(tensorType, element));
}

const llvm::StringMap<void (Importer::*)()> &Importer::emitters() {
  using E = Importer;
  static const llvm::StringMap<void (E::*)()> handlers = {
      {"Identity", &E::emitPassThrough},
      {"Dropout", &E::emitPassThrough},
      {"Add", &E::emitBinary<AddOp>},
      {"Sub", &E::emitBinary<SubOp>},
      {"Mul", &E::emitBinary<MulOp>},
      {"Div", &E::emitBinary<DivOp>},
      {"Pow", &E::emitPow},
      {"Max", &E::emitVariadic<MaxOp>},
      {"Min", &E::emitVariadic<MinOp>},
      {"Neg", &E::emitUnary<NegOp>},
      {"Exp", &E::emitUnary<ExpOp>},
      {"Log", &E::emitUnary<LogOp>},
      {"Sqrt", &E::emitUnary<SqrtOp>},
      {"Erf", &E::emitUnary<ErfOp>},
      {"Tanh", &E::emitUnary<TanhOp>},
      {"Sigmoid", &E::emitUnary<SigmoidOp>},
      {"Relu", &E::emitUnary<ReluOp>},
      {"Reciprocal", &E::emitReciprocal},
      {"Gelu", &E::emitGelu},
      {"Equal", &E::emitCompare<CompareKind::EQ>},
      {"Less", &E::emitCompare<CompareKind::LT>},
      {"LessOrEqual", &E::emitCompare<CompareKind::LE>},
      {"Greater", &E::emitCompare<CompareKind::GT>},
      {"GreaterOrEqual", &E::emitCompare<CompareKind::GE>},
      {"Where", &E::emitWhere},
      {"Cast", &E::emitCast},
      {"CastLike", &E::emitCast},
      {"MatMul", &E::emitMatMul},
      {"Gemm", &E::emitGemm},
      {"Einsum", &E::emitEinsum},
      {"Softmax", &E::emitSoftmax},
      {"ReduceMean", &E::emitReduce},
      {"ReduceSum", &E::emitReduce},
      {"ReduceMax", &E::emitReduce},
      {"ArgMax", &E::emitArgMax},
      {"ArgMin", &E::emitArgMin},
      {"LayerNormalization", &E::emitLayerNorm},
      {"RMSNormalization", &E::emitRmsNorm},
      {"Transpose", &E::emitTranspose},
      {"Reshape", &E::emitReshape},
      {"Flatten", &E::emitFlatten},
      {"Squeeze", &E::emitSqueeze},
      {"Unsqueeze", &E::emitUnsqueeze},
      {"Concat", &E::emitConcat},
      {"Split", &E::emitSplit},
      {"Slice", &E::emitSlice},
      {"Gather", &E::emitGather},
      {"Expand", &E::emitExpand},
      {"Trilu", &E::emitTrilu},
      {"Attention", &E::emitAttention},
  };
  return handlers;
}

bool Importer::canEmit() const { return emitters().count(node->op_type()); }

void Importer::emitNode() {
  auto handler = emitters().find(node->op_type());
  if (handler != emitters().end())
    return (this->*handler->second)();
  // Ops Braid only evaluates at import (their results have data-dependent
  // shapes or no braid op); TopK and Scatter* also inside raised MoE blocks.
  static const llvm::StringSet<> foldOnly = {"Range",
                                             "ConstantOfShape",
                                             "NonZero",
                                             "TopK",
                                             "ScatterND",
                                             "ScatterElements",
                                             "GatherElements",
                                             "Tile",
                                             "Mod",
                                             "And",
                                             "Or",
                                             "Xor",
                                             "Not",
                                             "Abs",
                                             "Floor",
                                             "Ceil",
                                             "Cos",
                                             "Sin",
                                             "CumSum",
                                             "OneHot"};
  if (foldOnly.contains(node->op_type()))
    fail("Braid evaluates this op only when its inputs are known at import "
         "time (or, for TopK and Scatter*, as part of an MoE block it "
         "raises); here they are computed");
  fail("unsupported operator");
}

void Importer::emitPassThrough() { setValue(outputName(0), input(0)); }

void Importer::emitPow() {
  Value base = input(0), exponent = input(1);
  Type element = typeOf(base).getElementType();
  if (typeOf(exponent).getElementType() != element)
    exponent = verified(CastOp::create(
        builder, loc,
        RankedTensorType::get(typeOf(exponent).getShape(), element), exponent));
  setValue(outputName(0), create<PowOp>(base, exponent));
}

void Importer::emitReciprocal() {
  Value x = input(0);
  setValue(outputName(0),
           create<DivOp>(scalar(1.0, typeOf(x).getElementType()), x));
}

void Importer::emitWhere() {
  setValue(outputName(0), create<SelectOp>(input(0), input(1), input(2)));
}

void Importer::emitSqueeze() { emitSqueezeUnsqueeze(/*squeeze=*/true); }
void Importer::emitUnsqueeze() { emitSqueezeUnsqueeze(/*squeeze=*/false); }
void Importer::emitLayerNorm() { emitNormalization(/*rms=*/false); }
void Importer::emitRmsNorm() { emitNormalization(/*rms=*/true); }

void Importer::emitGelu() {
  std::string approximate = stringAttr("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    fail("unknown Gelu approximation '" + approximate + "'");
  setValue(outputName(0), verified(GeluOp::create(builder, loc, input(0),
                                                  approximate == "tanh")));
}

void Importer::emitCast() {
  Value x = input(0);
  Type target = node->op_type() == "Cast" ? elementType(intAttr("to", kFloat))
                                          : typeOf(input(1)).getElementType();
  auto type = RankedTensorType::get(typeOf(x).getShape(), target);
  setValue(outputName(0),
           type == x.getType()
               ? x
               : verified(CastOp::create(builder, loc, type, x)));
}

void Importer::emitTranspose() {
  Value x = input(0);
  setValue(outputName(0),
           create<TransposeOp>(x, builder.getDenseI64ArrayAttr(
                                      permutation(typeOf(x).getRank()))));
}

void Importer::emitFlatten() {
  Value x = input(0);
  setValue(outputName(0), reshape(x, flattenedShape(typeOf(x).getShape())));
}

void Importer::emitConcat() {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < numInputs(); ++i)
    if (hasInput(i))
      inputs.push_back(input(i));
  int64_t axis = normalizeAxis(intAttr("axis", 0), typeOf(inputs[0]).getRank());
  setValue(outputName(0), create<ConcatOp>(inputs, axis));
}

void Importer::emitGather() {
  Value data = input(0);
  int64_t axis = normalizeAxis(intAttr("axis", 0), typeOf(data).getRank());
  Value indices;
  if (const HostTensor *known = constant(inputName(1))) {
    // Known indices are checked and made non-negative here.
    HostTensor normalized = castTo(*known, kInt64);
    int64_t size = typeOf(data).getDimSize(axis);
    for (int64_t &v : normalized.ints) {
      if (v < -size || v >= size)
        fail("index " + Twine(v) + " is out of range for axis " + Twine(axis) +
             " of size " + Twine(size));
      if (v < 0)
        v += size;
    }
    indices = materialize(normalized);
  } else {
    indices = input(1);
  }
  setValue(outputName(0), create<GatherOp>(data, indices, axis));
}

void Importer::emitExpand() {
  Value x = input(0);
  const HostTensor &shape = requireConstant(inputName(1), "Expand shape");
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < shape.numElements(); ++i)
    dims.push_back(shape.getInt(i));
  std::optional<SmallVector<int64_t, 4>> target =
      broadcastShapes(typeOf(x).getShape(), dims);
  if (!target)
    fail("cannot expand a tensor of rank " + Twine(typeOf(x).getRank()) +
         " to the given shape");
  if (!checkedNumElements(*target))
    fail("Expand's shape has too many elements");
  auto type = RankedTensorType::get(*target, typeOf(x).getElementType());
  setValue(outputName(0),
           type == x.getType()
               ? x
               : verified(BroadcastToOp::create(builder, loc, type, x)));
}

void Importer::emitMatMul() {
  Value a = input(0), b = input(1);
  int64_t rankA = typeOf(a).getRank(), rankB = typeOf(b).getRank();
  // numpy: a 1-D lhs gets a leading 1, a 1-D rhs a trailing 1, removed after.
  if (rankA == 1)
    a = reshape(a, {1, typeOf(a).getDimSize(0)});
  if (rankB == 1)
    b = reshape(b, {typeOf(b).getDimSize(0), 1});
  Value product = create<MatmulOp>(a, b, false, false);
  SmallVector<int64_t, 4> shape(typeOf(product).getShape());
  // Drop the unit dimensions added above: N's for a vector rhs, M's for a
  // vector lhs.
  if (rankB == 1)
    shape.pop_back();
  if (rankA == 1)
    shape.erase(shape.end() - (rankB == 1 ? 1 : 2));
  setValue(outputName(0), reshape(product, shape));
}

void Importer::emitGemm() {
  Value a = input(0), b = input(1);
  if (typeOf(a).getRank() != 2 || typeOf(b).getRank() != 2)
    fail("Gemm needs 2-D A and B");
  Value y = create<MatmulOp>(a, b, intAttr("transA", 0) != 0,
                             intAttr("transB", 0) != 0);
  Type element = typeOf(y).getElementType();
  float alpha = floatAttr("alpha", 1.0f), beta = floatAttr("beta", 1.0f);
  if (alpha != 1.0f)
    y = create<MulOp>(y, scalar(alpha, element));
  if (hasInput(2) && beta != 0.0f) {
    Value c = input(2);
    if (beta != 1.0f)
      c = create<MulOp>(c, scalar(beta, element));
    y = create<AddOp>(y, c);
  }
  setValue(outputName(0), y);
}

void Importer::emitSoftmax() {
  Value x = input(0);
  int64_t rank = typeOf(x).getRank();
  int64_t axis = normalizeAxis(intAttr("axis", opset < 13 ? 1 : -1), rank);
  if (opset >= 13 || axis == rank - 1) {
    setValue(outputName(0), verified(SoftmaxOp::create(builder, loc, x, axis)));
    return;
  }
  // Before opset 13 the input is flattened to 2-D at `axis`.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= typeOf(x).getDimSize(d);
  Value flat = reshape(x, {outer, inner});
  Value y = verified(SoftmaxOp::create(builder, loc, flat, 1));
  setValue(outputName(0), reshape(y, typeOf(x).getShape()));
}

void Importer::emitReduce() {
  Value x = input(0);
  StringRef op = node->op_type();
  int64_t rank = typeOf(x).getRank();
  // Axes became an input in opset 13 for ReduceSum and 18 for the others;
  // either form is read.
  std::optional<SmallVector<int64_t, 4>> axes = axesFrom("axes", 1);
  bool keepDims = intAttr("keepdims", 1) != 0;
  SmallVector<int64_t> dims;
  if (!axes || axes->empty()) {
    if (intAttr("noop_with_empty_axes", 0)) {
      setValue(outputName(0), x);
      return;
    }
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
  } else {
    for (int64_t a : *axes)
      dims.push_back(normalizeAxis(a, rank));
    llvm::sort(dims);
  }
  Value y;
  if (op == "ReduceMean")
    y = create<ReduceMeanOp>(x, dims, keepDims);
  else if (op == "ReduceSum")
    y = create<ReduceSumOp>(x, dims, keepDims);
  else
    y = create<ReduceMaxOp>(x, dims, keepDims);
  setValue(outputName(0), y);
}

void Importer::emitNormalization(bool rms) {
  Value x = input(0), scale = input(1);
  int64_t rank = typeOf(x).getRank();
  int64_t axis = normalizeAxis(intAttr("axis", -1), rank);
  float epsilon = floatAttr("epsilon", rms ? 1e-5f : 1e-5f);
  if (node->output_size() > 1)
    for (int i = 1; i < node->output_size(); ++i)
      if (!node->output(i).empty())
        fail("the mean and inverse-deviation outputs are not supported");
  // Scale and bias broadcast to the normalized shape.
  ArrayRef<int64_t> normalized = typeOf(x).getShape().drop_front(axis);
  auto fit = [&](Value v) {
    auto type = RankedTensorType::get(normalized, typeOf(v).getElementType());
    if (v.getType() == type)
      return v;
    return Value(verified(BroadcastToOp::create(builder, loc, type, v)));
  };
  Value y;
  if (rms) {
    y = verified(RmsNormOp::create(builder, loc, x.getType(), x, fit(scale),
                                   builder.getI64IntegerAttr(axis),
                                   builder.getF32FloatAttr(epsilon)));
  } else {
    Value bias = hasInput(2) ? fit(input(2)) : Value();
    y = verified(LayerNormOp::create(builder, loc, x.getType(), x, fit(scale),
                                     bias, builder.getI64IntegerAttr(axis),
                                     builder.getF32FloatAttr(epsilon)));
  }
  setValue(outputName(0), y);
}

void Importer::emitReshape() {
  Value x = input(0);
  const HostTensor &shape = requireConstant(inputName(1), "Reshape shape");
  setValue(outputName(0),
           reshape(x, reshapeTarget(typeOf(x).getShape(), shape,
                                    intAttr("allowzero", 0) != 0)));
}

void Importer::emitSqueezeUnsqueeze(bool squeeze) {
  Value x = input(0);
  setValue(outputName(0),
           reshape(x, squeezedShape(typeOf(x).getShape(), squeeze)));
}

void Importer::emitSlice() {
  Value x = input(0);
  SliceBox box = sliceBox(typeOf(x).getShape());
  for (int64_t step : box.steps)
    if (step < 0)
      fail("negative Slice steps on a computed tensor are not supported");
  auto type = RankedTensorType::get(box.sizes, typeOf(x).getElementType());
  if (type == x.getType()) {
    setValue(outputName(0), x);
    return;
  }
  setValue(outputName(0),
           verified(SliceOp::create(builder, loc, type, x, ValueRange(),
                                    builder.getDenseI64ArrayAttr(box.starts),
                                    builder.getDenseI64ArrayAttr(box.sizes),
                                    builder.getDenseI64ArrayAttr(box.steps))));
}

void Importer::emitSplit() {
  Value x = input(0);
  auto type = typeOf(x);
  int64_t axis = normalizeAxis(intAttr("axis", 0), type.getRank());
  int64_t size = type.getDimSize(axis);
  SmallVector<int64_t, 4> sizes;
  if (opset >= 13 && hasInput(1)) {
    const HostTensor &split = requireConstant(inputName(1), "Split sizes");
    for (int64_t i = 0; i < split.numElements(); ++i)
      sizes.push_back(split.getInt(i));
  } else if (auto given = intsAttr("split")) {
    sizes = *given;
  } else {
    int64_t n = intAttr("num_outputs", node->output_size());
    if (n < 1 || n > size)
      fail("cannot split a dimension of size " + Twine(size) + " into " +
           Twine(n) + " pieces");
    // Before opset 18 the pieces must be equal; since, the last is smaller.
    if (opset < 18 && size % n != 0)
      fail("cannot split a dimension of size " + Twine(size) + " into " +
           Twine(n) + " equal pieces");
    int64_t piece = (size + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes.push_back(std::min(piece, size - i * piece));
  }
  if (static_cast<int>(sizes.size()) != node->output_size())
    fail("Split has " + Twine(node->output_size()) + " outputs but " +
         Twine(sizes.size()) + " sizes");
  SmallVector<Type> types;
  for (int64_t s : sizes) {
    SmallVector<int64_t, 4> shape(type.getShape());
    shape[axis] = s;
    types.push_back(RankedTensorType::get(shape, type.getElementType()));
  }
  auto split = verified(SplitOp::create(builder, loc, types, x, axis));
  for (auto [i, result] : llvm::enumerate(split.getResults()))
    setValue(outputName(i), result);
}

void Importer::emitTrilu() {
  Value x = input(0);
  auto type = typeOf(x);
  if (type.getRank() < 2)
    fail("Trilu needs a tensor of rank 2 or more");
  int64_t k = 0;
  if (hasInput(1))
    k = requireConstant(inputName(1), "Trilu k").getInt(0);
  bool upper = intAttr("upper", 1) != 0;
  int64_t rows = type.getDimSize(type.getRank() - 2),
          cols = type.getDimSize(type.getRank() - 1);
  checkHostElements({rows, cols});
  HostTensor mask = HostTensor::filled(kBool, {rows, cols}, 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      mask.ints[r * cols + c] = upper ? c - r >= k : c - r <= k;
  Value zero = scalar(0, type.getElementType());
  setValue(outputName(0), create<SelectOp>(materialize(mask), x, zero));
}

void Importer::emitAttention() {
  Value q = input(0), k = input(1), v = input(2);
  for (unsigned i = 4; i < numInputs(); ++i)
    if (hasInput(i))
      fail("a key/value cache (past_key, past_value, nonpad_kv_seqlen) is "
           "not supported");
  for (int i = 1; i < node->output_size(); ++i)
    if (!node->output(i).empty())
      fail("only the attention output is supported, not the cache or the "
           "QK matmul outputs");
  if (floatAttr("softcap", 0.0f) != 0.0f)
    fail("softcap is not supported");
  bool threeD = typeOf(q).getRank() == 3;
  auto to4D = [&](Value t, int64_t heads) {
    auto type = typeOf(t);
    int64_t b = type.getDimSize(0), s = type.getDimSize(1),
            hidden = type.getDimSize(2);
    if (heads <= 0 || hidden % heads != 0)
      fail("3-D attention inputs need q_num_heads and kv_num_heads that "
           "divide the hidden size");
    Value split = reshape(t, {b, s, heads, hidden / heads});
    return Value(TransposeOp::create(
        builder, loc, split, builder.getDenseI64ArrayAttr({0, 2, 1, 3})));
  };
  if (threeD) {
    q = to4D(q, intAttr("q_num_heads", 0));
    k = to4D(k, intAttr("kv_num_heads", 0));
    v = to4D(v, intAttr("kv_num_heads", 0));
  }
  int64_t headSize = typeOf(q).getDimSize(3);
  float scale =
      floatAttr("scale", 1.0f / std::sqrt(static_cast<float>(headSize)));
  bool causal = intAttr("is_causal", 0) != 0;
  Value mask = hasInput(3) ? input(3) : Value();
  Value offset;
  int64_t sq = typeOf(q).getDimSize(2), sk = typeOf(k).getDimSize(2);
  // ONNX's causal mask is aligned at the top left (query i sees keys 0..i);
  // braid's default is the bottom right, so state the offset when they differ.
  if (causal && sq != sk)
    offset = arith::ConstantIndexOp::create(builder, loc, 0);
  Value y = create<AttentionOp>(q, k, v, mask, offset,
                                causal ? builder.getUnitAttr() : UnitAttr(),
                                builder.getF32FloatAttr(scale));
  if (threeD) {
    auto type = typeOf(y);
    Value t =
        create<TransposeOp>(y, builder.getDenseI64ArrayAttr({0, 2, 1, 3}));
    y = reshape(t, {type.getDimSize(0), type.getDimSize(2),
                    type.getDimSize(1) * type.getDimSize(3)});
  }
  setValue(outputName(0), y);
}

void Importer::emitArgMax() { emitArgReduce(/*max=*/true); }
void Importer::emitArgMin() { emitArgReduce(/*max=*/false); }

// ArgMax is reduce_max, a comparison with the maximum, and a reduce_max over
// candidate indices (no braid op finds an index):
//
//   m    = reduce_max(x, axis, keep_dims)
//   hit  = compare eq(x, m)
//   last = reduce_max(select(hit, i, -1))              (select_last_index=1)
//   first = (n-1) - reduce_max(select(hit, n-1-i, -1)) (the default)
//
// where i counts along the axis. Every step is exact in every element type,
// so ties resolve as ONNX specifies. ArgMin is ArgMax of an order-reversing
// map: -x for floats, and -x-1 (two's complement NOT, which wraps the way
// the kernels do and has no overflow) for integers.
void Importer::emitArgReduce(bool max) {
  Value x = input(0);
  auto type = typeOf(x);
  Type element = type.getElementType();
  if (element.isInteger(1))
    fail("Arg" + Twine(max ? "Max" : "Min") + " of a BOOL tensor");
  int64_t rank = type.getRank();
  if (rank == 0)
    fail("Arg" + Twine(max ? "Max" : "Min") +
         " needs a tensor of rank 1 or "
         "more");
  int64_t axis = normalizeAxis(intAttr("axis", 0), rank);
  bool keepDims = intAttr("keepdims", 1) != 0;
  bool last = intAttr("select_last_index", 0) != 0;
  int64_t n = type.getDimSize(axis);
  if (n == 0)
    fail("Arg" + Twine(max ? "Max" : "Min") + " over an empty axis");
  if (!max) {
    x = create<NegOp>(x);
    if (isa<IntegerType>(element))
      x = create<SubOp>(x, scalar(1, element));
  }
  Value top = create<ReduceMaxOp>(x, ArrayRef<int64_t>{axis}, true);
  Value hit = create<CompareOp>(CompareKind::EQ, x, top);
  // Candidate indices along the axis, shaped to broadcast against x.
  SmallVector<int64_t, 4> indexShape(rank, 1);
  indexShape[axis] = n;
  HostTensor index = HostTensor::filled(kInt64, indexShape, 0);
  for (int64_t i = 0; i < n; ++i)
    index.ints[i] = last ? i : n - 1 - i;
  Type i64 = builder.getI64Type();
  Value candidates = create<SelectOp>(hit, materialize(index), scalar(-1, i64));
  Value best =
      create<ReduceMaxOp>(candidates, ArrayRef<int64_t>{axis}, keepDims);
  if (!last)
    best = create<SubOp>(scalar(n - 1, i64), best);
  setValue(outputName(0), best);
}
