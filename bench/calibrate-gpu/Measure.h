//===- Measure.h - what calibrate-gpu measures on a GPU ---------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA side of bench/calibrate-gpu: each function runs one family of
// kernels on GPU 0 (cuBLAS GEMMs, an attention made of two batched GEMMs and
// a softmax, a streaming copy, an FMA loop, empty kernels, NCCL all-reduces
// over every visible GPU of this process) and returns raw timings; fitting
// them to the cost model is CalibrateGpu.cpp's job. Every function throws
// std::runtime_error with the failing call on a CUDA, cuBLAS or NCCL error.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_BENCH_CALIBRATEGPU_MEASURE_H
#define BRAID_BENCH_CALIBRATEGPU_MEASURE_H

#include <string>
#include <vector>

namespace calibrate {

struct DeviceInfo {
  std::string name;
  int smCount = 0;
  double memoryBytes = 0;
  int major = 0;
  int minor = 0;
  /// GPUs visible to this process.
  int deviceCount = 0;
  std::string cudaVersion;
  std::string ncclVersion;
};

/// Fills `info` for GPU 0. Returns false with `error` set when no GPU can be
/// used (no driver, no device).
bool queryDevice(DeviceInfo &info, std::string &error);

/// One timed problem: its work (FLOPs or bytes) and seconds per run.
struct Sample {
  std::string label;
  double work = 0;
  double seconds = 0;
};

/// cuBLAS GEMMs of square and transformer-like shapes; `dtype` "bf16"
/// (f32 accumulation) or "f32" (TF32 tensor cores). Work = 2*M*N*K.
std::vector<Sample> measureGemm(const std::string &dtype, bool quick);

/// Unfused attention over [batch*heads, S, 128] bf16: scores = Q K^T,
/// row softmax, out = P V. Work = FLOPs by the compiler's convention,
/// (2*D + 5 + 2*D) per (query, key) pair and head, all pairs.
std::vector<Sample> measureAttention(bool quick);

/// A streaming copy; work = bytes read + written.
std::vector<Sample> measureMemory(bool quick);

/// An FMA loop in registers (f32); work = FLOPs.
Sample measureVectorFlops();

/// Seconds per kernel of back-to-back empty kernel launches on one stream.
double measureKernelOverhead();

/// NCCL all-reduce (bf16 sum) over every visible GPU, single process.
struct NcclSamples {
  int ranks = 0;
  /// work = S in bytes (nccl-tests' size), seconds per all-reduce.
  std::vector<Sample> allReduce;
};
NcclSamples measureNccl(bool quick);

/// Slowdowns when a proxy communication kernel (a copy on `commSms` thread
/// blocks, as NCCL's channels are) runs beside a large GEMM or a streaming
/// copy on all SMs: each side alone, then both at once on two streams.
struct ContentionSamples {
  double gemmAlone = 0, gemmWithComm = 0;
  double memoryAlone = 0, memoryWithComm = 0;
  double commAlone = 0, commWithGemm = 0;
};
ContentionSamples measureContention(int commSms);

} // namespace calibrate

#endif // BRAID_BENCH_CALIBRATEGPU_MEASURE_H
