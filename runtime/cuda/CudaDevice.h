//===- CudaDevice.h - is there a GPU, and what is it ------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_CUDADEVICE_H
#define BRAID_RUNTIME_CUDA_CUDADEVICE_H

#include <cstddef>
#include <string>

namespace braid::rt::cuda {

/// Why no CUDA GPU can be used here ("no CUDA driver ...", "no CUDA GPU
/// ..."), or empty when device 0 is usable.
std::string cudaUnavailableReason();

struct DeviceInfo {
  int device = 0;
  std::string name;
  int smCount = 0;
  int computeMajor = 0, computeMinor = 0;
  size_t totalMemory = 0;
};

/// Properties of `device`; throws CudaError.
DeviceInfo deviceInfo(int device);

/// The device this rank uses: its node-local rank (from the launcher's
/// environment) modulo the number of visible GPUs.
int deviceForLocalRank(int deviceCount);

} // namespace braid::rt::cuda

#endif // BRAID_RUNTIME_CUDA_CUDADEVICE_H
