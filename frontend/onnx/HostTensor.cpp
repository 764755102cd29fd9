//===- HostTensor.cpp - constants evaluated at import time ----------------===//

#include "frontend/onnx/HostTensor.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/MathExtras.h"

#include <climits>
#include <cmath>

using namespace mlir::braid::onnx_import;
using llvm::ArrayRef;
using llvm::SmallVector;

std::string mlir::braid::onnx_import::onnxTypeName(int32_t type) {
  switch (type) {
  case kFloat:
    return "FLOAT";
  case kUint8:
    return "UINT8";
  case kInt8:
    return "INT8";
  case kUint16:
    return "UINT16";
  case kInt16:
    return "INT16";
  case kInt32:
    return "INT32";
  case kInt64:
    return "INT64";
  case kString:
    return "STRING";
  case kBool:
    return "BOOL";
  case kFloat16:
    return "FLOAT16";
  case kDouble:
    return "DOUBLE";
  case kUint32:
    return "UINT32";
  case kUint64:
    return "UINT64";
  case kBFloat16:
    return "BFLOAT16";
  default:
    return "type #" + std::to_string(type);
  }
}

bool mlir::braid::onnx_import::isFloatType(int32_t type) {
  return type == kFloat || type == kFloat16 || type == kDouble ||
         type == kBFloat16;
}

int64_t mlir::braid::onnx_import::onnxTypeSize(int32_t type) {
  switch (type) {
  case kUint8:
  case kInt8:
  case kBool:
    return 1;
  case kUint16:
  case kInt16:
  case kFloat16:
  case kBFloat16:
    return 2;
  case kFloat:
  case kInt32:
  case kUint32:
    return 4;
  case kInt64:
  case kDouble:
  case kUint64:
    return 8;
  default:
    return 0;
  }
}

int64_t HostTensor::numElements() const {
  return checkedNumElements(shape).value_or(INT64_MAX);
}

std::optional<int64_t>
mlir::braid::onnx_import::checkedNumElements(ArrayRef<int64_t> shape) {
  // The product of the non-zero sizes must fit too, even when a zero makes
  // the tensor empty: kernels multiply partial products (the sizes before or
  // after an axis), which would overflow for [0, 2^62, 4].
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (n > INT64_MAX / d)
      return std::nullopt;
    n *= d;
  }
  return empty ? 0 : n;
}

double HostTensor::getDouble(int64_t i) const {
  return isFloat() ? floats[i] : static_cast<double>(ints[i]);
}

int64_t HostTensor::getInt(int64_t i) const {
  return isFloat() ? saturatingInt(floats[i]) : ints[i];
}

int64_t mlir::braid::onnx_import::saturatingInt(double v) {
  double t = std::trunc(v);
  return std::isnan(t)                 ? 0
         : t >= 9.2233720368547758e18  ? INT64_MAX
         : t <= -9.2233720368547758e18 ? INT64_MIN
                                       : static_cast<int64_t>(t);
}

/// Rounds `v` to a float of semantics `sem`.
static double roundTo(double v, const llvm::fltSemantics &sem) {
  llvm::APFloat f(v);
  bool losesInfo;
  f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &losesInfo);
  return f.convertToDouble();
}

void mlir::braid::onnx_import::normalizeElements(HostTensor &t) {
  switch (t.type) {
  case kFloat:
    for (double &v : t.floats)
      v = static_cast<float>(v);
    return;
  case kFloat16:
  case kBFloat16:
    for (double &v : t.floats)
      v = roundTo(v, t.type == kFloat16 ? llvm::APFloat::IEEEhalf()
                                        : llvm::APFloat::BFloat());
    return;
  case kBool:
    for (int64_t &v : t.ints)
      v = v != 0;
    return;
  default:
    break;
  }
  unsigned bits = 8 * onnxTypeSize(t.type);
  if (t.isFloat() || bits == 0 || bits == 64)
    return;
  bool isSigned = t.type == kInt8 || t.type == kInt16 || t.type == kInt32;
  for (int64_t &v : t.ints) {
    uint64_t low = static_cast<uint64_t>(v) & ((uint64_t(1) << bits) - 1);
    v = isSigned ? llvm::SignExtend64(low, bits) : static_cast<int64_t>(low);
  }
}

HostTensor HostTensor::ints1D(ArrayRef<int64_t> values) {
  HostTensor t;
  t.type = kInt64;
  t.shape = {static_cast<int64_t>(values.size())};
  t.ints.assign(values.begin(), values.end());
  return t;
}

HostTensor HostTensor::scalarInt(int64_t value, int32_t type) {
  HostTensor t;
  t.type = type;
  t.ints = {value};
  return t;
}

HostTensor HostTensor::filled(int32_t type, ArrayRef<int64_t> shape,
                              double value) {
  HostTensor t;
  t.type = type;
  t.shape.assign(shape.begin(), shape.end());
  if (t.isFloat())
    t.floats.assign(t.numElements(), value);
  else
    t.ints.assign(t.numElements(), static_cast<int64_t>(value));
  return t;
}

