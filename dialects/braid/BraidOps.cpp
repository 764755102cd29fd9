//===- BraidOps.cpp - braid compute ops -----------------------------------===//
//
// Type inference, verifiers, folders and interface implementations of the
// compute ops. Structure ops live in BraidStructureOps.cpp, collectives in
// BraidCollectiveOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace mlir::braid;

//===----------------------------------------------------------------------===//
// Helpers shared by several ops
//===----------------------------------------------------------------------===//

static RankedTensorType tensorTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Formats a shape as `[2, 8, 768]` for diagnostics.
static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

/// Result type of numpy broadcasting `operands`. The operands must share their
/// element type; the result has `elementType` if given, else that one.
static LogicalResult inferBroadcastResult(std::optional<Location> location,
                                          ValueRange operands, Type elementType,
                                          SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> shape;
  Type operandElementType;
  for (Value operand : operands) {
    auto type = tensorTypeOf(operand);
    if (!operandElementType) {
      operandElementType = type.getElementType();
      shape.assign(type.getShape().begin(), type.getShape().end());
      continue;
    }
    if (type.getElementType() != operandElementType)
      return emitOptionalError(location, "operands have different element ",
                               "types: ", operandElementType, " and ",
                               type.getElementType());
    SmallVector<int64_t> broadcast;
    if (!OpTrait::util::getBroadcastedShape(shape, type.getShape(), broadcast))
      return emitOptionalError(location, "operand shapes ", shapeString(shape),
                               " and ", shapeString(type.getShape()),
                               " do not broadcast");
    shape = std::move(broadcast);
  }
  types.push_back(RankedTensorType::get(
      shape, elementType ? elementType : operandElementType));
  return success();
}

/// Checks that `dim` indexes a dimension of a rank-`rank` tensor.
static LogicalResult checkDim(std::optional<Location> location, StringRef what,
                              int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank)
    return emitOptionalError(location, what, " ", dim,
                             " is out of range for rank ", rank);
  return success();
}

/// Result type of reducing `input` over `dims`.
static LogicalResult inferReductionResult(std::optional<Location> location,
                                          Value input, ArrayRef<int64_t> dims,
                                          bool keepDims,
                                          SmallVectorImpl<Type> &types) {
  auto type = tensorTypeOf(input);
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t dim : dims) {
    if (failed(checkDim(location, "reduced dimension", dim, type.getRank())))
      return failure();
    if (!seen.insert(dim).second)
      return emitOptionalError(location, "dimension ", dim,
                               " is reduced twice");
  }
  SmallVector<int64_t> shape;
  for (auto [d, size] : llvm::enumerate(type.getShape())) {
    if (!seen.contains(d))
      shape.push_back(size);
    else if (keepDims)
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

/// Whether `shape` broadcasts numpy-style to exactly `target`.
static bool broadcastsTo(ArrayRef<int64_t> shape, ArrayRef<int64_t> target) {
  if (shape.size() > target.size())
    return false;
  size_t offset = target.size() - shape.size();
  for (auto [d, size] : llvm::enumerate(shape))
    if (size != 1 && size != target[d + offset])
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferBroadcastResult(location, {adaptor.getLhs(), adaptor.getRhs()},
                              IntegerType::get(context, 1), types);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  SmallVector<Type> valueTypes;
  if (failed(inferBroadcastResult(
          location, {adaptor.getTrueValue(), adaptor.getFalseValue()},
          /*elementType=*/nullptr, valueTypes)))
    return failure();
  auto valueType = cast<RankedTensorType>(valueTypes.front());
  auto conditionType = tensorTypeOf(adaptor.getCondition());
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(conditionType.getShape(),
                                          valueType.getShape(), shape))
    return emitOptionalError(location, "condition shape ",
                             shapeString(conditionType.getShape()),
                             " does not broadcast with value shape ",
                             shapeString(valueType.getShape()));
  types.push_back(RankedTensorType::get(shape, valueType.getElementType()));
  return success();
}

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getResult().getType().getShape())
    return emitOpError("changes the shape from ")
           << shapeString(getInput().getType().getShape()) << " to "
           << shapeString(getResult().getType().getShape())
           << "; a cast changes only the element type";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Matmul and grouped matmul
//===----------------------------------------------------------------------===//

/// The (rows, contraction) sizes of a matrix operand's last two dimensions.
static std::pair<int64_t, int64_t> matrixDims(RankedTensorType type,
                                              bool transposed) {
  int64_t rank = type.getRank();
  int64_t outer = type.getDimSize(rank - 2), inner = type.getDimSize(rank - 1);
  return transposed ? std::make_pair(inner, outer)
                    : std::make_pair(outer, inner);
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lhs = tensorTypeOf(adaptor.getLhs()),
       rhs = tensorTypeOf(adaptor.getRhs());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(location, "operands must be at least 2-D, got ",
                             "ranks ", lhs.getRank(), " and ", rhs.getRank());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(location, "operands have different element ",
                             "types: ", lhs.getElementType(), " and ",
                             rhs.getElementType());
  auto [m, k] = matrixDims(lhs, adaptor.getTransposeLhs());
  // Viewed transposed, an untransposed rhs [K, N] is (rows N, contraction K).
  auto [n, kRhs] = matrixDims(rhs, !adaptor.getTransposeRhs());
  if (k != kRhs)
    return emitOptionalError(location, "contraction sizes differ: lhs has ", k,
                             ", rhs has ", kRhs);
  SmallVector<int64_t> batch;
  if (!OpTrait::util::getBroadcastedShape(lhs.getShape().drop_back(2),
                                          rhs.getShape().drop_back(2), batch))
    return emitOptionalError(
        location, "batch dimensions ", shapeString(lhs.getShape().drop_back(2)),
        " and ", shapeString(rhs.getShape().drop_back(2)), " do not broadcast");
  batch.push_back(m);
  batch.push_back(n);
  types.push_back(RankedTensorType::get(batch, lhs.getElementType()));
  return success();
}

/// Maps the last two dimensions of a matrix operand to (rows, contraction)
/// factors, honouring a transpose.
static void appendMatrixFactors(ValueFactors &dims, unsigned rows,
                                unsigned contraction, bool transposed) {
  if (transposed) {
    dims.push_back({contraction});
    dims.push_back({rows});
  } else {
    dims.push_back({rows});
    dims.push_back({contraction});
  }
}

