//===- CalibrateGpu.cpp - measures a GPU and writes a hardware profile ----===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
//   calibrate-gpu [--base PROFILE.json] [-o OUT.json] [--name NAME] [--quick]
//
// Measures, on GPU 0 of this machine: cuBLAS GEMM rates (bf16 and TF32) over
// a sweep of sizes, an attention built from two batched GEMMs and a softmax,
// a streaming copy, an FMA loop, the per-kernel overhead of back-to-back
// launches, NCCL all-reduce over every visible GPU (one process; with a
// single GPU there is no link to measure and the base profile's links are
// kept), and a contention proxy (a copy kernel on NCCL's share of SMs beside
// a GEMM or a streaming kernel). It fits them to the cost model of
// runtime/cost (docs/cost-model.md) and writes the base profile with the
// measured fields replaced and their "sources" entries saying so. Peaks
// (datasheet FLOP/s and bandwidths) come from the base profile; the
// measurement gives the efficiencies against them.
//
// The base profile defaults to the shipped profile whose GPU matches the
// device name (H100 -> dgx-h100, ...). Runs in about a minute (--quick:
// less), well under the 10-minute limit. Without a usable GPU it prints one
// line and exits with status 1.
//
// --fake-measurements writes a profile from made-up measurements without
// touching a GPU: it checks the fitting and the output file on machines
// without one.
//
//===----------------------------------------------------------------------===//

#include "Measure.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#ifndef BRAID_PROFILES_DIR
#define BRAID_PROFILES_DIR "runtime/profiles"
#endif

using nlohmann::json;
using namespace calibrate;

namespace {

struct Options {
  std::string base;
  std::string output = "calibrated.json";
  std::string name;
  bool quick = false;
  bool fake = false;
};

[[noreturn]] void fail(const std::string &message) {
  std::cerr << "calibrate-gpu: error: " << message << "\n";
  std::exit(1);
}

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--base")
      options.base = value();
    else if (arg == "-o" || arg == "--output")
      options.output = value();
    else if (arg == "--name")
      options.name = value();
    else if (arg == "--quick")
      options.quick = true;
    else if (arg == "--fake-measurements")
      options.fake = true;
    else if (arg == "--help" || arg == "-h") {
      std::cout << "usage: calibrate-gpu [--base PROFILE.json] [-o OUT.json] "
                   "[--name NAME] [--quick] [--fake-measurements]\n";
      std::exit(0);
    } else
      fail("unknown option '" + arg + "' (see --help)");
  }
  return options;
}

/// The shipped profile for a device name, or "".
std::string baseFor(const std::string &device) {
  static const std::pair<const char *, const char *> table[] = {
      {"H100", "dgx-h100"}, {"H200", "h200-node"}, {"H800", "h800-node"},
      {"A100", "dgx-a100"}, {"A800", "a800-node"}, {"4090", "rtx4090-pcie"},
      {"L20", "l20-pcie"}};
  for (const auto &[key, profile] : table)
    if (device.find(key) != std::string::npos)
      return std::string(BRAID_PROFILES_DIR) + "/" + profile + ".json";
  return "";
}

json readJson(const std::string &path) {
  std::ifstream file(path);
  if (!file)
    fail("cannot read the base profile '" + path + "'");
  try {
    return json::parse(file);
  } catch (const json::exception &error) {
    fail("'" + path + "' is not valid JSON: " + error.what());
  }
}

/// Fits seconds = overhead + (work + half) / rate to the samples by least
/// squares on relative error; returns {rate, half}. The rate is the large-
/// problem rate (peak * max efficiency), half the half-saturation work.
std::pair<double, double> fitLinear(const std::vector<Sample> &samples,
                                    double overhead) {
  // t' = t - overhead = a * W + b with weights 1 / t'^2.
  double sww = 0, swx = 0, swxx = 0, swy = 0, swxy = 0;
  for (const Sample &s : samples) {
    double y = std::max(s.seconds - overhead, s.seconds * 0.05);
    double w = 1 / (y * y);
    sww += w;
    swx += w * s.work;
    swxx += w * s.work * s.work;
    swy += w * y;
    swxy += w * s.work * y;
  }
  double det = sww * swxx - swx * swx;
  double a = det != 0 ? (sww * swxy - swx * swy) / det : 0;
  double b = det != 0 ? (swxx * swy - swx * swxy) / det : 0;
  // The large-problem rate is at least the best one measured.
  double best = 0;
  for (const Sample &s : samples)
    best = std::max(best, s.work / s.seconds);
  if (!(a > 0) || 1 / a < best)
    a = 1 / best;
  return {1 / a, std::max(b, 0.0) / a};
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d", std::gmtime(&now));
  return text;
}

void printSamples(const char *what, const std::vector<Sample> &samples,
                  const char *unit, double scale) {
  std::printf("%s:\n", what);
  for (const Sample &s : samples)
    std::printf("  %-18s %10.3f us  %9.2f %s\n", s.label.c_str(),
                s.seconds * 1e6, s.work / s.seconds / scale, unit);
}

