//===- Roofline.h - time of one kernel from its FLOPs and bytes -*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The compiler gives every kernel its FLOPs and its minimum bytes moved
// (docs/design-decisions.md, "Cost conventions"). A kernel is as slow as the
// slower of its two limits, each at the efficiency a real kernel of that size
// reaches (HardwareProfile.h, EfficiencyCurve), plus a fixed overhead:
//
//   compute = (F + F_half) / (peak(class, dtype) * max_eff(class))
//   memory  = (B + B_half) / (memory_bandwidth  * max_eff(memory))
//   time    = kernel_overhead + max(compute, memory)
//
// where the class is GEMM (matmul, grouped_matmul) or attention (attention,
// attention_partial), both on the tensor-core peak, or "memory" (every other
// op: elementwise, norms, softmax, data movement) on the vector peak with the
// vector efficiency and no F_half. A kernel that neither computes nor moves
// anything (F = B = 0: a view) takes no time at all.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COST_ROOFLINE_H
#define BRAID_RUNTIME_COST_ROOFLINE_H

#include "runtime/core/DType.h"
#include "runtime/cost/HardwareProfile.h"

#include <string_view>

namespace braid::rt {

/// Which roof and efficiency curve a kernel uses.
enum class KernelClass {
  /// Tensor-core matrix products.
  Gemm,
  /// Fused attention (tensor cores plus a softmax between the products).
  Attention,
  /// Everything else: bound by memory bandwidth or by the vector cores.
  Memory,
};

/// "gemm", "attention" or "memory".
std::string_view toString(KernelClass kernelClass);

/// The class of a plan kernel op ("matmul" -> Gemm, "attention" ->
/// Attention, "add" -> Memory, ...). Unknown ops are Memory.
KernelClass classifyKernel(std::string_view op);

/// The parts of one kernel's time, in seconds.
struct KernelTime {
  double computeSec = 0;
  double memorySec = 0;
  double overheadSec = 0;

  /// overheadSec + max(computeSec, memorySec).
  double total() const;
  /// Whether compute, not memory, sets the time.
  bool computeBound() const { return computeSec >= memorySec; }
};

/// The roofline time of a kernel of `kernelClass` on `dtype` elements that
/// does `flops` FLOPs and moves `bytes` bytes, on one GPU of `profile`.
/// Throws std::invalid_argument for negative or non-finite `flops` or
/// `bytes`.
KernelTime kernelTime(const HardwareProfile &profile, KernelClass kernelClass,
                      DType dtype, double flops, double bytes);

} // namespace braid::rt

#endif // BRAID_RUNTIME_COST_ROOFLINE_H