DimensionMapping MatmulOp::getDimensionMapping() {
  DimensionMapping mapping;
  auto result = getResult().getType();
  ArrayRef<int64_t> batchShape = result.getShape().drop_back(2);
  SmallVector<unsigned> batch = addParallelFactors(mapping, batchShape);
  unsigned m = mapping.addFactor(result.getDimSize(result.getRank() - 2),
                                 FactorKind::Parallel);
  unsigned n = mapping.addFactor(result.getDimSize(result.getRank() - 1),
                                 FactorKind::Parallel);
  auto [unusedM, kSize] = matrixDims(getLhs().getType(), getTransposeLhs());
  (void)unusedM;
  unsigned k =
      mapping.addFactor(kSize, FactorKind::Reduction, ReductionKind::Sum);

  auto operandFactors = [&](RankedTensorType type, unsigned rows,
                            unsigned contraction, bool transposed) {
    // Batch dimensions align at the trailing end of the result's batch.
    SmallVector<unsigned> batchFactors(batch.begin(), batch.end());
    ValueFactors dims;
    int64_t operandBatch = type.getRank() - 2;
    int64_t offset = (int64_t)batchShape.size() - operandBatch;
    for (int64_t d = 0; d < operandBatch; ++d) {
      if (type.getDimSize(d) == batchShape[d + offset])
        dims.push_back({batchFactors[d + offset]});
      else
        dims.push_back({});
    }
    appendMatrixFactors(dims, rows, contraction, transposed);
    return dims;
  };
  mapping.addOperand(
      operandFactors(getLhs().getType(), m, k, getTransposeLhs()));
  // The rhs is [K, N]: its "rows" are the contraction.
  ValueFactors rhs =
      operandFactors(getRhs().getType(), k, n, getTransposeRhs());
  mapping.addOperand(std::move(rhs));
  ValueFactors out;
  for (unsigned f : batch)
    out.push_back({f});
  out.push_back({m});
  out.push_back({n});
  mapping.addResult(std::move(out));
  return mapping;
}

int64_t MatmulOp::getFlops() {
  auto [m, k] = matrixDims(getLhs().getType(), getTransposeLhs());
  (void)m;
  return 2 * getNumElements(getResult()) * k;
}

LogicalResult GroupedMatmulOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto input = tensorTypeOf(adaptor.getInput());
  auto weight = tensorTypeOf(adaptor.getWeight());
  if (input.getRank() != 3 || weight.getRank() != 3)
    return emitOptionalError(location, "expects input [E, C, K] and weight ",
                             "[E, K, N], got ranks ", input.getRank(), " and ",
                             weight.getRank());
  if (input.getElementType() != weight.getElementType())
    return emitOptionalError(location, "operands have different element ",
                             "types: ", input.getElementType(), " and ",
                             weight.getElementType());
  if (input.getDimSize(0) != weight.getDimSize(0))
    return emitOptionalError(location, "input has ", input.getDimSize(0),
                             " experts but weight has ", weight.getDimSize(0));
  auto [kWeight, n] = matrixDims(weight, adaptor.getTransposeRhs());
  if (input.getDimSize(2) != kWeight)
    return emitOptionalError(location, "contraction sizes differ: input has ",
                             input.getDimSize(2), ", weight has ", kWeight);
  types.push_back(RankedTensorType::get(
      {input.getDimSize(0), input.getDimSize(1), n}, input.getElementType()));
  return success();
}

DimensionMapping GroupedMatmulOp::getDimensionMapping() {
  DimensionMapping mapping;
  auto result = getResult().getType();
  unsigned e = mapping.addFactor(result.getDimSize(0), FactorKind::Parallel);
  unsigned c = mapping.addFactor(result.getDimSize(1), FactorKind::Parallel);
  unsigned n = mapping.addFactor(result.getDimSize(2), FactorKind::Parallel);
  unsigned k = mapping.addFactor(getInput().getType().getDimSize(2),
                                 FactorKind::Reduction, ReductionKind::Sum);
  mapping.addOperand({{e}, {c}, {k}});
  ValueFactors weight{{e}};
  appendMatrixFactors(weight, k, n, getTransposeRhs());
  mapping.addOperand(std::move(weight));
  mapping.addResult({{e}, {c}, {n}});
  return mapping;
}

int64_t GroupedMatmulOp::getFlops() {
  return 2 * getNumElements(getResult()) * getInput().getType().getDimSize(2);
}

//===----------------------------------------------------------------------===//
// Softmax, normalizations, rotary
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (getDim() < 0 || getDim() >= rank)
    return emitOpError("dimension ")
           << getDim() << " is out of range for rank " << rank;
  return success();
}

DimensionMapping SoftmaxOp::getDimensionMapping() {
  DimensionMapping mapping;
  ValueFactors dims;
  for (auto [d, size] : llvm::enumerate(getInput().getType().getShape()))
    dims.push_back({mapping.addFactor(size, (int64_t)d == getDim()
                                                ? FactorKind::Whole
                                                : FactorKind::Parallel)});
  mapping.addOperand(dims);
  mapping.addResult(dims);
  return mapping;
}

