//===- Roofline.cpp - time of one kernel from its FLOPs and bytes ---------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cost/Roofline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace braid::rt {

std::string_view toString(KernelClass kernelClass) {
  switch (kernelClass) {
  case KernelClass::Gemm:
    return "gemm";
  case KernelClass::Attention:
    return "attention";
  case KernelClass::Memory:
    return "memory";
  }
  throw std::invalid_argument("unknown KernelClass value " +
                              std::to_string(static_cast<int>(kernelClass)));
}

KernelClass classifyKernel(std::string_view op) {
  if (op == "matmul" || op == "grouped_matmul")
    return KernelClass::Gemm;
  if (op == "attention" || op == "attention_partial")
    return KernelClass::Attention;
  return KernelClass::Memory;
}

double KernelTime::total() const {
  return overheadSec + std::max(computeSec, memorySec);
}

KernelTime kernelTime(const HardwareProfile &profile, KernelClass kernelClass,
                      DType dtype, double flops, double bytes) {
  if (!std::isfinite(flops) || flops < 0)
    throw std::invalid_argument("kernelTime: FLOPs must be finite and >= 0, "
                                "got " +
                                std::to_string(flops));
  if (!std::isfinite(bytes) || bytes < 0)
    throw std::invalid_argument("kernelTime: bytes must be finite and >= 0, "
                                "got " +
                                std::to_string(bytes));
  KernelTime time;
  if (flops == 0 && bytes == 0)
    return time;
  time.overheadSec = profile.gpu.kernelOverheadSec;
  if (flops > 0) {
    switch (kernelClass) {
    case KernelClass::Gemm:
      time.computeSec =
          (flops + profile.gemm.halfWork) /
          (profile.gpu.matrixPeak(dtype) * profile.gemm.maxEfficiency);
      break;
    case KernelClass::Attention:
      time.computeSec =
          (flops + profile.attention.halfWork) /
          (profile.gpu.matrixPeak(dtype) * profile.attention.maxEfficiency);
      break;
    case KernelClass::Memory:
      time.computeSec =
          flops / (profile.gpu.vectorPeak(dtype) * profile.vectorEfficiency);
      break;
    }
  }
  if (bytes > 0)
    time.memorySec =
        (bytes + profile.memory.halfWork) /
        (profile.gpu.memoryBandwidth * profile.memory.maxEfficiency);
  return time;
}

} // namespace braid::rt
