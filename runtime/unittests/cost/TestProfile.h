//===- TestProfile.h - a hardware profile with round numbers ----*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Cost and simulator tests compute expected times by hand; this profile makes
// that easy: 1 TFLOP/s tensor and vector peaks at full efficiency, 1 GB/s
// memory, no kernel overhead and no half-saturation sizes, 1 GB/s links with
// no latency, 2 GPUs per node, and no contention. Tests change the fields
// they are about.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_UNITTESTS_COST_TESTPROFILE_H
#define BRAID_RUNTIME_UNITTESTS_COST_TESTPROFILE_H

#include "runtime/cost/HardwareProfile.h"

namespace braid::rt::test {

inline HardwareProfile roundNumberProfile() {
  HardwareProfile profile;
  profile.name = "round-numbers";
  profile.description = "a profile for hand-computed tests";
  profile.gpu.model = "test GPU";
  profile.gpu.smCount = 100;
  profile.gpu.memoryBytes = 1e9;
  profile.gpu.memoryBandwidth = 1e9;
  profile.gpu.matrixFlops = {{DType::F32, 1e12}, {DType::BF16, 2e12}};
  profile.gpu.vectorFlops = {{DType::F32, 1e12}};
  profile.gpu.kernelOverheadSec = 0;
  profile.gemm = {1, 0};
  profile.attention = {1, 0};
  profile.memory = {1, 0};
  profile.vectorEfficiency = 1;
  profile.node.gpusPerNode = 2;
  profile.node.intra = {"nvlink", 1e9, 0, 1};
  profile.node.inter = {"infiniband", 1e9, 0, 1};
  profile.node.nicsPerNode = 1;
  profile.contention = {0, 1, 1, 1};
  profile.sources = {{"everything", "made up for tests"}};
  return profile;
}

} // namespace braid::rt::test

#endif // BRAID_RUNTIME_UNITTESTS_COST_TESTPROFILE_H
