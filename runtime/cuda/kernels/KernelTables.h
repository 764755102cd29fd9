//===- KernelTables.h - the CUDA kernels, by op -----------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Each kernel file adds the run functions of its ops to the table; the CUDA
// registry (CudaKernels.cpp) pairs them with the CPU backend's checks, so a
// plan that loads for one backend loads for the other. A run function gets
// the same KernelArgs as on the CPU (device pointers into the arena) with
// KernelArgs::context pointing at the stream's CudaContext; it only enqueues
// work on that stream (no synchronization, no allocation), so a plan can be
// captured into a CUDA graph.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_KERNELS_KERNELTABLES_H
#define BRAID_RUNTIME_CUDA_KERNELS_KERNELTABLES_H

#include "runtime/exec/KernelRegistry.h"

#include <map>
#include <string>

namespace braid::rt::cuda {

using KernelTable = std::map<std::string, KernelRunFn>;

/// neg exp log sqrt rsqrt tanh erf sigmoid silu relu gelu add sub mul div pow
/// max min compare select cast.
void addElementwiseKernels(KernelTable &table);
/// reshape copy transpose slice concat split broadcast_to gather scatter_add.
void addDataMovementKernels(KernelTable &table);
/// reduce_sum reduce_mean reduce_max softmax layer_norm rms_norm rotary.
void addNormKernels(KernelTable &table);
/// attention attention_partial attention_merge.
void addAttentionKernels(KernelTable &table);
/// router_topk moe_dispatch moe_combine cross_entropy.
void addMoeKernels(KernelTable &table);
/// matmul grouped_matmul.
void addMatmulKernels(KernelTable &table);

} // namespace braid::rt::cuda

#endif // BRAID_RUNTIME_CUDA_KERNELS_KERNELTABLES_H