/// Shared verifier of layer_norm and rms_norm.
static LogicalResult
verifyNormalization(Operation *op, int64_t axis,
                    ArrayRef<std::pair<StringRef, Value>> params) {
  auto input = tensorTypeOf(op->getOperand(0));
  if (axis < 0 || axis >= input.getRank())
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << input.getRank();
  if (op->getResult(0).getType() != input)
    return op->emitOpError("result type ")
           << op->getResult(0).getType() << " differs from input type "
           << input;
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  for (auto [name, param] : params) {
    auto type = tensorTypeOf(param);
    if (type.getShape() != normalized)
      return op->emitOpError(name) << " shape " << shapeString(type.getShape())
                                   << " must equal the normalized dimensions "
                                   << shapeString(normalized);
    if (type.getElementType() != input.getElementType())
      return op->emitOpError(name)
             << " element type " << type.getElementType()
             << " differs from input element type " << input.getElementType();
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  SmallVector<std::pair<StringRef, Value>> params{{"gamma", getGamma()}};
  if (getBeta())
    params.push_back({"beta", getBeta()});
  return verifyNormalization(*this, getAxis(), params);
}

LogicalResult RmsNormOp::verify() {
  return verifyNormalization(*this, getAxis(), {{"gamma", getGamma()}});
}

LogicalResult RotaryOp::verify() {
  auto input = getInput().getType();
  if (input.getRank() < 1 || input.getShape().back() % 2 != 0)
    return emitOpError("last dimension must be even to rotate pairs, got ")
           << shapeString(input.getShape());
  if (getResult().getType() != input)
    return emitOpError("result type ")
           << getResult().getType() << " differs from input type " << input;
  for (auto [name, table] :
       {std::make_pair("cos", getCos()), std::make_pair("sin", getSin())}) {
    auto type = tensorTypeOf(table);
    if (type.getElementType() != input.getElementType())
      return emitOpError(name)
             << " element type " << type.getElementType()
             << " differs from input element type " << input.getElementType();
    if (!broadcastsTo(type.getShape(), input.getShape()) ||
        type.getRank() == 0 ||
        type.getShape().back() != input.getShape().back())
      return emitOpError(name) << " shape " << shapeString(type.getShape())
                               << " must broadcast to the input shape "
                               << shapeString(input.getShape())
                               << " with the same last dimension";
  }
  return success();
}

DimensionMapping RotaryOp::getDimensionMapping() {
  DimensionMapping mapping;
  auto input = getInput().getType();
  SmallVector<unsigned> factors;
  for (auto [d, size] : llvm::enumerate(input.getShape()))
    factors.push_back(mapping.addFactor(size, (int64_t)d == input.getRank() - 1
                                                  ? FactorKind::Whole
                                                  : FactorKind::Parallel));
  for (Value operand : getOperands())
    mapping.addOperand(alignToResult(operand, factors, input.getShape()));
  mapping.addResult(alignToResult(getResult(), factors, input.getShape()));
  return mapping;
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

/// The shape of gathering `indices` along `axis` from a `table`-typed
/// tensor: `table.shape[:axis] + indices.shape + table.shape[axis+1:]`.
static SmallVector<int64_t> gatheredShape(RankedTensorType table,
                                          RankedTensorType indices,
                                          int64_t axis) {
  SmallVector<int64_t> shape(table.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, table.getShape().drop_front(axis + 1));
  return shape;
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto input = tensorTypeOf(adaptor.getInput());
  auto indices = tensorTypeOf(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (failed(checkDim(location, "axis", axis, input.getRank())))
    return failure();
  types.push_back(RankedTensorType::get(gatheredShape(input, indices, axis),
                                        input.getElementType()));
  return success();
}

namespace {
/// The factors of gather and scatter_add: a table indexed along `axis` and
/// the gathered tensor, `table.shape[:axis] + indices.shape +
/// table.shape[axis+1:]`.
struct TableFactors {
  ValueFactors table, indices, gathered;
};
} // namespace

/// Adds the factors of a table indexed along `axis` by `indices`: the
/// table's other dimensions are parallel factors shared with the gathered
/// tensor, the indexed dimension is whole, and the indices' dimensions are
/// `indexKind` factors (`indexCombiner` for a reduction) shared with the
/// gathered tensor.
static TableFactors
addTableFactors(DimensionMapping &mapping, RankedTensorType table,
                RankedTensorType indices, int64_t axis, FactorKind indexKind,
                std::optional<ReductionKind> indexCombiner = std::nullopt) {
  TableFactors dims;
  SmallVector<unsigned> outer, inner;
  for (int64_t d = 0; d < table.getRank(); ++d) {
    if (d == axis) {
      dims.table.push_back(
          {mapping.addFactor(table.getDimSize(d), FactorKind::Whole)});
      continue;
    }
    unsigned f = mapping.addFactor(table.getDimSize(d), FactorKind::Parallel);
    dims.table.push_back({f});
    (d < axis ? outer : inner).push_back(f);
  }
  for (unsigned f : outer)
    dims.gathered.push_back({f});
  for (int64_t size : indices.getShape()) {
    unsigned f = mapping.addFactor(size, indexKind, indexCombiner);
    dims.indices.push_back({f});
    dims.gathered.push_back({f});
  }
  for (unsigned f : inner)
    dims.gathered.push_back({f});
  return dims;
}

DimensionMapping GatherOp::getDimensionMapping() {
  DimensionMapping mapping;
  TableFactors dims =
      addTableFactors(mapping, getInput().getType(), getIndices().getType(),
                      getAxis(), FactorKind::Parallel);
  mapping.addOperand(std::move(dims.table));
  mapping.addOperand(std::move(dims.indices));
  mapping.addResult(std::move(dims.gathered));
  return mapping;
}

int64_t GatherOp::getMinBytes() {
  return getNumBytes(getIndices()) + 2 * getNumBytes(getResult());
}

//===----------------------------------------------------------------------===//
// ScatterAdd
//===----------------------------------------------------------------------===//

LogicalResult ScatterAddOp::verify() {
  auto updates = getUpdates().getType();
  auto indices = getIndices().getType();
  auto result = getResult().getType();
  if (updates.getElementType() != result.getElementType())
    return emitOpError("updates element type ")
           << updates.getElementType() << " differs from result element type "
           << result.getElementType();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= result.getRank())
    return emitOpError("axis ") << axis << " is out of range for the result "
                                << "rank " << result.getRank();
  SmallVector<int64_t> expected = gatheredShape(result, indices, axis);
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("updates shape ")
           << shapeString(updates.getShape()) << " must be "
           << shapeString(expected) << " (result shape "
           << shapeString(result.getShape()) << " with dimension " << axis
           << " replaced by the indices shape "
           << shapeString(indices.getShape()) << ")";
  return success();
}

DimensionMapping ScatterAddOp::getDimensionMapping() {
  // Gather's factors with table and gathered tensor exchanged; the indices'
  // dimensions, absent from the result, are summed over.
  DimensionMapping mapping;
  TableFactors dims = addTableFactors(
      mapping, getResult().getType(), getIndices().getType(), getAxis(),
      FactorKind::Reduction, ReductionKind::Sum);
  mapping.addOperand(std::move(dims.gathered));
  mapping.addOperand(std::move(dims.indices));
  mapping.addResult(std::move(dims.table));
  return mapping;
}

//===----------------------------------------------------------------------===//
// Reshape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto input = getInput().getType(), result = getResult().getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("changes the element type from ")
           << input.getElementType() << " to " << result.getElementType();
  if (input.getNumElements() != result.getNumElements())
    return emitOpError("cannot reshape ")
           << shapeString(input.getShape()) << " (" << input.getNumElements()
           << " elements) into " << shapeString(result.getShape()) << " ("
           << result.getNumElements() << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getResult().getType());
  return {};
}

