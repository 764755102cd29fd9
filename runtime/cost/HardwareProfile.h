//===- HardwareProfile.h - GPUs, nodes and links of a cluster ---*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// A hardware profile describes one node type: its GPU (peak FLOP/s per
// element type, memory bandwidth, SMs, the efficiency a real kernel reaches),
// how many GPUs a node holds and the links between them (NVLink or PCIe)
// and between nodes (InfiniBand NICs), and how much communication and
// computation slow each other down when they share a GPU. A cluster is a
// profile plus a node count.
//
// Profiles are JSON files (runtime/profiles/*.json, written in the units of
// datasheets: TFLOP/s, GB/s with GB = 1e9 bytes, microseconds) and every one
// carries a "sources" object that says where each number comes from. The
// loader accepts exactly the keys below, so a typo is an error, not a
// silently ignored field; docs/cost-model.md describes each one.
//
//   {
//     "name": "dgx-h100", "description": "...",
//     "gpu": {"model": "...", "sm_count": 132, "memory_gb": 80,
//             "memory_bandwidth_gb_per_s": 3350, "kernel_overhead_us": 2.5,
//             "matrix_tflops": {"bf16": 989.4, ...},
//             "vector_tflops": {"f32": 66.9, ...}},
//     "efficiency": {"gemm": {"max": 0.8, "half_gflop": 1.5},
//                    "attention": {"max": 0.5, "half_gflop": 4},
//                    "memory": {"max": 0.85, "half_mb": 2},
//                    "vector": {"max": 0.7}},
//     "node": {"gpus_per_node": 8,
//              "intra": {"type": "nvlink", "bandwidth_gb_per_s": 450,
//                        "latency_us": 1, "efficiency": 0.82},
//              "inter": {"type": "infiniband", "nics_per_node": 8,
//                        "bandwidth_gb_per_s": 50, "latency_us": 5,
//                        "efficiency": 0.9}},
//     "contention": {"comm_sms": 20, "matrix_slowdown": 1.18,
//                    "memory_slowdown": 1.25, "comm_slowdown": 1.1},
//     "sources": {"gpu.matrix_tflops": "NVIDIA H100 datasheet ...", ...}
//   }
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COST_HARDWAREPROFILE_H
#define BRAID_RUNTIME_COST_HARDWAREPROFILE_H

#include "runtime/core/DType.h"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace braid::rt {

/// A profile file is missing, unreadable or invalid; the message names the
/// file and the field.
class ProfileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// How close to peak a kernel of `work` units (FLOPs or bytes) runs:
/// efficiency(work) = maxEfficiency * work / (work + halfWork). Large
/// problems reach maxEfficiency; one of halfWork units reaches half of it
/// (Hockney's n_1/2). The time it gives, work / (peak * efficiency(work)) =
/// (work + halfWork) / (peak * maxEfficiency), is linear in the work with a
/// fixed start-up cost.
struct EfficiencyCurve {
  /// In (0, 1].
  double maxEfficiency = 1;
  /// >= 0, in FLOPs or bytes.
  double halfWork = 0;

  /// The efficiency at `work` (> 0) units.
  double at(double work) const;
};

/// One GPU.
struct GpuSpec {
  std::string model;
  int64_t smCount = 0;
  double memoryBytes = 0;
  /// HBM (or GDDR) bandwidth, bytes per second.
  double memoryBandwidth = 0;
  /// Dense tensor-core peak, FLOP/s, per element type of the inputs. f32
  /// means TF32 tensor cores (what cuBLAS uses for f32 GEMMs when TF32 is
  /// allowed, as in Megatron-LM and PyTorch's allow_tf32).
  std::map<DType, double> matrixFlops;
  /// Peak of the ordinary (non-tensor) cores, FLOP/s, per element type.
  std::map<DType, double> vectorFlops;
  /// Time every kernel pays besides its work: launch, ramp-up, tail.
  double kernelOverheadSec = 0;

  /// The matrix peak for `dtype`, or the vector peak when the profile has no
  /// matrix peak for it (integer types).
  double matrixPeak(DType dtype) const;
  /// The vector peak for `dtype`, or the f32 vector peak when the profile has
  /// none for it.
  double vectorPeak(DType dtype) const;
};

/// A link class: latency per message, bandwidth per direction, and the
/// fraction of that bandwidth NCCL reaches on it.
struct LinkSpec {
  /// "nvlink", "pcie", "infiniband", "roce", "ethernet" (for messages only).
  std::string type;
  /// Line rate per direction, bytes per second: per GPU for the link inside
  /// a node, per NIC between nodes.
  double bandwidth = 0;
  double latencySec = 0;
  /// In (0, 1].
  double efficiency = 1;

  /// bandwidth * efficiency.
  double effectiveBandwidth() const { return bandwidth * efficiency; }
};

/// A node: GPUs and the links inside and between nodes.
struct NodeSpec {
  int64_t gpusPerNode = 1;
  LinkSpec intra;
  LinkSpec inter;
  int64_t nicsPerNode = 1;
};

/// How communication and computation slow each other on one GPU (see
/// runtime/cost/Contention.h). Factors are >= 1.
struct ContentionSpec {
  /// SMs the communication kernels occupy (NCCL channels); what
  /// matrixSlowdown was derived from.
  int64_t commSms = 0;
  /// A GEMM or attention kernel while a collective runs.
  double matrixSlowdown = 1;
  /// A memory-bound kernel while a collective runs.
  double memorySlowdown = 1;
  /// A collective while a kernel runs.
  double commSlowdown = 1;
};

/// One node type, as read from a profile file.
struct HardwareProfile {
  std::string name;
  std::string description;
  GpuSpec gpu;
  EfficiencyCurve gemm;
  EfficiencyCurve attention;
  /// Over bytes moved.
  EfficiencyCurve memory;
  /// The fraction of the vector peak elementwise kernels reach.
  double vectorEfficiency = 1;
  NodeSpec node;
  ContentionSpec contention;
  /// Field path ("gpu.matrix_tflops") -> where its numbers come from.
  std::map<std::string, std::string> sources;
  /// The file it was read from (empty when parsed from text).
  std::string path;
};

/// Parses a profile from JSON text; `origin` names it in error messages.
/// Throws ProfileError naming the field for malformed JSON, missing or
/// unknown keys, and values out of range.
HardwareProfile parseHardwareProfile(const std::string &text,
                                     const std::string &origin);

/// Reads and parses a profile file; throws ProfileError.
HardwareProfile loadHardwareProfile(const std::string &path);

/// The folders searched for profiles by name, in order: each entry of the
/// BRAID_PROFILE_PATH environment variable (colon-separated), then the
/// runtime/profiles folder of the source tree this library was built from,
/// then <prefix>/share/braid/profiles of its install prefix.
std::vector<std::string> profileSearchPath();

/// The names (file stems) of the profiles found on profileSearchPath(),
/// sorted, without duplicates.
std::vector<std::string> listHardwareProfiles();

/// Resolves `nameOrPath` to a file: a value containing '/' or ending in
/// ".json" is a path; anything else is a name looked up as NAME.json on
/// profileSearchPath(). Throws ProfileError listing the known names when
/// nothing matches.
std::string findHardwareProfile(const std::string &nameOrPath);

/// findHardwareProfile() then loadHardwareProfile().
HardwareProfile resolveHardwareProfile(const std::string &nameOrPath);

} // namespace braid::rt

#endif // BRAID_RUNTIME_COST_HARDWAREPROFILE_H
