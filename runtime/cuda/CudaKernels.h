//===- CudaKernels.h - the kernels of the CUDA backend ----------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// One CUDA kernel per op of the CPU backend, with the CPU backend's checks
// (so a plan loads for both or for neither) plus the CUDA kernels' own limit
// on tensor rank. Run functions enqueue on the stream of the CudaContext in
// KernelArgs::context.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_CUDAKERNELS_H
#define BRAID_RUNTIME_CUDA_CUDAKERNELS_H

#include "runtime/exec/KernelRegistry.h"

#include <string>
#include <vector>

namespace braid::rt::cuda {

/// The CUDA backend's kernels (built once, immutable).
const KernelRegistry &cudaKernels();

/// Ops of the CPU backend without a CUDA kernel (empty when complete).
std::vector<std::string> opsWithoutCudaKernel();

} // namespace braid::rt::cuda

#endif // BRAID_RUNTIME_CUDA_CUDAKERNELS_H
