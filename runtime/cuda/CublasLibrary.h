//===- CublasLibrary.h - cuBLAS, loaded when first used ---------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend calls cuBLAS through these pointers, resolved with dlopen
// the first time a stream context is created, instead of linking
// libcublas. Linking it costs every braid-run process about 210 MiB of
// resident memory at startup (libcublasLt's relocations), CPU runs
// included; loaded on demand it costs only the processes that use a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_CUBLASLIBRARY_H
#define BRAID_RUNTIME_CUDA_CUBLASLIBRARY_H

#include <cublas_api.h>

namespace braid::rt::cuda {

struct CublasLibrary {
  cublasStatus_t (*create)(cublasHandle_t *);
  cublasStatus_t (*destroy)(cublasHandle_t);
  cublasStatus_t (*setStream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*setWorkspace)(cublasHandle_t, void *, size_t);
  cublasStatus_t (*gemmStridedBatchedEx)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
      const void *, const void *, cudaDataType, int, long long int,
      const void *, cudaDataType, int, long long int, const void *, void *,
      cudaDataType, int, long long int, int, cublasComputeType_t,
      cublasGemmAlgo_t);
  const char *(*statusName)(cublasStatus_t);
  const char *(*statusString)(cublasStatus_t);
};

/// cuBLAS, loaded on the first call (libcublas.so.<CUDA major>, then
/// libcublas.so); throws CudaError naming the library and dlerror() when it
/// cannot be loaded or lacks a function.
const CublasLibrary &cublas();

} // namespace braid::rt::cuda

#endif // BRAID_RUNTIME_CUDA_CUBLASLIBRARY_H