std::optional<SmallVector<int64_t, 4>>
mlir::braid::onnx_import::broadcastShapes(ArrayRef<int64_t> a,
                                          ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t, 4> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

SmallVector<int64_t, 4>
mlir::braid::onnx_import::rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t, 4> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Index into a tensor of `shape` broadcast to `outShape`, for the output
/// element with multi-index `index`.
static int64_t broadcastIndex(ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> outShape,
                              ArrayRef<int64_t> index) {
  int64_t offset = outShape.size() - shape.size();
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + (shape[d] == 1 ? 0 : index[d + offset]);
  return flat;
}

/// Calls `fn(flatOut, multiIndex)` for every element of `shape`.
static void
forEachIndex(ArrayRef<int64_t> shape,
             const std::function<void(int64_t, ArrayRef<int64_t>)> &fn) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  SmallVector<int64_t, 4> index(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    fn(flat, index);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

std::optional<HostTensor> mlir::braid::onnx_import::broadcastBinary(
    const HostTensor &a, const HostTensor &b, int32_t resultType,
    const std::function<double(double, double)> &floatFn,
    const std::function<int64_t(int64_t, int64_t)> &intFn) {
  std::optional<SmallVector<int64_t, 4>> shape =
      broadcastShapes(a.shape, b.shape);
  if (!shape)
    return std::nullopt;
  HostTensor out;
  out.type = resultType;
  out.shape = *shape;
  bool floating = a.isFloat() || b.isFloat();
  int64_t n = out.numElements();
  if (out.isFloat())
    out.floats.resize(n);
  else
    out.ints.resize(n);
  forEachIndex(*shape, [&](int64_t flat, ArrayRef<int64_t> index) {
    int64_t ia = broadcastIndex(a.shape, *shape, index);
    int64_t ib = broadcastIndex(b.shape, *shape, index);
    if (floating) {
      double v = floatFn(a.getDouble(ia), b.getDouble(ib));
      if (out.isFloat())
        out.floats[flat] = v;
      else
        out.ints[flat] = saturatingInt(v);
    } else {
      int64_t v = intFn(a.ints[ia], b.ints[ib]);
      if (out.isFloat())
        out.floats[flat] = static_cast<double>(v);
      else
        out.ints[flat] = v;
    }
  });
  return out;
}

HostTensor mlir::braid::onnx_import::castTo(const HostTensor &t, int32_t type) {
  HostTensor out;
  out.type = type;
  out.shape = t.shape;
  int64_t n = t.numElements();
  if (isFloatType(type)) {
    out.floats.resize(n);
    for (int64_t i = 0; i < n; ++i)
      out.floats[i] = t.getDouble(i);
  } else {
    out.ints.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      if (type == kBool)
        out.ints[i] = t.getDouble(i) != 0.0;
      else
        out.ints[i] = t.getInt(i);
    }
  }
  normalizeElements(out);
  return out;
}

static HostTensor emptyLike(const HostTensor &t, ArrayRef<int64_t> shape) {
  HostTensor out;
  out.type = t.type;
  out.shape.assign(shape.begin(), shape.end());
  if (out.isFloat())
    out.floats.resize(out.numElements());
  else
    out.ints.resize(out.numElements());
  return out;
}

std::optional<HostTensor>
mlir::braid::onnx_import::gather(const HostTensor &data,
                                 const HostTensor &indices, int64_t axis) {
  SmallVector<int64_t, 4> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.append(indices.shape.begin(), indices.shape.end());
  shape.append(data.shape.begin() + axis + 1, data.shape.end());
  HostTensor out = emptyLike(data, shape);
  int64_t outer = 1, inner = 1, size = data.shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= data.shape[d];
  for (size_t d = axis + 1; d < data.shape.size(); ++d)
    inner *= data.shape[d];
  int64_t numIndices = indices.numElements();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < numIndices; ++k) {
      int64_t idx = indices.getInt(k);
      if (idx < 0)
        idx += size;
      if (idx < 0 || idx >= size)
        return std::nullopt;
      for (int64_t i = 0; i < inner; ++i)
        out.copyElement((o * numIndices + k) * inner + i, data,
                        (o * size + idx) * inner + i);
    }
  return out;
}

HostTensor mlir::braid::onnx_import::concat(ArrayRef<const HostTensor *> inputs,
                                            int64_t axis) {
  SmallVector<int64_t, 4> shape = inputs.front()->shape;
  shape[axis] = 0;
  for (const HostTensor *t : inputs)
    shape[axis] += t->shape[axis];
  HostTensor out = emptyLike(*inputs.front(), shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  int64_t pos = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor *t : inputs) {
      int64_t chunk = t->shape[axis] * inner;
      for (int64_t i = 0; i < chunk; ++i)
        out.copyElement(pos++, *t, o * chunk + i);
    }
  return out;
}

HostTensor mlir::braid::onnx_import::transpose(const HostTensor &t,
                                               ArrayRef<int64_t> perm) {
  SmallVector<int64_t, 4> shape;
  for (int64_t p : perm)
    shape.push_back(t.shape[p]);
  HostTensor out = emptyLike(t, shape);
  SmallVector<int64_t, 4> inStrides = rowMajorStrides(t.shape);
  forEachIndex(shape, [&](int64_t flat, ArrayRef<int64_t> index) {
    int64_t from = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      from += index[d] * inStrides[perm[d]];
    out.copyElement(flat, t, from);
  });
  return out;
}

HostTensor mlir::braid::onnx_import::slice(const HostTensor &t,
                                           ArrayRef<int64_t> starts,
                                           ArrayRef<int64_t> sizes,
                                           ArrayRef<int64_t> steps) {
  HostTensor out = emptyLike(t, sizes);
  SmallVector<int64_t, 4> inStrides = rowMajorStrides(t.shape);
  forEachIndex(sizes, [&](int64_t flat, ArrayRef<int64_t> index) {
    int64_t from = 0;
    for (size_t d = 0; d < sizes.size(); ++d)
      from += (starts[d] + index[d] * steps[d]) * inStrides[d];
    out.copyElement(flat, t, from);
  });
  return out;
}

HostTensor mlir::braid::onnx_import::broadcastTo(const HostTensor &t,
                                                 ArrayRef<int64_t> shape) {
  HostTensor out = emptyLike(t, shape);
  forEachIndex(shape, [&](int64_t flat, ArrayRef<int64_t> index) {
    out.copyElement(flat, t, broadcastIndex(t.shape, shape, index));
  });
  return out;
}