DimensionMapping ReshapeOp::getDimensionMapping() {
  // Walks both shapes, grouping the fewest consecutive dimensions whose sizes
  // multiply to the same number. A group with one dimension on either side is
  // exact factor sharing (split or merge); any other group is opaque.
  DimensionMapping mapping;
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getResult().getType().getShape();
  ValueFactors inDims(in.size()), outDims(out.size());
  if (getInput().getType().getNumElements() == 0) {
    // No elements: nothing to group; keep the types consistent.
    for (auto [d, size] : llvm::enumerate(in))
      inDims[d].push_back(mapping.addFactor(size, FactorKind::Whole));
    for (auto [d, size] : llvm::enumerate(out))
      outDims[d].push_back(mapping.addFactor(size, FactorKind::Parallel));
    mapping.addOperand(std::move(inDims));
    mapping.addResult(std::move(outDims));
    return mapping;
  }
  size_t i = 0, j = 0;
  auto skipOnes = [](ArrayRef<int64_t> shape, size_t &pos) {
    while (pos < shape.size() && shape[pos] == 1)
      ++pos;
  };
  while (true) {
    skipOnes(in, i);
    skipOnes(out, j);
    if (i >= in.size() || j >= out.size())
      break;
    SmallVector<size_t> groupIn{i}, groupOut{j};
    int64_t productIn = in[i], productOut = out[j];
    while (productIn != productOut) {
      if (productIn < productOut) {
        productIn *= in[++i];
        if (in[i] != 1)
          groupIn.push_back(i);
      } else {
        productOut *= out[++j];
        if (out[j] != 1)
          groupOut.push_back(j);
      }
    }
    ++i;
    ++j;
    if (groupIn.size() == 1) {
      for (size_t d : groupOut) {
        unsigned f = mapping.addFactor(out[d], FactorKind::Parallel);
        outDims[d].push_back(f);
        inDims[groupIn.front()].push_back(f);
      }
    } else if (groupOut.size() == 1) {
      for (size_t d : groupIn) {
        unsigned f = mapping.addFactor(in[d], FactorKind::Parallel);
        inDims[d].push_back(f);
        outDims[groupOut.front()].push_back(f);
      }
    } else {
      // No block of the result is a reshape of a block of the input (the
      // sequence merged with part of the hidden size): both sides whole.
      for (size_t d : groupIn)
        inDims[d].push_back(mapping.addFactor(in[d], FactorKind::Whole));
      for (size_t d : groupOut)
        outDims[d].push_back(mapping.addFactor(out[d], FactorKind::Whole));
    }
  }
  mapping.addOperand(std::move(inDims));
  mapping.addResult(std::move(outDims));
  return mapping;
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto input = tensorTypeOf(adaptor.getInput());
  ArrayRef<int64_t> permutation = adaptor.getPermutation();
  if ((int64_t)permutation.size() != input.getRank())
    return emitOptionalError(location, "permutation has ", permutation.size(),
                             " entries for rank ", input.getRank());
  SmallVector<bool> seen(input.getRank(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : permutation) {
    if (p < 0 || p >= input.getRank() || seen[p])
      return emitOptionalError(
          location, "permutation ", shapeString(permutation),
          " is not a permutation of 0..", input.getRank() - 1);
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  // transpose(transpose(x, inner), outer) is one transpose of x.
  if (auto producer = getInput().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t p : getPermutation())
      composed.push_back(producer.getPermutation()[p]);
    getInputMutable().assign(producer.getInput());
    setPermutation(composed);
    return getResult();
  }
  for (auto [i, p] : llvm::enumerate(getPermutation()))
    if ((int64_t)i != p)
      return {};
  return getInput();
}

DimensionMapping TransposeOp::getDimensionMapping() {
  DimensionMapping mapping;
  SmallVector<unsigned> factors =
      addParallelFactors(mapping, getInput().getType().getShape());
  ValueFactors in, out;
  for (unsigned f : factors)
    in.push_back({f});
  for (int64_t p : getPermutation())
    out.push_back({factors[p]});
  mapping.addOperand(std::move(in));
  mapping.addResult(std::move(out));
  return mapping;
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() {
  auto input = getInput().getType();
  int64_t rank = input.getRank();
  ArrayRef<int64_t> offsets = getStaticOffsets(), sizes = getStaticSizes(),
                    strides = getStaticStrides();
  if ((int64_t)offsets.size() != rank || (int64_t)sizes.size() != rank ||
      (int64_t)strides.size() != rank)
    return emitOpError("expects ")
           << rank << " offsets, sizes and strides, got " << offsets.size()
           << ", " << sizes.size() << " and " << strides.size();
  int64_t numDynamic = llvm::count(offsets, ShapedType::kDynamic);
  if (numDynamic != (int64_t)getOffsets().size())
    return emitOpError("has ") << numDynamic << " dynamic offsets but "
                               << getOffsets().size() << " offset values";
  if (getResult().getType().getShape() != sizes)
    return emitOpError("result shape ")
           << shapeString(getResult().getType().getShape())
           << " differs from the sizes " << shapeString(sizes);
  if (getResult().getType().getElementType() != input.getElementType())
    return emitOpError("changes the element type");
  for (int64_t d = 0; d < rank; ++d) {
    if (strides[d] < 1)
      return emitOpError("stride ")
             << strides[d] << " of dimension " << d << " is not positive";
    // The sizes equal the result's static shape, so they are non-negative;
    // the extent and end are computed with overflow checks.
    int64_t offset = ShapedType::isDynamic(offsets[d]) ? 0 : offsets[d];
    std::optional<int64_t> extent =
        sizes[d] == 0
            ? std::optional<int64_t>(0)
            : llvm::checkedMulAdd<int64_t>(sizes[d] - 1, strides[d], 1);
    std::optional<int64_t> end =
        extent ? llvm::checkedAdd<int64_t>(offset, *extent) : std::nullopt;
    if (offset < 0 || !end || *end > input.getDimSize(d))
      return emitOpError("slice of dimension ")
             << d << " (offset " << offset << ", size " << sizes[d]
             << ", stride " << strides[d] << ") exceeds its size "
             << input.getDimSize(d);
  }
  return success();
}

/// Whether dimension `d` of the slice takes the whole input dimension.
static bool isFullDim(SliceOp op, int64_t d) {
  return op.getStaticOffsets()[d] == 0 && op.getStaticStrides()[d] == 1 &&
         op.getStaticSizes()[d] == op.getInput().getType().getDimSize(d);
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  for (int64_t d = 0; d < getInput().getType().getRank(); ++d)
    if (!isFullDim(*this, d))
      return {};
  return getInput();
}

DimensionMapping SliceOp::getDimensionMapping() {
  return getResizeMapping(*this,
                          [&](int64_t d) { return isFullDim(*this, d); });
}

/// The result dimensions of a slice made of factor `factor` that the slice
/// cuts (the input does not share the factor).
static SmallVector<int64_t> slicedDimsOf(const DimensionMapping &mapping,
                                         unsigned factor) {
  SmallVector<int64_t> dims;
  const ValueFactors &input = mapping.getOperands()[0];
  for (auto [d, factors] : llvm::enumerate(mapping.getResults()[0]))
    if (llvm::is_contained(factors, factor) &&
        !llvm::is_contained(input[d], factor))
      dims.push_back(d);
  return dims;
}

bool SliceOp::canComputeBlock(const DimensionMapping &mapping, unsigned factor,
                              int64_t within) {
  return within == 1 || slicedDimsOf(mapping, factor).empty();
}

LogicalResult SliceOp::restrictToBlock(OpBuilder &builder,
                                       const DimensionMapping &mapping,
                                       const FactorBlock &block) {
  setStaticSizes(getType().getShape());
  SmallVector<int64_t> sliced = slicedDimsOf(mapping, block.factor);
  if (sliced.empty())
    return success();
  if (!block.offset)
    return failure();
  // Every offset as a value or a constant; the sliced ones move by the
  // block's start times the stride.
  builder.setInsertionPoint(*this);
  Location loc = getLoc();
  SmallVector<int64_t> staticOffsets(getStaticOffsets());
  SmallVector<Value> dynamic;
  unsigned next = 0;
  std::optional<int64_t> start = getConstantIntValue(block.offset);
  for (int64_t d = 0, e = staticOffsets.size(); d < e; ++d) {
    bool isDynamic = ShapedType::isDynamic(staticOffsets[d]);
    Value current = isDynamic ? getOffsets()[next++] : Value();
    if (!llvm::is_contained(sliced, d)) {
      if (isDynamic)
        dynamic.push_back(current);
      continue;
    }
    int64_t stride = getStaticStrides()[d];
    if (!isDynamic && start) {
      staticOffsets[d] += *start * stride;
      continue;
    }
    Value step = arith::MulIOp::create(
        builder, loc, block.offset,
        arith::ConstantIndexOp::create(builder, loc, stride));
    Value base = isDynamic ? current
                           : arith::ConstantIndexOp::create(
                                 builder, loc, staticOffsets[d])
                                 .getResult();
    dynamic.push_back(arith::AddIOp::create(builder, loc, base, step));
    staticOffsets[d] = ShapedType::kDynamic;
  }
  setStaticOffsets(staticOffsets);
  getOffsetsMutable().assign(dynamic);
  return success();
}

//===----------------------------------------------------------------------===//
// Concat, split, broadcast_to
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(location, "expects at least one input");
  auto first = tensorTypeOf(inputs.front());
  int64_t dim = adaptor.getDim();
  if (failed(checkDim(location, "dimension", dim, first.getRank())))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] = 0;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    auto type = tensorTypeOf(input);
    if (type.getElementType() != first.getElementType() ||
        type.getRank() != first.getRank())
      return emitOptionalError(location, "input #", i, " has type ", type,
                               ", incompatible with input #0 of type ", first);
    for (int64_t d = 0; d < first.getRank(); ++d)
      if (d != dim && type.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(location, "input #", i, " has size ",
                                 type.getDimSize(d), " in dimension ", d,
                                 " where input #0 has ", first.getDimSize(d));
    shape[dim] += type.getDimSize(dim);
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  return {};
}

/// Mapping of concat/split: every dimension but `dim` is one parallel factor
/// shared by all pieces and the whole; along `dim` the whole and each piece
/// have their own factor (pieces are Whole on the input side).
static DimensionMapping getPiecesMapping(RankedTensorType whole,
                                         ValueRange pieces, int64_t dim,
                                         bool piecesAreOperands) {
  DimensionMapping mapping;
  SmallVector<unsigned> shared;
  for (auto [d, size] : llvm::enumerate(whole.getShape()))
    shared.push_back(
        (int64_t)d == dim ? 0 : mapping.addFactor(size, FactorKind::Parallel));
  auto dimsWith = [&](unsigned along) {
    ValueFactors dims;
    for (int64_t d = 0; d < whole.getRank(); ++d)
      dims.push_back({d == dim ? along : shared[d]});
    return dims;
  };
  FactorKind wholeKind =
      piecesAreOperands ? FactorKind::Parallel : FactorKind::Whole;
  FactorKind pieceKind =
      piecesAreOperands ? FactorKind::Whole : FactorKind::Parallel;
  unsigned wholeFactor = mapping.addFactor(whole.getDimSize(dim), wholeKind);
  SmallVector<ValueFactors> pieceDims;
  for (Value piece : pieces)
    pieceDims.push_back(dimsWith(
        mapping.addFactor(tensorTypeOf(piece).getDimSize(dim), pieceKind)));
  if (piecesAreOperands) {
    for (ValueFactors &dims : pieceDims)
      mapping.addOperand(std::move(dims));
    mapping.addResult(dimsWith(wholeFactor));
  } else {
    mapping.addOperand(dimsWith(wholeFactor));
    for (ValueFactors &dims : pieceDims)
      mapping.addResult(std::move(dims));
  }
  return mapping;
}

DimensionMapping ConcatOp::getDimensionMapping() {
  return getPiecesMapping(getResult().getType(), getInputs(), getDim(),
                          /*piecesAreOperands=*/true);
}

LogicalResult SplitOp::verify() {
  auto input = getInput().getType();
  int64_t dim = getDim();
  if (dim < 0 || dim >= input.getRank())
    return emitOpError("dimension ")
           << dim << " is out of range for rank " << input.getRank();
  if (getResults().empty())
    return emitOpError("expects at least one result");
  int64_t total = 0;
  for (auto [i, result] : llvm::enumerate(getResults())) {
    auto type = tensorTypeOf(result);
    if (type.getElementType() != input.getElementType() ||
        type.getRank() != input.getRank())
      return emitOpError("result #") << i << " has type " << type
                                     << ", incompatible with input " << input;
    for (int64_t d = 0; d < input.getRank(); ++d)
      if (d != dim && type.getDimSize(d) != input.getDimSize(d))
        return emitOpError("result #")
               << i << " has size " << type.getDimSize(d) << " in dimension "
               << d << " where the input has " << input.getDimSize(d);
    total += type.getDimSize(dim);
  }
  if (total != input.getDimSize(dim))
    return emitOpError("pieces add up to ")
           << total << " along dimension " << dim << " but the input has "
           << input.getDimSize(dim);
  return success();
}

DimensionMapping SplitOp::getDimensionMapping() {
  return getPiecesMapping(getInput().getType(), getResults(), getDim(),
                          /*piecesAreOperands=*/false);
}

LogicalResult BroadcastToOp::verify() {
  auto input = getInput().getType(), result = getResult().getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("changes the element type from ")
           << input.getElementType() << " to " << result.getElementType();
  if (!broadcastsTo(input.getShape(), result.getShape()))
    return emitOpError("input shape ")
           << shapeString(input.getShape()) << " does not broadcast to "
           << shapeString(result.getShape());
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getInput()))
    return SplatElementsAttr::get(getResult().getType(),
                                  splat.getSplatValue<Attribute>());
  return {};
}

