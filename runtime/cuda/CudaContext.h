//===- CudaContext.h - what a CUDA kernel runs with ------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend gives every plan stream one CudaContext: its CUDA stream,
// its own cuBLAS handle and workspace (two streams never share a
// workspace, so their GEMMs may overlap), and the device's properties. A
// kernel finds it in KernelArgs::context. Every CUDA, cuBLAS and NCCL status
// is checked; a failure throws CudaError naming the call.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_CUDACONTEXT_H
#define BRAID_RUNTIME_CUDA_CUDACONTEXT_H

#include "runtime/exec/KernelRegistry.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace braid::rt::cuda {

/// A CUDA, cuBLAS or NCCL call failed.
class CudaError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The largest tensor rank the CUDA kernels index (the registry rejects
/// larger ones when a plan is loaded).
constexpr int kMaxRank = 8;

struct CudaContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  /// Device scratch for cuBLAS and for kernels that need a little
  /// (attention partial results, grouped GEMM pointer arrays): owned by the
  /// stream, valid for the kernel's duration on this stream only.
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  int device = 0;
  int smCount = 1;
  /// Bytes of shared memory a block may opt into.
  size_t maxSharedPerBlock = 48 * 1024;
};

/// Makes `ctx` own a new non-blocking stream, a cuBLAS handle bound to it and a workspace of `workspaceBytes`, on the current device
/// (whose properties it records). Throws CudaError; what was made so far is
/// left for destroyContext.
void createContext(CudaContext &ctx, size_t workspaceBytes);
/// Releases what createContext made (members still null are skipped).
void destroyContext(CudaContext &ctx);

/// cuBLAS's type of a floating dtype; throws CudaError for another.
cudaDataType_t cublasDataType(DType dtype);

/// The context of a running kernel; throws CudaError when the kernel was
/// called without one (a CPU caller).
CudaContext &contextOf(const KernelArgs &args);

/// Throws CudaError "`what`: <CUDA's message>" unless `status` is success.
void check(cudaError_t status, const char *what);
/// Throws CudaError "`what`: <cuBLAS status name>" unless success.
void check(cublasStatus_t status, const char *what);
/// After a kernel launch: throws CudaError naming `kernel` on a launch error.
void checkLaunch(const char *kernel);

} // namespace braid::rt::cuda

#endif // BRAID_RUNTIME_CUDA_CUDACONTEXT_H
