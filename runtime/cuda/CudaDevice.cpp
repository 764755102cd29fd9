//===- CudaDevice.cpp - is there a GPU, and what is it --------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaDevice.h"

#include "runtime/cuda/CudaContext.h"

#include <cstdlib>

namespace braid::rt::cuda {

std::string cudaUnavailableReason() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice ||
      (status == cudaSuccess && count == 0)) {
    // Without a driver the runtime reports "insufficient driver"; say what
    // that means here.
    (void)cudaGetLastError();
    if (status == cudaErrorInsufficientDriver)
      return "no CUDA GPU on this machine (no NVIDIA driver is loaded, or it "
             "is older than this build's CUDA " +
             std::to_string(CUDART_VERSION / 1000) + "." +
             std::to_string(CUDART_VERSION % 1000 / 10) + " runtime)";
    return "no CUDA GPU on this machine (the driver sees none; check "
           "CUDA_VISIBLE_DEVICES)";
  }
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no usable CUDA GPU: ") + cudaGetErrorName(status) +
           " (" + cudaGetErrorString(status) + ")";
  }
  return "";
}

DeviceInfo deviceInfo(int device) {
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  DeviceInfo info;
  info.device = device;
  info.name = prop.name;
  info.smCount = prop.multiProcessorCount;
  info.computeMajor = prop.major;
  info.computeMinor = prop.minor;
  info.totalMemory = prop.totalGlobalMem;
  return info;
}

int deviceForLocalRank(int deviceCount) {
  if (deviceCount <= 0)
    return 0;
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "SLURM_LOCALID", "LOCAL_RANK"}) {
    if (const char *value = std::getenv(name)) {
      int local = std::atoi(value);
      if (local >= 0)
        return local % deviceCount;
    }
  }
  return 0;
}

} // namespace braid::rt::cuda