DimensionMapping BroadcastToOp::getDimensionMapping() {
  return getElementwiseMapping(*this);
}

//===----------------------------------------------------------------------===//
// Constant
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

void ConstantOp::getAsmResultNames(
    function_ref<void(Value, StringRef)> setNameFn) {
  setNameFn(getResult(), "cst");
}

DimensionMapping ConstantOp::getDimensionMapping() {
  return getElementwiseMapping(*this);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Shared type inference of attention and attention_partial.
template <typename Adaptor>
static LogicalResult inferAttentionTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor, bool withLse,
                                         SmallVectorImpl<Type> &types) {
  auto q = tensorTypeOf(adaptor.getQuery()), k = tensorTypeOf(adaptor.getKey()),
       v = tensorTypeOf(adaptor.getValue());
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return emitOptionalError(location, "expects 4-D query [B, H, Sq, D], key ",
                             "[B, Hkv, Sk, D] and value [B, Hkv, Sk, Dv]");
  if (q.getElementType() != k.getElementType() ||
      q.getElementType() != v.getElementType())
    return emitOptionalError(location, "query, key and value have different ",
                             "element types");
  int64_t batch = q.getDimSize(0), heads = q.getDimSize(1),
          kvHeads = k.getDimSize(1), sq = q.getDimSize(2), sk = k.getDimSize(2);
  if (k.getDimSize(0) != batch || v.getDimSize(0) != batch)
    return emitOptionalError(location, "batch sizes differ: query ", batch,
                             ", key ", k.getDimSize(0), ", value ",
                             v.getDimSize(0));
  if (v.getDimSize(1) != kvHeads || v.getDimSize(2) != sk)
    return emitOptionalError(location, "key ", shapeString(k.getShape()),
                             " and value ", shapeString(v.getShape()),
                             " differ in heads or sequence length");
  if (kvHeads < 1 || heads % kvHeads != 0)
    return emitOptionalError(location, "query heads (", heads,
                             ") are not a multiple of key/value heads (",
                             kvHeads, ")");
  if (q.getDimSize(3) != k.getDimSize(3))
    return emitOptionalError(location, "query head size ", q.getDimSize(3),
                             " differs from key head size ", k.getDimSize(3));
  if (Value mask = adaptor.getMask()) {
    auto maskType = tensorTypeOf(mask);
    if (!maskType.getElementType().isInteger(1) &&
        maskType.getElementType() != q.getElementType())
      return emitOptionalError(location, "mask must be i1 or ",
                               q.getElementType(), ", got ",
                               maskType.getElementType());
    int64_t scores[] = {batch, heads, sq, sk};
    if (!broadcastsTo(maskType.getShape(), scores))
      return emitOptionalError(
          location, "mask shape ", shapeString(maskType.getShape()),
          " does not broadcast to the scores ", shapeString(scores));
  }
  if (adaptor.getCausalOffset() && !adaptor.getCausal())
    return emitOptionalError(location, "an offset needs `causal`");
  types.push_back(RankedTensorType::get({batch, heads, sq, v.getDimSize(3)},
                                        q.getElementType()));
  if (withLse)
    types.push_back(
        RankedTensorType::get({batch, heads, sq}, Float32Type::get(context)));
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferAttentionTypes(context, location, adaptor, /*withLse=*/false,
                             types);
}