/// Made-up measurements of a GPU with 800 TFLOP/s GEMMs etc.
void fakeMeasurements(DeviceInfo &device, std::vector<Sample> &gemm,
                      std::vector<Sample> &attention,
                      std::vector<Sample> &memory, Sample &vector,
                      double &overhead, NcclSamples &nccl,
                      ContentionSamples &contention) {
  device = {"Fake GPU (--fake-measurements)", 132, 80e9, 9, 0, 1, "-", "-"};
  overhead = 2.5e-6;
  for (double n : {256.0, 1024.0, 4096.0, 8192.0}) {
    double flops = 2 * n * n * n;
    gemm.push_back({"n=" + std::to_string(int(n)), flops,
                    overhead + (flops + 2e9) / 780e12});
  }
  for (double s : {512.0, 2048.0, 4096.0}) {
    double flops = 32 * s * s * (4 * 128 + 5);
    attention.push_back({"S", flops, overhead + (flops + 4e9) / 300e12});
  }
  for (double bytes : {65536.0, 1048576.0, 67108864.0, 1073741824.0})
    memory.push_back({"b", 2 * bytes, overhead + (2 * bytes + 5e6) / 2.9e12});
  vector = {"fma", 1e12, 1e12 / 60e12};
  nccl.ranks = 1;
  contention = {1.0, 1.15, 1.0, 1.3, 1.0, 1.08};
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  auto started = std::chrono::steady_clock::now();

  DeviceInfo device;
  std::vector<Sample> gemmBf16, gemmTf32, attention, memory;
  Sample vector;
  double overhead = 0;
  NcclSamples nccl;
  ContentionSamples contention;
  if (!options.fake) {
    std::string error;
    if (!queryDevice(device, error))
      fail(error);
  } else {
    fakeMeasurements(device, gemmBf16, attention, memory, vector, overhead,
                     nccl, contention);
  }

  std::string basePath =
      options.base.empty() ? baseFor(device.name) : options.base;
  if (basePath.empty())
    fail("no shipped profile matches '" + device.name +
         "'; give one to start from with --base PROFILE.json");
  json profile = readJson(basePath);
  double bf16Peak = profile["gpu"]["matrix_tflops"].value("bf16", 0.0) * 1e12;
  double f32Peak = profile["gpu"]["matrix_tflops"].value("f32", 0.0) * 1e12;
  double vectorPeak = profile["gpu"]["vector_tflops"].value("f32", 0.0) * 1e12;
  double hbm = profile["gpu"].value("memory_bandwidth_gb_per_s", 0.0) * 1e9;
  double linkRate =
      profile["node"]["intra"].value("bandwidth_gb_per_s", 0.0) * 1e9;
  int commSms = profile["contention"].value("comm_sms", 16);
  if (bf16Peak <= 0 || vectorPeak <= 0 || hbm <= 0)
    fail("the base profile '" + basePath +
         "' lacks gpu.matrix_tflops.bf16, gpu.vector_tflops.f32 or "
         "gpu.memory_bandwidth_gb_per_s");

  std::printf("calibrating %s (%d SMs, CUDA %s, NCCL %s, %d GPU(s) visible) "
              "against %s\n",
              device.name.c_str(), device.smCount, device.cudaVersion.c_str(),
              device.ncclVersion.c_str(), device.deviceCount, basePath.c_str());
  try {
    if (!options.fake) {
      overhead = measureKernelOverhead();
      gemmBf16 = measureGemm("bf16", options.quick);
      if (f32Peak > 0)
        gemmTf32 = measureGemm("f32", true);
      attention = measureAttention(options.quick);
      memory = measureMemory(options.quick);
      vector = measureVectorFlops();
      nccl = measureNccl(options.quick);
      contention = measureContention(commSms);
    }
  } catch (const std::exception &error) {
    fail(error.what());
  }

  std::printf("kernel overhead: %.2f us per back-to-back launch\n",
              overhead * 1e6);
  printSamples("GEMM bf16", gemmBf16, "TFLOP/s", 1e12);
  printSamples("GEMM f32 (TF32)", gemmTf32, "TFLOP/s", 1e12);
  printSamples("attention (unfused, bf16)", attention, "TFLOP/s", 1e12);
  printSamples("streaming copy", memory, "GB/s", 1e9);
  std::printf("vector FMA: %.2f TFLOP/s\n",
              vector.seconds > 0 ? vector.work / vector.seconds / 1e12 : 0);

  // Fit and write.
  std::string stamp = "measured by bench/calibrate-gpu on " + device.name +
                      " (CUDA " + device.cudaVersion + ", NCCL " +
                      device.ncclVersion + ") on " + today();
  json &sources = profile["sources"];
  auto [gemmRate, gemmHalf] = fitLinear(gemmBf16, overhead);
  double gemmMax = std::min(gemmRate / bf16Peak, 1.0);
  profile["efficiency"]["gemm"] = {
      {"max", std::round(gemmMax * 1000) / 1000},
      {"half_gflop", std::round(gemmHalf / 1e6) / 1000}};
  sources["efficiency.gemm"] = stamp +
                               ": cuBLAS bf16 GEMM sweep fitted to "
                               "t = overhead + (F + F_half) / (peak * max)";
  if (!attention.empty()) {
    auto [rate, half] = fitLinear(attention, 3 * overhead);
    profile["efficiency"]["attention"] = {
        {"max", std::round(std::min(rate / bf16Peak, 1.0) * 1000) / 1000},
        {"half_gflop", std::round(half / 1e6) / 1000}};
    sources["efficiency.attention"] =
        stamp + ": unfused attention (2 batched GEMMs + softmax) fitted like "
                "the GEMM; a fused kernel is faster";
  }
  auto [memoryRate, memoryHalf] = fitLinear(memory, overhead);
  profile["efficiency"]["memory"] = {
      {"max", std::round(std::min(memoryRate / hbm, 1.0) * 1000) / 1000},
      {"half_mb", std::round(memoryHalf / 1e3) / 1000}};
  sources["efficiency.memory"] = stamp + ": streaming copy sweep";
  if (vector.seconds > 0) {
    double efficiency =
        std::min(vector.work / vector.seconds / vectorPeak, 1.0);
    profile["efficiency"]["vector"] = {
        {"max", std::round(efficiency * 1000) / 1000}};
    sources["efficiency.vector"] = stamp + ": FMA loop in registers";
  }
  profile["gpu"]["kernel_overhead_us"] = std::round(overhead * 1e8) / 100;
  sources["gpu.kernel_overhead_us"] = stamp + ": back-to-back empty kernels";

  if (nccl.ranks >= 2 && !nccl.allReduce.empty() && linkRate > 0) {
    double p = nccl.ranks;
    double factor = 2 * (p - 1) / p;
    const Sample &large = nccl.allReduce.back();
    double busBw = factor * large.work / large.seconds;
    const Sample &small = nccl.allReduce.front();
    double alpha = std::max(
        (small.seconds - factor * small.work / busBw) / (2 * (p - 1)), 0.0);
    profile["node"]["intra"]["efficiency"] =
        std::round(std::min(busBw / linkRate, 1.0) * 1000) / 1000;
    profile["node"]["intra"]["latency_us"] = std::round(alpha * 1e8) / 100;
    sources["node.intra.efficiency"] =
        stamp + ": NCCL all-reduce bus bandwidth " +
        std::to_string(busBw / 1e9) + " GB/s over " +
        std::to_string(nccl.ranks) + " GPUs at " + large.label;
    sources["node.intra.latency_us"] =
        stamp + ": from the smallest all-reduce (" + small.label + ")";
    std::printf("NCCL all-reduce over %d GPUs: %.1f GB/s bus bandwidth at %s\n",
                nccl.ranks, busBw / 1e9, large.label.c_str());
  } else {
    std::printf("NCCL: %d GPU(s) visible, so no link to measure; the base "
                "profile's links are kept\n",
                nccl.ranks);
  }

  auto ratio = [](double with, double alone) {
    return alone > 0 ? std::round(std::max(with / alone, 1.0) * 1000) / 1000
                     : 1.0;
  };
  profile["contention"]["matrix_slowdown"] =
      ratio(contention.gemmWithComm, contention.gemmAlone);
  profile["contention"]["memory_slowdown"] =
      ratio(contention.memoryWithComm, contention.memoryAlone);
  profile["contention"]["comm_slowdown"] =
      ratio(contention.commWithGemm, contention.commAlone);
  sources["contention"] =
      stamp +
      ": proxy: a copy kernel on comm_sms = " + std::to_string(commSms) +
      " thread blocks (NCCL's share) beside a bf16 8192^3 GEMM or a streaming "
      "copy on all SMs, each slowdown = time together / time alone";
  std::printf("contention proxy: GEMM x%.3f, streaming x%.3f, communication "
              "x%.3f\n",
              profile["contention"]["matrix_slowdown"].get<double>(),
              profile["contention"]["memory_slowdown"].get<double>(),
              profile["contention"]["comm_slowdown"].get<double>());

  std::string baseName = profile.value("name", std::string("gpu"));
  profile["name"] =
      options.name.empty() ? baseName + "-calibrated" : options.name;
  profile["description"] = profile.value("description", std::string()) +
                           " (calibrated: " + stamp + ")";
  std::ofstream out(options.output);
  out << profile.dump(2) << "\n";
  if (!out)
    fail("cannot write '" + options.output + "'");
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  std::printf("wrote %s in %.1f s\n", options.output.c_str(), seconds);
  return 0;
}
