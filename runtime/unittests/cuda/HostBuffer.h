//===- HostBuffer.h - host tensors for the CUDA kernels' host tests -*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The host tests run the kernels' functors over host memory. A HostBuffer is
// one tensor's storage, 64-byte aligned like the arena's buffers, or shifted
// by one element so that no 16-byte vector path can be taken.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_UNITTESTS_CUDA_HOSTBUFFER_H
#define BRAID_RUNTIME_UNITTESTS_CUDA_HOSTBUFFER_H

#include "runtime/exec/KernelRegistry.h"
#include "runtime/kernels/ElementIO.h"
#include "runtime/reference/ReferenceKernels.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace braid::rt::test {

inline bool isFloatType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

inline int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  return n;
}

class HostBuffer {
public:
  HostBuffer(DType dtype, const std::vector<int64_t> &shape, bool misalign) {
    view.dtype = dtype;
    view.shape = shape;
    size_t bytes = numElements(shape) * byteSize(dtype);
    storage.assign(bytes + 128, 0xAB);
    uintptr_t base = reinterpret_cast<uintptr_t>(storage.data());
    size_t shift = (64 - base % 64) % 64 + (misalign ? byteSize(dtype) : 0);
    view.data = storage.data() + shift;
    // Valid i1 bytes even where nothing is written.
    if (dtype == DType::I1)
      std::memset(view.data, 0, bytes);
  }
  HostBuffer(const ref::Tensor &t, bool misalign)
      : HostBuffer(t.dtype, t.shape, misalign) {
    writeTensor(t, t.dtype, t.shape, view.data);
  }
  ref::Tensor read() const {
    return readTensor(view.dtype, view.shape, view.data);
  }

  TensorView view;

private:
  std::vector<uint8_t> storage;
};

} // namespace braid::rt::test

#endif // BRAID_RUNTIME_UNITTESTS_CUDA_HOSTBUFFER_H