LogicalResult AttentionPartialOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferAttentionTypes(context, location, adaptor, /*withLse=*/true,
                             types);
}

/// Factor mapping shared by attention and attention_partial: batch, key/value
/// heads times the query-group size, query sequence and value width are
/// parallel; the key sequence is a causal prefix of the query sequence (or
/// whole without `causal`); the head size is whole (scores need all of it
/// before the softmax).
template <typename OpTy> static DimensionMapping getAttentionMapping(OpTy op) {
  DimensionMapping mapping;
  auto q = op.getQuery().getType(), k = op.getKey().getType(),
       v = op.getValue().getType();
  unsigned b = mapping.addFactor(q.getDimSize(0), FactorKind::Parallel);
  unsigned hkv = mapping.addFactor(k.getDimSize(1), FactorKind::Parallel);
  unsigned g = mapping.addFactor(q.getDimSize(1) / k.getDimSize(1),
                                 FactorKind::Parallel);
  unsigned sq = mapping.addFactor(q.getDimSize(2), FactorKind::Parallel);
  unsigned sk =
      op.getCausal()
          ? mapping.addFactor(k.getDimSize(2), FactorKind::CausalPrefix,
                              std::nullopt, sq)
          : mapping.addFactor(k.getDimSize(2), FactorKind::Whole);
  unsigned d = mapping.addFactor(q.getDimSize(3), FactorKind::Whole);
  unsigned dv = mapping.addFactor(v.getDimSize(3), FactorKind::Parallel);
  DimFactors heads{hkv, g};
  mapping.addOperand({{b}, heads, {sq}, {d}});
  mapping.addOperand({{b}, {hkv}, {sk}, {d}});
  mapping.addOperand({{b}, {hkv}, {sk}, {dv}});
  if (Value mask = op.getMask()) {
    auto maskType = tensorTypeOf(mask);
    int64_t scores[] = {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2),
                        k.getDimSize(2)};
    DimFactors scoreFactors[] = {{b}, heads, {sq}, {sk}};
    ValueFactors dims;
    int64_t offset = 4 - maskType.getRank();
    for (int64_t i = 0; i < maskType.getRank(); ++i)
      dims.push_back(maskType.getDimSize(i) == scores[i + offset]
                         ? scoreFactors[i + offset]
                         : DimFactors{});
    mapping.addOperand(std::move(dims));
  }
  if (op.getCausalOffset())
    mapping.addOperand({});
  mapping.addResult({{b}, heads, {sq}, {dv}});
  if (op->getNumResults() == 2)
    mapping.addResult({{b}, heads, {sq}});
  return mapping;
}

/// (query, key) pairs left by a causal mask with the given offset: query i
/// sees keys 0..i+offset.
static int64_t countCausalPairs(int64_t sq, int64_t sk, int64_t offset) {
  int64_t pairs = 0;
  for (int64_t i = 0; i < sq; ++i)
    pairs += std::clamp<int64_t>(i + offset + 1, 0, sk);
  return pairs;
}

template <typename OpTy> static int64_t getAttentionScoredPairs(OpTy op) {
  int64_t sq = op.getQuery().getType().getDimSize(2),
          sk = op.getKey().getType().getDimSize(2);
  if (!op.getCausal())
    return sq * sk;
  int64_t offset = sk - sq;
  if (Value dynamicOffset = op.getCausalOffset()) {
    APInt constant;
    if (!matchPattern(dynamicOffset, m_ConstantInt(&constant)))
      return sq * sk;
    offset = constant.getSExtValue();
  }
  return countCausalPairs(sq, sk, offset);
}

/// Per scored pair: a dot product of D (2D flops), five for the softmax, and
/// an accumulation of Dv (2Dv flops); per batch and query head.
template <typename OpTy> static int64_t getAttentionFlops(OpTy op) {
  auto q = op.getQuery().getType();
  int64_t dv = op.getValue().getType().getDimSize(3);
  return q.getDimSize(0) * q.getDimSize(1) * op.getNumScoredPairs() *
         (2 * q.getDimSize(3) + 5 + 2 * dv);
}

/// Moves the causal diagonal of `op` when it computes only the queries from
/// `offset` on; the key and query sizes come from the op's mapping before
/// the rewrite, so that its types may already be per-rank.
/// Whether `factor` is the query sequence of causal attention, whose blocks
/// must know where they start.
template <typename OpTy>
static bool isCausalQueryFactor(OpTy op, const DimensionMapping &mapping,
                                unsigned factor) {
  const ValueFactors &query = mapping.getOperands()[0];
  return op.getCausal() && !query[2].empty() && query[2].front() == factor;
}

