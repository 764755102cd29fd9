//===- CudaKernels.cpp - the CUDA backend's registry ----------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/kernels/KernelTables.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/plan/PlanError.h"

namespace braid::rt::cuda {
namespace {

/// The CPU backend's check for the op, then the rank limit.
void checkForCuda(const KernelArgs &args) {
  const KernelInfo *cpu = cpuKernels().lookup(args.op());
  if (cpu && cpu->check)
    cpu->check(args);
  auto checkRank = [&](const TensorView &t, const char *what, size_t i) {
    if (t.rank() > kMaxRank)
      throw PlanError(std::string(what) + " " + std::to_string(i) +
                      " has rank " + std::to_string(t.rank()) +
                      ", above the CUDA kernels' limit of " +
                      std::to_string(kMaxRank));
  };
  for (size_t i = 0; i < args.inputs.size(); ++i)
    checkRank(args.inputs[i], "input", i);
  for (size_t i = 0; i < args.outputs.size(); ++i)
    checkRank(args.outputs[i], "output", i);
}

KernelTable allTables() {
  KernelTable table;
  addElementwiseKernels(table);
  addDataMovementKernels(table);
  addNormKernels(table);
  addAttentionKernels(table);
  addMoeKernels(table);
  addMatmulKernels(table);
  return table;
}

KernelRegistry buildCudaKernels() {
  KernelTable table = allTables();
  KernelRegistry registry;
  for (const std::string &op : cpuKernels().ops()) {
    auto it = table.find(op);
    if (it == table.end())
      continue;
    KernelInfo info = *cpuKernels().lookup(op);
    info.check = checkForCuda;
    info.run = it->second;
    info.prepare = nullptr; // the CPU's repacking is for host memory
    registry.add(std::move(info));
  }
  return registry;
}

} // namespace

const KernelRegistry &cudaKernels() {
  static const KernelRegistry registry = buildCudaKernels();
  return registry;
}

std::vector<std::string> opsWithoutCudaKernel() {
  std::vector<std::string> missing;
  for (const std::string &op : cpuKernels().ops())
    if (!cudaKernels().lookup(op))
      missing.push_back(op);
  return missing;
}

} // namespace braid::rt::cuda
