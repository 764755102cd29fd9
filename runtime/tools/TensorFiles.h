//===- TensorFiles.h - .npy and ONNX TensorProto .pb files ------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Host tensors for braid-run's inputs, outputs and reference data:
//   - .npy (NumPy format 1.0-3.0): little-endian, C order, dtypes <f4 <f2 <i8
//     <i4 |b1 (bfloat16 has no NumPy spelling);
//   - .pb: one serialized ONNX TensorProto, as in ONNX test data folders
//     (input_0.pb, output_0.pb), read and written through a minimal copy of
//     its schema (runtime/plan/OnnxTensor.proto), so that the runtime needs
//     no ONNX library. raw_data and the typed fields are both understood;
//     writing uses raw_data.
// Every reader checks sizes against the shape and throws TensorFileError
// naming the file and the problem.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TOOLS_TENSORFILES_H
#define BRAID_RUNTIME_TOOLS_TENSORFILES_H

#include "runtime/core/DType.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace braid::rt {

class TensorFileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A dense row-major tensor in host memory (little-endian elements, i1 as one
/// byte 0/1).
struct HostTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t numElements() const;
};

/// .npy
std::vector<uint8_t> encodeNpy(const HostTensor &tensor);
HostTensor decodeNpy(const uint8_t *bytes, size_t size,
                     const std::string &source);
HostTensor readNpy(const std::string &path);
void writeNpy(const std::string &path, const HostTensor &tensor);

/// ONNX TensorProto .pb
std::vector<uint8_t> encodeTensorProto(const HostTensor &tensor);
HostTensor decodeTensorProto(const uint8_t *bytes, size_t size,
                             const std::string &source);
HostTensor readTensorProto(const std::string &path);
void writeTensorProto(const std::string &path, const HostTensor &tensor);

/// Reads a .npy or .pb file, chosen by its extension.
HostTensor readTensorFile(const std::string &path);

/// Writes `bytes` to `path` through a temporary file and a rename, so that a
/// failed write leaves no partial file.
void writeFileAtomically(const std::string &path,
                         const std::vector<uint8_t> &bytes);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TOOLS_TENSORFILES_H