template <typename OpTy>
static LogicalResult restrictAttentionToBlock(OpTy op, OpBuilder &builder,
                                              const DimensionMapping &mapping,
                                              const FactorBlock &block) {
  if (!isCausalQueryFactor(op, mapping, block.factor))
    return success();
  const ValueFactors &key = mapping.getOperands()[1];
  if (key[2].empty() || !block.offset)
    return failure();
  unsigned factor = block.factor;
  Value offset = block.offset;
  Value base = op.getCausalOffset();
  Location loc = op.getLoc();
  builder.setInsertionPoint(op);
  if (!base)
    base = arith::ConstantIndexOp::create(
        builder, loc,
        mapping.getFactors()[key[2].front()].size -
            mapping.getFactors()[factor].size);
  std::optional<int64_t> constantBase = getConstantIntValue(base);
  std::optional<int64_t> constantOffset = getConstantIntValue(offset);
  Value shifted;
  if (constantBase && constantOffset) {
    shifted = arith::ConstantIndexOp::create(builder, loc,
                                             *constantBase + *constantOffset);
    if (base.use_empty())
      base.getDefiningOp()->erase();
  } else {
    shifted = arith::AddIOp::create(builder, loc, base, offset);
  }
  op.getCausalOffsetMutable().assign(shifted);
  return success();
}

DimensionMapping AttentionOp::getDimensionMapping() {
  return getAttentionMapping(*this);
}
int64_t AttentionOp::getNumScoredPairs() {
  return getAttentionScoredPairs(*this);
}
int64_t AttentionOp::getFlops() { return getAttentionFlops(*this); }
LogicalResult AttentionOp::restrictToBlock(OpBuilder &builder,
                                           const DimensionMapping &mapping,
                                           const FactorBlock &block) {
  return restrictAttentionToBlock(*this, builder, mapping, block);
}
bool AttentionOp::canComputeBlock(const DimensionMapping &mapping,
                                  unsigned factor, int64_t within) {
  return within == 1 || !isCausalQueryFactor(*this, mapping, factor);
}

DimensionMapping AttentionPartialOp::getDimensionMapping() {
  return getAttentionMapping(*this);
}
int64_t AttentionPartialOp::getNumScoredPairs() {
  return getAttentionScoredPairs(*this);
}
int64_t AttentionPartialOp::getFlops() { return getAttentionFlops(*this); }
LogicalResult AttentionPartialOp::restrictToBlock(
    OpBuilder &builder, const DimensionMapping &mapping,
    const FactorBlock &block) {
  return restrictAttentionToBlock(*this, builder, mapping, block);
}
bool AttentionPartialOp::canComputeBlock(const DimensionMapping &mapping,
                                         unsigned factor, int64_t within) {
  return within == 1 || !isCausalQueryFactor(*this, mapping, factor);
}

LogicalResult AttentionMergeOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  ValueRange outputs = adaptor.getOutputs(), lses = adaptor.getLses();
  if (outputs.empty() || outputs.size() != lses.size())
    return emitOptionalError(location, "expects as many partial outputs as ",
                             "log-sum-exps, at least one; got ", outputs.size(),
                             " and ", lses.size());
  auto outType = tensorTypeOf(outputs.front());
  auto lseType = tensorTypeOf(lses.front());
  if (outType.getRank() != 4 ||
      lseType.getShape() != outType.getShape().drop_back())
    return emitOptionalError(location, "expects outputs [B, H, S, Dv] and ",
                             "log-sum-exps [B, H, S], got ",
                             shapeString(outType.getShape()), " and ",
                             shapeString(lseType.getShape()));
  for (Value output : outputs)
    if (output.getType() != outType)
      return emitOptionalError(location, "partial outputs have different ",
                               "types: ", outType, " and ", output.getType());
  for (Value lse : lses)
    if (lse.getType() != lseType)
      return emitOptionalError(location,
                               "log-sum-exps have different types: ", lseType,
                               " and ", lse.getType());
  types.push_back(outType);
  types.push_back(lseType);
  return success();
}

DimensionMapping AttentionMergeOp::getDimensionMapping() {
  DimensionMapping mapping;
  SmallVector<unsigned> f =
      addParallelFactors(mapping, getResult().getType().getShape());
  ValueFactors out{{f[0]}, {f[1]}, {f[2]}, {f[3]}}, lse{{f[0]}, {f[1]}, {f[2]}};
  for (size_t i = 0; i < getOutputs().size(); ++i)
    mapping.addOperand(out);
  for (size_t i = 0; i < getLses().size(); ++i)
    mapping.addOperand(lse);
  mapping.addResult(out);
  mapping.addResult(lse);
  return mapping;
}

