//===- Safetensors.h - writing .safetensors weight files ---------*- C++
//-*-===//

#ifndef BRAID_FRONTEND_ONNX_SAFETENSORS_H
#define BRAID_FRONTEND_ONNX_SAFETENSORS_H

#include "frontend/onnx/OnnxImporter.h"

#include "llvm/Support/Error.h"

namespace mlir {
namespace braid {
namespace onnx_import {

/// Returns the safetensors dtype name of an ONNX element type ("F32", ...),
/// or an empty string when safetensors has none.
llvm::StringRef safetensorsDType(int32_t onnxType);

/// Writes `weights` to `path` in the safetensors format (an 8-byte
/// little-endian header length, a JSON header, then the tensors' bytes). The
/// file is written to a temporary name and renamed, so a failure never leaves
/// a half-written file.
llvm::Error writeSafetensors(llvm::StringRef path,
                             llvm::ArrayRef<ImportedWeight> weights);

} // namespace onnx_import
} // namespace braid
} // namespace mlir

#endif // BRAID_FRONTEND_ONNX_SAFETENSORS_H
