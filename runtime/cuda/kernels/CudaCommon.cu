//===- CudaCommon.cu - shapes for the CUDA kernels ------------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/CudaCommon.cuh"

namespace braid::rt::cuda {

Dims contiguousDims(const std::vector<int64_t> &shape) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    throw CudaError("a tensor of rank " + std::to_string(shape.size()) +
                    " is above the CUDA kernels' limit of " +
                    std::to_string(kMaxRank));
  Dims dims;
  dims.rank = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int d = dims.rank - 1; d >= 0; --d) {
    dims.size[d] = shape[d];
    dims.stride[d] = stride;
    stride *= shape[d];
  }
  return dims;
}

Dims broadcastDims(const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &to) {
  Dims dims = contiguousDims(to);
  Dims own = contiguousDims(shape);
  int shift = dims.rank - own.rank;
  if (shift < 0)
    throw CudaError("cannot broadcast a tensor of rank " +
                    std::to_string(own.rank) + " to rank " +
                    std::to_string(dims.rank));
  for (int d = 0; d < dims.rank; ++d) {
    int source = d - shift;
    dims.stride[d] =
        source < 0 || own.size[source] == 1 ? 0 : own.stride[source];
  }
  return dims;
}

} // namespace braid::rt::cuda
