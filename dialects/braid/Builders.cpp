//===- Builders.cpp - small braid IR builders -----------------------------===//

#include "dialects/braid/Builders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <numeric>

using namespace mlir;
using namespace mlir::braid;

Value mlir::braid::sliceAlong(OpBuilder &b, Location loc, Value v, int64_t dim,
                              int64_t offset, int64_t size) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
      strides(type.getRank(), 1);
  offsets[dim] = offset;
  sizes[dim] = size;
  return SliceOp::create(b, loc,
                         RankedTensorType::get(sizes, type.getElementType()),
                         v, ValueRange{}, b.getDenseI64ArrayAttr(offsets),
                         b.getDenseI64ArrayAttr(sizes),
                         b.getDenseI64ArrayAttr(strides));
}

Value mlir::braid::groupIndex(OpBuilder &b, Location loc, MeshOp mesh,
                              ArrayRef<StringRef> axes) {
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  Value index;
  for (StringRef axis : axes) {
    Value r = RankOp::create(b, loc, meshRef, b.getStringAttr(axis));
    if (!index) {
      index = r;
      continue;
    }
    int64_t size = mesh.getGroupSize(b.getStrArrayAttr({axis}));
    index = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, index,
                              arith::ConstantIndexOp::create(b, loc, size)),
        r);
  }
  return index;
}

Value mlir::braid::sliceAlongAt(OpBuilder &b, Location loc, Value v,
                                int64_t dim, Value offset, int64_t size) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
      strides(type.getRank(), 1);
  offsets[dim] = ShapedType::kDynamic;
  sizes[dim] = size;
  return SliceOp::create(b, loc,
                         RankedTensorType::get(sizes, type.getElementType()),
                         v, ValueRange{offset}, b.getDenseI64ArrayAttr(offsets),
                         b.getDenseI64ArrayAttr(sizes),
                         b.getDenseI64ArrayAttr(strides));
}

/// A rank-0 constant of element type `elementType` holding `value`.
Value mlir::braid::scalarConstant(OpBuilder &b, Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element;
  if (auto floatType = dyn_cast<FloatType>(elementType))
    element = b.getFloatAttr(floatType, value);
  else
    element = b.getIntegerAttr(elementType, static_cast<int64_t>(value));
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, element));
}

/// `value` broadcast to `type` (a zero adjoint, a filled mask).
Value mlir::braid::filledTensor(OpBuilder &b, Location loc, RankedTensorType type, double value) {
  Value s = scalarConstant(b, loc, type.getElementType(), value);
  if (type.getRank() == 0)
    return s;
  return BroadcastToOp::create(b, loc, type, s);
}

Value mlir::braid::integerVector(OpBuilder &b, Location loc, Type elementType,
                                 ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({(int64_t)values.size()}, elementType);
  if (elementType.isInteger(64))
    return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, values));
  SmallVector<int32_t> narrow(values.begin(), values.end());
  return ConstantOp::create(b, loc, type,
                            DenseElementsAttr::get(type, ArrayRef(narrow)));
}

Value mlir::braid::oneHot(OpBuilder &b, Location loc, Value indices,
                          int64_t classes, Type elementType) {
  auto type = cast<RankedTensorType>(indices.getType());
  SmallVector<int64_t> iota(classes);
  std::iota(iota.begin(), iota.end(), 0);
  Value range = integerVector(b, loc, type.getElementType(), iota);
  SmallVector<int64_t> shape(type.getShape());
  shape.push_back(1);
  Value column = ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), indices);
  Value hit = CompareOp::create(
      b, loc, CompareKindAttr::get(b.getContext(), CompareKind::EQ), column,
      range);
  SmallVector<int64_t> resultShape(type.getShape());
  resultShape.push_back(classes);
  return CastOp::create(b, loc, RankedTensorType::get(resultShape, elementType),
                        hit);
}
