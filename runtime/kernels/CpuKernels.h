//===- CpuKernels.h - the kernels of the CPU backend ------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// One kernel per `Kernel.op` the compiler emits (the braid compute op names
// without the dialect prefix, plus `copy`). f32 matmul and grouped_matmul run
// on oneDNN (a matmul with a constant weight from a copy packed at load,
// see `prepare`) or OpenBLAS, f32 add/sub/mul/div, softmax, layer_norm and rms_norm are
// direct loops; every other op, and every other element type, goes through
// an adapter that reads the arena into the reference kernels' ref::Tensor,
// calls the reference kernel and writes the result back: correct first, fast
// later.
//
// Attributes keep the op's argument names: gelu `tanh`; compare `kind`
// (eq/ne/lt/le/gt/ge); matmul `transpose_lhs`, `transpose_rhs`, and the
// epilogue braid-to-exec fuses in: `has_bias`, `has_addend` (inputs 2 and
// 3 when set), `activation` (gelu, gelu_tanh, silu, relu), out =
// activation(product + bias) + addend;
// grouped_matmul `transpose_rhs`; reduce_* `dims`, `keep_dims`; softmax
// `dim`; layer_norm / rms_norm `axis`, `epsilon`; rotary `interleaved`;
// gather, scatter_add `axis`; transpose `permutation`; slice `static_offsets`,
// `static_sizes`, `static_strides` (INT64_MIN offsets come from
// Kernel.indices, in order); concat / split `dim`; attention,
// attention_partial `causal`, `scale`, `has_mask` (causal offset from
// Kernel.indices[0] when given); router_topk `k`, `normalize`;
// cross_entropy `reduction` (none/mean/sum). Boolean attributes default to
// false.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_KERNELS_CPUKERNELS_H
#define BRAID_RUNTIME_KERNELS_CPUKERNELS_H

#include "runtime/exec/KernelRegistry.h"

#include <string>

namespace braid::rt {

/// The CPU backend's kernels (built once, immutable).
const KernelRegistry &cpuKernels();

/// How many threads the CPU kernels may use: the GEMM library's and the
/// kernels' own OpenMP loops, set on each stream's thread as it calls them.
/// Values below 1 mean 1.
void setCpuKernelThreads(int threads);
int cpuKernelThreads();

/// The GEMM library the CPU kernels were built with, and its version.
std::string cpuGemmLibrary();

/// The threads one rank gets by default: the cores this process may run on
/// (its CPU affinity) divided by the ranks launched on this host
/// (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS), at least 1.
int defaultCpuKernelThreads();

} // namespace braid::rt

#endif // BRAID_RUNTIME_KERNELS_CPUKERNELS_H