/// Per partial: exp, multiply and add per output element; exp and add per
/// log-sum-exp element, plus the final log.
int64_t AttentionMergeOp::getFlops() {
  int64_t n = getOutputs().size();
  return 3 * n * getNumElements(getResult()) +
         (2 * n + 1) * getNumElements(getLse());
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult RouterTopKOp::inferReturnTypes(MLIRContext *context,
                                             std::optional<Location> location,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  auto logits = tensorTypeOf(adaptor.getLogits());
  if (logits.getRank() != 2)
    return emitOptionalError(location, "expects logits [tokens, experts], got ",
                             shapeString(logits.getShape()));
  int64_t k = adaptor.getK();
  if (k < 1 || k > logits.getDimSize(1))
    return emitOptionalError(location, "k = ", k, " must be in [1, ",
                             logits.getDimSize(1), "]");
  types.push_back(RankedTensorType::get({logits.getDimSize(0), k},
                                        logits.getElementType()));
  types.push_back(RankedTensorType::get({logits.getDimSize(0), k},
                                        IntegerType::get(context, 64)));
  return success();
}

DimensionMapping RouterTopKOp::getDimensionMapping() {
  DimensionMapping mapping;
  auto logits = getLogits().getType();
  unsigned t = mapping.addFactor(logits.getDimSize(0), FactorKind::Parallel);
  unsigned e = mapping.addFactor(logits.getDimSize(1), FactorKind::Whole);
  unsigned k = mapping.addFactor(getK(), FactorKind::Parallel);
  mapping.addOperand({{t}, {e}});
  mapping.addResult({{t}, {k}});
  mapping.addResult({{t}, {k}});
  return mapping;
}

LogicalResult MoeDispatchOp::verify() {
  auto input = getInput().getType(), experts = getExperts().getType(),
       result = getResult().getType();
  if (input.getRank() != 2 || experts.getRank() != 2 || result.getRank() != 3)
    return emitOpError("expects input [T, H], experts [T, k] and result "
                       "[E, C, H]");
  if (experts.getDimSize(0) != input.getDimSize(0))
    return emitOpError("input has ")
           << input.getDimSize(0) << " tokens but experts has "
           << experts.getDimSize(0);
  if (result.getDimSize(2) != input.getDimSize(1))
    return emitOpError("result rows of ")
           << result.getDimSize(2) << " elements cannot hold input rows of "
           << input.getDimSize(1);
  if (result.getElementType() != input.getElementType())
    return emitOpError("result element type ")
           << result.getElementType() << " differs from input element type "
           << input.getElementType();
  return success();
}

/// Whether routing `experts [T, k]` into `capacity` slots per expert can
/// never drop a pair, for every block of tokens: true when the capacity holds
/// every pair, or holds every token and the experts of a token are distinct
/// (top-k routing), also read as one (token, choice) pair per row (a
/// reshape of top-k's [T, k] choices, as the gradients read them: an expert
/// still gets at most one pair per token).
static bool neverDropsPairs(Value experts, int64_t capacity) {
  auto type = cast<RankedTensorType>(experts.getType());
  int64_t tokens = type.getDimSize(0), choices = type.getDimSize(1);
  if (capacity >= tokens * choices)
    return true;
  Value chosen = experts;
  while (auto reshape = chosen.getDefiningOp<ReshapeOp>())
    chosen = reshape.getInput();
  return chosen.getDefiningOp<RouterTopKOp>() &&
         capacity >= cast<RankedTensorType>(chosen.getType()).getDimSize(0);
}

DimensionMapping MoeDispatchOp::getDimensionMapping() {
  DimensionMapping mapping;
  auto input = getInput().getType(), result = getResult().getType();
  unsigned e = mapping.addFactor(result.getDimSize(0), FactorKind::Parallel);
  unsigned c = mapping.addFactor(result.getDimSize(1), FactorKind::Parallel);
  // A block of tokens fills a block of slots (in its own order) only when
  // no pair is ever dropped for capacity.
  unsigned t =
      neverDropsPairs(getExperts(), result.getDimSize(1))
          ? mapping.addRoutedFactor(input.getDimSize(0), c, /*routedBy=*/1)
          : mapping.addFactor(input.getDimSize(0), FactorKind::Whole);
  unsigned h = mapping.addFactor(input.getDimSize(1), FactorKind::Parallel);
  unsigned k = mapping.addFactor(getExperts().getType().getDimSize(1),
                                 FactorKind::Whole);
  mapping.addOperand({{t}, {h}});
  mapping.addOperand({{t}, {k}});
  mapping.addResult({{e}, {c}, {h}});
  return mapping;
}

LogicalResult MoeCombineOp::verify() {
  auto input = getInput().getType(), experts = getExperts().getType(),
       weights = getWeights().getType(), result = getResult().getType();
  if (input.getRank() != 3 || experts.getRank() != 2 || result.getRank() != 2)
    return emitOpError("expects input [E, C, H], experts and weights [T, k], "
                       "and result [T, H]");
  if (weights.getShape() != experts.getShape())
    return emitOpError("weights shape ")
           << shapeString(weights.getShape()) << " differs from experts shape "
           << shapeString(experts.getShape());
  if (result.getDimSize(0) != experts.getDimSize(0) ||
      result.getDimSize(1) != input.getDimSize(2))
    return emitOpError("result ")
           << shapeString(result.getShape()) << " must be [T, H] = ["
           << experts.getDimSize(0) << ", " << input.getDimSize(2) << "]";
  if (result.getElementType() != input.getElementType() ||
      weights.getElementType() != input.getElementType())
    return emitOpError("input, weights and result must share an element type");
  return success();
}

DimensionMapping MoeCombineOp::getDimensionMapping() {
  DimensionMapping mapping;
  auto input = getInput().getType();
  auto experts = getExperts().getType();
  unsigned e = mapping.addFactor(input.getDimSize(0), FactorKind::Whole);
  unsigned c = mapping.addFactor(input.getDimSize(1), FactorKind::Whole);
  unsigned h = mapping.addFactor(input.getDimSize(2), FactorKind::Parallel);
  // The slot of a (token, choice) pair depends on every earlier token's
  // routing: a block of tokens can be combined alone only from slots that
  // the same block of tokens filled (routed), and only when no pair was
  // dropped; otherwise tokens are whole.
  unsigned t =
      neverDropsPairs(getExperts(), input.getDimSize(1))
          ? mapping.addRoutedFactor(experts.getDimSize(0), c, /*routedBy=*/1)
          : mapping.addFactor(experts.getDimSize(0), FactorKind::Whole);
  unsigned k = mapping.addFactor(experts.getDimSize(1), FactorKind::Whole);
  mapping.addOperand({{e}, {c}, {h}});
  mapping.addOperand({{t}, {k}});
  mapping.addOperand({{t}, {k}});
  mapping.addResult({{t}, {h}});
  return mapping;
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *context,
                                               std::optional<Location> location,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  auto logits = tensorTypeOf(adaptor.getLogits());
  auto labels = tensorTypeOf(adaptor.getLabels());
  if (logits.getRank() < 1)
    return emitOptionalError(location, "logits need a class dimension, got a ",
                             "scalar");
  if (labels.getShape() != logits.getShape().drop_back())
    return emitOptionalError(
        location, "labels shape ", shapeString(labels.getShape()),
        " must be the logits shape ", shapeString(logits.getShape()),
        " without its class dimension");
  if (adaptor.getReduction() == LossReduction::None)
    types.push_back(
        RankedTensorType::get(labels.getShape(), logits.getElementType()));
  else
    types.push_back(RankedTensorType::get({}, logits.getElementType()));
  return success();
}

DimensionMapping CrossEntropyOp::getDimensionMapping() {
  DimensionMapping mapping;
  auto logits = getLogits().getType();
  bool keepSamples = getReduction() == LossReduction::None;
  ReductionKind combiner = getReduction() == LossReduction::Mean
                               ? ReductionKind::Avg
                               : ReductionKind::Sum;
  ValueFactors samples;
  for (int64_t size : logits.getShape().drop_back())
    samples.push_back(
        {keepSamples
             ? mapping.addFactor(size, FactorKind::Parallel)
             : mapping.addFactor(size, FactorKind::Reduction, combiner)});
  ValueFactors logitDims = samples;
  logitDims.push_back(
      {mapping.addFactor(logits.getShape().back(), FactorKind::Whole)});
  mapping.addOperand(std::move(logitDims));
  mapping.addOperand(samples);
  mapping.addResult(keepSamples ? samples : ValueFactors{});
  return mapping;
}

//===----------------------------------------------------------------------===//
// Generated definitions
//===----------------------------------------------------------------------===//

/// Parses `dp = 2, tp = 4` into axis names and sizes.
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &names,
                                 DenseI64ArrayAttr &shape) {
  SmallVector<Attribute> axisNames;
  SmallVector<int64_t> sizes;
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size = 0;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    axisNames.push_back(parser.getBuilder().getStringAttr(name));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(parseAxis))
    return failure();
  names = parser.getBuilder().getArrayAttr(axisNames);
  shape = parser.getBuilder().getDenseI64ArrayAttr(sizes);
  return success();
}

static void printMeshAxes(OpAsmPrinter &printer, Operation *, ArrayAttr names,
                          DenseI64ArrayAttr shape) {
  llvm::interleaveComma(llvm::zip(names, shape.asArrayRef()), printer,
                        [&](auto axis) {
                          printer.printKeywordOrString(
                              cast<StringAttr>(std::get<0>(axis)).getValue());
                          printer << " = " << std::get<1>(axis);
                        });
}

#define GET_OP_CLASSES
#include "dialects/braid/BraidOps.cpp.inc"
