//===- HostTensor.h - constants evaluated at import time ---------*- C++
//-*-===//
//
// Small tensors the importer computes on the host: shape computations
// (Shape -> Gather -> Concat -> Reshape), causal masks built from Range and
// comparisons, and scalars. Values are kept as int64 for integer and boolean
// types and as double for floating types, with the ONNX element type.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_FRONTEND_ONNX_HOSTTENSOR_H
#define BRAID_FRONTEND_ONNX_HOSTTENSOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace braid {
namespace onnx_import {

/// ONNX element types (TensorProto.DataType values) the importer knows.
enum OnnxType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBFloat16 = 16,
};

/// Returns the ONNX name of an element type ("FLOAT", "INT64", ...).
std::string onnxTypeName(int32_t type);
/// Whether `type` is a floating-point type.
bool isFloatType(int32_t type);
/// Bytes per element of `type`, or 0 for types without a fixed size.
int64_t onnxTypeSize(int32_t type);

/// A tensor held on the host during import.
struct HostTensor {
  int32_t type = kUndefined;
  llvm::SmallVector<int64_t, 4> shape;
  /// Values of an integer or boolean tensor.
  std::vector<int64_t> ints;
  /// Values of a floating tensor.
  std::vector<double> floats;

  bool isFloat() const { return isFloatType(type); }
  int64_t numElements() const;
  /// Element `i` as a double / as an int64 (converting as C++ does).
  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
  /// Sets element `to` to element `from` of `src` (of the same kind).
  void copyElement(int64_t to, const HostTensor &src, int64_t from) {
    if (isFloat())
      floats[to] = src.floats[from];
    else
      ints[to] = src.ints[from];
  }

  /// Builders.
  static HostTensor ints1D(llvm::ArrayRef<int64_t> values);
  static HostTensor scalarInt(int64_t value, int32_t type = kInt64);
  static HostTensor filled(int32_t type, llvm::ArrayRef<int64_t> shape,
                           double value);
};

/// `v` truncated toward zero to an int64; out-of-range values saturate and NaN
/// gives 0 (instead of being undefined).
int64_t saturatingInt(double v);

/// Rounds floating elements to the precision of `t.type` (f32, f16, bf16)
/// and wraps integer elements to its width (two's complement; bool to 0/1),
/// as the type would hold them.
void normalizeElements(HostTensor &t);

/// Product of the dimensions, or std::nullopt for a negative one or when the
/// product of the non-zero ones overflows (even if a zero makes it 0).
std::optional<int64_t> checkedNumElements(llvm::ArrayRef<int64_t> shape);

/// Numpy broadcast of two shapes; std::nullopt if they do not broadcast.
std::optional<llvm::SmallVector<int64_t, 4>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Row-major strides of a shape.
llvm::SmallVector<int64_t, 4> rowMajorStrides(llvm::ArrayRef<int64_t> shape);

/// Applies `fn` elementwise with numpy broadcasting. The result has
/// `resultType`; `fn` sees both operands as doubles when either is floating,
/// otherwise as integers (through the int overload).
std::optional<HostTensor>
broadcastBinary(const HostTensor &a, const HostTensor &b, int32_t resultType,
                const std::function<double(double, double)> &floatFn,
                const std::function<int64_t(int64_t, int64_t)> &intFn);

/// Converts every element to `type` (float->int truncates toward zero,
/// anything->bool is `!= 0`).
HostTensor castTo(const HostTensor &t, int32_t type);

/// Gathers along `axis` (negative indices count from the end); std::nullopt
/// when an index is out of range.
std::optional<HostTensor> gather(const HostTensor &data,
                                 const HostTensor &indices, int64_t axis);

/// Concatenates along `axis`.
HostTensor concat(llvm::ArrayRef<const HostTensor *> inputs, int64_t axis);

/// Transposes by `perm`.
HostTensor transpose(const HostTensor &t, llvm::ArrayRef<int64_t> perm);

/// Strided slice with already-normalized starts and positive or negative
/// steps; `sizes` is the number of elements taken per dimension.
HostTensor slice(const HostTensor &t, llvm::ArrayRef<int64_t> starts,
                 llvm::ArrayRef<int64_t> sizes, llvm::ArrayRef<int64_t> steps);

/// Broadcasts `t` to `shape` (numpy rules, already checked).
HostTensor broadcastTo(const HostTensor &t, llvm::ArrayRef<int64_t> shape);

} // namespace onnx_import
} // namespace braid
} // namespace mlir

#endif // BRAID_FRONTEND_ONNX_HOSTTENSOR_H
