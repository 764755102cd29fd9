//===- CudaCommon.cuh - shared pieces of the CUDA kernels -------*- CUDA -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// For .cu files only. Element types: every kernel loads and stores its
// element type and computes in float (f32 accumulation for f16 and bf16, as
// the CPU backend does in double). Index math lives in __host__ __device__
// functors so that the unit tests can run the same functor over every index
// on the host (runOnHost) and compare with the reference kernels, on machines
// without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_KERNELS_CUDACOMMON_CUH
#define BRAID_RUNTIME_CUDA_KERNELS_CUDACOMMON_CUH

#include "runtime/core/DType.h"
#include "runtime/cuda/CudaContext.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt::cuda {

#define BRAID_HD __host__ __device__ __forceinline__

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

using f16 = __half;
using bf16 = __nv_bfloat16;

template <typename T> BRAID_HD float toFloat(T value) {
  return static_cast<float>(value);
}
template <> BRAID_HD float toFloat<f16>(f16 value) {
  return __half2float(value);
}
template <> BRAID_HD float toFloat<bf16>(bf16 value) {
  return __bfloat162float(value);
}

template <typename T> BRAID_HD T fromFloat(float value) {
  return static_cast<T>(value);
}
template <> BRAID_HD f16 fromFloat<f16>(float value) {
  return __float2half_rn(value);
}
template <> BRAID_HD bf16 fromFloat<bf16>(float value) {
  return __float2bfloat16_rn(value);
}
/// i1 is one byte per element, 0 or 1.
template <> BRAID_HD bool fromFloat<bool>(float value) { return value != 0.f; }

/// Calls `f(T{})` with the C++ type of a floating dtype; throws CudaError
/// naming `op` for another one.
template <typename F> void dispatchFloat(DType dtype, const char *op, F &&f) {
  switch (dtype) {
  case DType::F32:
    f(float{});
    return;
  case DType::F16:
    f(f16{});
    return;
  case DType::BF16:
    f(bf16{});
    return;
  default:
    throw CudaError(std::string(op) + ": no CUDA kernel for element type " +
                    std::string(toString(dtype)));
  }
}

/// Like dispatchFloat, for every dtype (i1 as bool).
template <typename F> void dispatchAny(DType dtype, const char *op, F &&f) {
  switch (dtype) {
  case DType::I64:
    f(int64_t{});
    return;
  case DType::I32:
    f(int32_t{});
    return;
  case DType::I1:
    f(bool{});
    return;
  default:
    dispatchFloat(dtype, op, f);
  }
}

/// Index tensors (gather indices, token ids, expert ids) are i64 or i32.
template <typename F> void dispatchIndex(DType dtype, const char *op, F &&f) {
  switch (dtype) {
  case DType::I64:
    f(int64_t{});
    return;
  case DType::I32:
    f(int32_t{});
    return;
  default:
    throw CudaError(std::string(op) + ": indices must be i64 or i32, got " +
                    std::string(toString(dtype)));
  }
}

//===----------------------------------------------------------------------===//
// Shapes passed by value to kernels
//===----------------------------------------------------------------------===//


/// Sizes and element strides of a row-major tensor (or of a strided view of
/// one: a broadcast input has stride 0 along broadcast dimensions).
struct Dims {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};

  /// The element offset of linear index `i` of a tensor of these sizes.
  BRAID_HD int64_t offsetOf(int64_t i) const {
    int64_t offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t q = i / size[d];
      offset += (i - q * size[d]) * stride[d];
      i = q;
    }
    return offset;
  }
};

/// Dims of a contiguous tensor of `shape`.
Dims contiguousDims(const std::vector<int64_t> &shape);
/// Dims that read a contiguous tensor of `shape` as if broadcast to `to`
/// (numpy rules, aligned at the trailing dimension: stride 0 where `shape`
/// has 1 or lacks the dimension).
Dims broadcastDims(const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &to);

//===----------------------------------------------------------------------===//
// Launching
//===----------------------------------------------------------------------===//

template <typename F>
__global__ void pointwiseKernel(F f, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    f(i);
}

/// Runs `f(i)` for every i < n on `stream` (grid-stride loop, 256 threads a
/// block, at most 32 blocks per SM).
template <typename F>
void launchPointwise(const F &f, int64_t n, const CudaContext &ctx,
                     const char *name) {
  if (n <= 0)
    return;
  int64_t blocks = (n + 255) / 256;
  int64_t cap = int64_t(ctx.smCount) * 32;
  if (blocks > cap)
    blocks = cap;
  pointwiseKernel<<<static_cast<unsigned>(blocks), 256, 0, ctx.stream>>>(f, n);
  checkLaunch(name);
}

/// What the kernels' host-testable drivers launch through on the GPU:
/// functors with launchPointwise, contiguous byte ranges with
/// cudaMemcpyAsync, all on the context's stream (the host tests pass a
/// launcher with the same two calls that runs on the host).
struct DeviceLaunch {
  const CudaContext &ctx;
  const char *name;

  template <typename F> void operator()(const F &functor, int64_t n) const {
    launchPointwise(functor, n, ctx, name);
  }
  void copy(void *dst, const void *src, uint64_t bytes) const {
    if (bytes == 0 || dst == src)
      return;
    check(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx.stream),
        name);
  }
};

/// The unit tests' stand-in for launchPointwise: `f(i)` for every i < n on
/// the host, over host memory.
template <typename F> void runOnHost(const F &f, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    f(i);
}

/// Ceil(a / b) for positive b.
BRAID_HD int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace braid::rt::cuda

#endif // BRAID_RUNTIME_CUDA_KERNELS_CUDACOMMON_CUH
