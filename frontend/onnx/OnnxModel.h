//===- OnnxModel.h - reading ONNX files and tensors --------------*- C++
//-*-===//

#ifndef BRAID_FRONTEND_ONNX_ONNXMODEL_H
#define BRAID_FRONTEND_ONNX_ONNXMODEL_H

#include "frontend/onnx/HostTensor.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace mlir {
namespace braid {
namespace onnx_import {

/// Reads an ONNX model: binary protobuf, or ONNX text syntax when the file
/// ends in `.onnxtxt` or is not binary protobuf but parses as text. Errors
/// name the file and what is wrong with it.
llvm::Expected<std::unique_ptr<onnx::ModelProto>>
loadModel(llvm::StringRef path);

/// Parses a model from a buffer (binary protobuf or ONNX text); `name` is
/// used in diagnostics.
llvm::Expected<std::unique_ptr<onnx::ModelProto>>
parseModel(llvm::StringRef buffer, llvm::StringRef name);

/// A tensor's elements as little-endian bytes in its ONNX element type.
struct RawTensor {
  int32_t type = kUndefined;
  llvm::SmallVector<int64_t, 4> shape;
  std::string bytes;

  int64_t numElements() const;
};

/// Reads the data of an initializer or constant, from its typed fields, its
/// raw_data, or an external data file relative to `modelDir`.
llvm::Expected<RawTensor> readTensor(const onnx::TensorProto &tensor,
                                     llvm::StringRef modelDir);

/// Converts raw bytes to a host tensor (fails for strings).
llvm::Expected<HostTensor> toHost(const RawTensor &raw);

/// Encodes a host tensor as little-endian bytes of its element type (the
/// inverse of toHost); fails for types without a fixed size.
llvm::Expected<RawTensor> fromHost(const HostTensor &value);

/// Transposes raw elements by `perm` (a permutation of the dimensions).
RawTensor transpose(const RawTensor &raw, llvm::ArrayRef<int64_t> perm);

} // namespace onnx_import
} // namespace braid
} // namespace mlir

#endif // BRAID_FRONTEND_ONNX_ONNXMODEL_H
