//===- CudaContext.cpp - checked CUDA and cuBLAS calls --------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaContext.h"

#include "runtime/cuda/CublasLibrary.h"

namespace braid::rt::cuda {

CudaContext &contextOf(const KernelArgs &args) {
  if (!args.context)
    throw CudaError(args.op() + ": a CUDA kernel was called without a CUDA "
                                "context (not from the CUDA executor)");
  return *static_cast<CudaContext *>(args.context);
}

void createContext(CudaContext &ctx, size_t workspaceBytes) {
  check(cudaGetDevice(&ctx.device), "cudaGetDevice");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, ctx.device), "cudaGetDeviceProperties");
  ctx.smCount = prop.multiProcessorCount;
  ctx.maxSharedPerBlock = prop.sharedMemPerBlockOptin;
  check(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
  check(cublas().create(&ctx.cublas), "cublasCreate");
  ctx.workspaceBytes = workspaceBytes;
  check(cudaMalloc(&ctx.workspace, workspaceBytes),
        "cudaMalloc (stream workspace)");
  // cuBLAS must not allocate while a graph is being captured.
  check(cublas().setStream(ctx.cublas, ctx.stream), "cublasSetStream");
  check(cublas().setWorkspace(ctx.cublas, ctx.workspace, ctx.workspaceBytes),
        "cublasSetWorkspace");
}

void destroyContext(CudaContext &ctx) {
  if (ctx.cublas)
    cublas().destroy(ctx.cublas);
  if (ctx.workspace)
    cudaFree(ctx.workspace);
  if (ctx.stream)
    cudaStreamDestroy(ctx.stream);
  ctx = CudaContext();
}

cudaDataType_t cublasDataType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return CUDA_R_32F;
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  default:
    throw CudaError("no cuBLAS type for " + std::string(toString(dtype)));
  }
}

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw CudaError(std::string(what) + ": " + cudaGetErrorName(status) +
                    " (" + cudaGetErrorString(status) + ")");
}

void check(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw CudaError(std::string(what) + ": " + cublas().statusName(status) +
                    " (" + cublas().statusString(status) + ")");
}

void checkLaunch(const char *kernel) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw CudaError(std::string("launching the ") + kernel +
                    " kernel: " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")");
}

} // namespace braid::rt::cuda
