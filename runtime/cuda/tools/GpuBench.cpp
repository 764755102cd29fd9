//===- GpuBench.cpp - the CUDA backend against its ceilings ---------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
//   braid-gpu-bench [--quick] [--reps N] [--time-limit-s S]
//
// Measures, on GPU 0, Braid's CUDA kernels and executor against what the
// same GPU does without Braid:
//   - GEMM: the `matmul` kernel against cublasGemmEx of the same shape and
//     type (f32 without TF32, like the kernel), TFLOP/s;
//   - attention: the `attention` kernel, TFLOP/s (4 b h sq sk d, half of it
//     causally) against the cuBLAS GEMM rate measured above for its type;
//   - memory-bound kernels: GB/s (bytes read + written, each once) against a
//     device-to-device cudaMemcpyAsync moving as many bytes;
//   - launch overhead: a plan of 1000 `neg` kernels on 256 elements run by
//     the CudaExecutor, plainly and as a CUDA graph, microseconds per op,
//     against the same 1000 kernel calls made directly (and captured into a
//     graph by hand).
// Each number is the median of up to N timed runs (CUDA events; wall clock
// for whole executor runs) after warm-up; inputs are random, never zeros.
// Progress goes to stderr; stdout ends with one markdown table whose ratio
// column is Braid's share of the ceiling (1.00: as fast as the ceiling). A
// measurement that throws becomes a row "FAILED: message"; the others still
// run. Takes well under two minutes (--quick: smaller sizes, seconds).
//
// Exit status: 0 every row measured, 1 no usable GPU (one line on stderr),
// 2 usage, 3 some row FAILED or was skipped.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaCommunicator.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaExecutor.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/plan/Plan.pb.h"
#include "runtime/plan/PlanLoader.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace braid::rt;
namespace plan = braid::plan;
using Shape = std::vector<int64_t>;
using Clock = std::chrono::steady_clock;

namespace {

//===----------------------------------------------------------------------===//
// Options and formatting
//===----------------------------------------------------------------------===//

struct Options {
  bool quick = false;
  /// Only build every measurement's arguments and run the load-time checks.
  bool checkOnly = false;
  /// The most timed repetitions of one measurement.
  int maxReps = 30;
  /// Timed repetitions aim at about this much time per measurement.
  double budgetMs = 300;
  /// Measurements past this are skipped (a row says so).
  double timeLimitSeconds = 100;
};

const char *kUsage =
    R"(usage: braid-gpu-bench [--quick] [--reps N] [--time-limit-s S]
                       [--check-only]

Measures Braid's CUDA kernels and executor on GPU 0 against cuBLAS, device-to-
device copies and direct kernel calls; prints progress on stderr and a
markdown table last on stdout.

  --quick           smaller sizes and fewer repetitions (seconds)
  --reps N          at most N timed repetitions per measurement (default 30,
                    --quick 10); the median is reported
  --time-limit-s S  skip the measurements that would start after S seconds
                    (default 100)
  --check-only      no GPU needed: build every measurement's kernel
                    arguments and plan and run the registry's load-time
                    checks on them (a test of this tool)
exit status: 0 all measured, 1 no usable GPU, 2 usage, 3 a row FAILED or
was skipped
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double parsePositive(const std::string &flag, const std::string &text) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value <= 0)
    throw UsageError(flag + " needs a positive number, got '" + text + "'");
  return value;
}

Options parseOptions(int argc, char **argv) {
  Options options;
  int reps = 0;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw UsageError(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (flag == "--quick")
      options.quick = true;
    else if (flag == "--check-only")
      options.checkOnly = true;
    else if (flag == "--reps")
      reps = static_cast<int>(
          std::min(parsePositive("--reps", value()), 100000.0));
    else if (flag == "--time-limit-s")
      options.timeLimitSeconds = parsePositive("--time-limit-s", value());
    else
      throw UsageError("unknown argument '" + flag + "' (see --help)");
  }
  if (options.quick) {
    options.maxReps = 10;
    options.budgetMs = 100;
  }
  if (reps > 0)
    options.maxReps = reps;
  return options;
}

template <typename... Args>
std::string format(const char *pattern, Args... args) {
  int size = std::snprintf(nullptr, 0, pattern, args...);
  if (size <= 0)
    return "";
  std::string text(static_cast<size_t>(size) + 1, '\0');
  std::snprintf(text.data(), text.size(), pattern, args...);
  text.resize(static_cast<size_t>(size));
  return text;
}

std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string typeName(DType dtype) { return std::string(toString(dtype)); }

/// One line, safe inside a markdown table cell.
std::string cellText(std::string text) {
  for (char &c : text)
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
  std::string escaped;
  for (char c : text) {
    if (c == '|')
      escaped += '\\';
    escaped += c;
  }
  if (escaped.size() > 200)
    escaped = escaped.substr(0, 197) + "...";
  return escaped;
}

void progress(const std::string &line) {
  std::cerr << "braid-gpu-bench: " << line << std::endl;
}

//===----------------------------------------------------------------------===//
// Device memory, random inputs, timing
//===----------------------------------------------------------------------===//

/// --check-only: buffers stay null and nothing touches the GPU.
bool gCheckOnly = false;

std::string mib(uint64_t bytes) {
  return format("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes_ && !gCheckOnly)
      cuda::check(cudaMalloc(&data_, bytes_),
                  ("cudaMalloc of " + mib(bytes_)).c_str());
  }
  ~DeviceBuffer() {
    if (data_)
      (void)cudaFree(data_);
  }
  DeviceBuffer(DeviceBuffer &&other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void *data() const { return data_; }
  size_t bytes() const { return bytes_; }

private:
  void *data_ = nullptr;
  size_t bytes_ = 0;
};

uint64_t bytesOf(DType dtype, const Shape &shape) {
  uint64_t bytes = byteSize(dtype);
  for (int64_t size : shape)
    bytes *= static_cast<uint64_t>(size);
  return bytes;
}

/// A tensor in its own device allocation.
struct DeviceTensor {
  DeviceTensor(DType dtype, Shape shape)
      : dtype(dtype), shape(std::move(shape)),
        buffer(bytesOf(dtype, this->shape)) {}
  TensorView view() const { return {dtype, shape, buffer.data()}; }
  uint64_t bytes() const { return buffer.bytes(); }

  DType dtype;
  Shape shape;
  DeviceBuffer buffer;
};

uint16_t toBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even (finite)
  return static_cast<uint16_t>(bits >> 16);
}

/// 4 MiB of random values in [-1, 1) of `dtype` (f32 or bf16).
const std::vector<uint8_t> &randomPool(DType dtype) {
  static std::map<DType, std::vector<uint8_t>> pools;
  auto it = pools.find(dtype);
  if (it != pools.end())
    return it->second;
  constexpr size_t kBytes = 4u << 20;
  std::mt19937 random(20240611u + static_cast<unsigned>(dtype));
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<uint8_t> bytes(kBytes);
  if (dtype == DType::F32) {
    for (size_t i = 0; i < kBytes / 4; ++i) {
      float value = uniform(random);
      std::memcpy(bytes.data() + 4 * i, &value, 4);
    }
  } else if (dtype == DType::BF16) {
    for (size_t i = 0; i < kBytes / 2; ++i) {
      uint16_t value = toBf16(uniform(random));
      std::memcpy(bytes.data() + 2 * i, &value, 2);
    }
  } else {
    throw std::invalid_argument("no random inputs of " + typeName(dtype));
  }
  return pools.emplace(dtype, std::move(bytes)).first->second;
}

/// Fills `bytes` at `data` with the random pool of `dtype`: one upload, then
/// doubling device-to-device copies.
void fillRandom(void *data, uint64_t bytes, DType dtype, cudaStream_t stream) {
  if (bytes == 0 || gCheckOnly)
    return;
  const std::vector<uint8_t> &pool = randomPool(dtype);
  auto *target = static_cast<uint8_t *>(data);
  uint64_t done = std::min<uint64_t>(bytes, pool.size());
  // On the stream (not cudaMemcpy, whose pageable upload may still be in
  // flight when it returns, unordered with a non-blocking stream).
  cuda::check(cudaMemcpyAsync(target, pool.data(), done, cudaMemcpyHostToDevice,
                              stream),
              "cudaMemcpyAsync (random inputs)");
  while (done < bytes) {
    uint64_t count = std::min(done, bytes - done);
    cuda::check(cudaMemcpyAsync(target + done, target, count,
                                cudaMemcpyDeviceToDevice, stream),
                "cudaMemcpyAsync (random inputs)");
    done += count;
  }
  cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

void fillRandom(const DeviceTensor &tensor, cudaStream_t stream) {
  fillRandom(tensor.buffer.data(), tensor.bytes(), tensor.dtype, stream);
}

class Events {
public:
  explicit Events(size_t count) : events_(count, nullptr) {
    for (cudaEvent_t &event : events_)
      cuda::check(cudaEventCreate(&event), "cudaEventCreate");
  }
  ~Events() {
    for (cudaEvent_t event : events_)
      if (event)
        (void)cudaEventDestroy(event);
  }
  Events(const Events &) = delete;
  Events &operator=(const Events &) = delete;
  cudaEvent_t operator[](size_t i) const { return events_[i]; }

private:
  std::vector<cudaEvent_t> events_;
};

struct Timing {
  double medianMs = 0;
  double minMs = 0;
  double maxMs = 0;
  int reps = 0;
};

Timing summarize(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  Timing timing;
  timing.reps = static_cast<int>(ms.size());
  size_t n = ms.size();
  timing.medianMs = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  timing.minMs = ms.front();
  timing.maxMs = ms.back();
  return timing;
}

std::string describe(const Timing &t) {
  return format("median %.4g ms (min %.4g, max %.4g, %d runs)", t.medianMs,
                t.minMs, t.maxMs, t.reps);
}

//===----------------------------------------------------------------------===//
// The bench
//===----------------------------------------------------------------------===//

struct Row {
  std::string what, shape, braid, ceiling, ratio;
};

struct Result {
  std::string braid, ceiling, ratio;
};

/// The row of a measurement that --check-only only checked.
Result checked() { return {"checked", "-", "-"}; }

std::string ratioText(double value) {
  if (!std::isfinite(value))
    return "n/a";
  return format("%.2f", value);
}

class Bench {
public:
  explicit Bench(const Options &options) : options_(options) {
    started_ = Clock::now();
    if (gCheckOnly) {
      info_.name = "none (--check-only)";
      return;
    }
    cuda::check(cudaSetDevice(0), "cudaSetDevice(0)");
    info_ = cuda::deviceInfo(0);
    // The CudaExecutor's default workspace.
    cuda::createContext(ctx_, cuda::CudaExecutorOptions().workspaceBytes);
  }

  ~Bench() {
    if (gCheckOnly)
      return;
    (void)cudaDeviceSynchronize();
    cuda::destroyContext(ctx_);
  }

  Bench(const Bench &) = delete;
  Bench &operator=(const Bench &) = delete;

  void runAll() {
    if (!gCheckOnly)
      warmUp();
    gemms();
    attentions();
    memoryBound();
    launchOverhead();
  }

  /// The heading line and the table, last on stdout.
  void print() const {
    if (gCheckOnly)
      std::cout << "braid-gpu-bench --check-only"
                << (options_.quick ? " --quick" : "")
                << ": the arguments of every measurement pass the CUDA "
                   "registry's load-time checks; nothing ran on a GPU\n\n";
    int runtime = 0, driver = 0;
    (void)cudaRuntimeGetVersion(&runtime);
    (void)cudaDriverGetVersion(&driver);
    if (!gCheckOnly)
      std::cout << format("braid-gpu-bench on GPU 0: %s, %d SMs, %.1f GiB, "
                          "compute %d.%d; CUDA runtime %d.%d, driver %d.%d; "
                          "medians of up to %d timed runs%s; %.1f s\n\n",
                          info_.name.c_str(), info_.smCount,
                          static_cast<double>(info_.totalMemory) / (1u << 30),
                          info_.computeMajor, info_.computeMinor,
                          runtime / 1000, runtime % 1000 / 10, driver / 1000,
                          driver % 1000 / 10, options_.maxReps,
                          options_.quick ? " (--quick)" : "", elapsedSeconds());
    std::vector<Row> table;
    table.push_back({"what", "shape/dtype", "Braid", "ceiling", "ratio"});
    table.push_back({"", "", "", "", ""}); // the separator
    for (const Row &row : rows_)
      table.push_back(row);
    size_t widths[5] = {3, 3, 3, 3, 3};
    for (const Row &row : table) {
      const std::string *cells[] = {&row.what, &row.shape, &row.braid,
                                    &row.ceiling, &row.ratio};
      for (int c = 0; c < 5; ++c)
        widths[c] = std::max(widths[c], cells[c]->size());
    }
    for (size_t r = 0; r < table.size(); ++r) {
      const Row &row = table[r];
      const std::string *cells[] = {&row.what, &row.shape, &row.braid,
                                    &row.ceiling, &row.ratio};
      std::string line = "|";
      for (int c = 0; c < 5; ++c) {
        std::string cell = r == 1 ? std::string(widths[c], '-') : *cells[c];
        cell.resize(widths[c], r == 1 ? '-' : ' ');
        line += " " + cell + " |";
      }
      std::cout << line << "\n";
    }
    std::cout.flush();
  }

  int failures() const { return failures_; }

private:
  double elapsedSeconds() const {
    return std::chrono::duration<double>(Clock::now() - started_).count();
  }

  /// Runs one measurement into a row; an exception becomes a FAILED row.
  void measure(const std::string &what, const std::string &shape,
               const std::function<Result()> &body) {
    if (!broken_.empty()) {
      rows_.push_back({what, shape, "skipped: " + broken_, "", ""});
      ++failures_;
      return;
    }
    if (elapsedSeconds() > options_.timeLimitSeconds) {
      rows_.push_back({what, shape,
                       format("skipped: past the %.0f s time limit",
                              options_.timeLimitSeconds),
                       "", ""});
      ++failures_;
      return;
    }
    progress(what + " " + shape + " ...");
    try {
      Result result = body();
      rows_.push_back(
          {what, shape, result.braid, result.ceiling, result.ratio});
      progress("  " + result.braid + " vs " + result.ceiling + ": ratio " +
               result.ratio);
    } catch (const std::exception &error) {
      std::string message = cellText(error.what());
      rows_.push_back({what, shape, "FAILED: " + message, "", ""});
      ++failures_;
      progress("  FAILED: " + std::string(error.what()));
      checkContext();
    }
  }

  /// After a failure: a sticky CUDA error (an illegal address, a kernel
  /// fault) breaks the context, and every later measurement is skipped.
  void checkContext() {
    (void)cudaGetLastError();
    cudaError_t status = cudaDeviceSynchronize();
    (void)cudaGetLastError();
    if (status == cudaSuccess)
      return;
    status = cudaDeviceSynchronize();
    (void)cudaGetLastError();
    if (status == cudaSuccess)
      return;
    broken_ = std::string("the CUDA context is broken (") +
              cudaGetErrorName(status) + ")";
    progress(broken_ + "; skipping the remaining measurements");
  }

  /// Times `op` (enqueued on the bench's stream) with CUDA events: one
  /// untimed call (lazy initialization), one to size the repetitions, a
  /// warm-up, then up to maxReps timed calls.
  Timing timeGpu(const std::function<void()> &op) const {
    cudaStream_t stream = ctx_.stream;
    op();
    cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    Events probe(2);
    cuda::check(cudaEventRecord(probe[0], stream), "cudaEventRecord");
    op();
    cuda::check(cudaEventRecord(probe[1], stream), "cudaEventRecord");
    cuda::check(cudaEventSynchronize(probe[1]), "cudaEventSynchronize");
    float estimate = 0;
    cuda::check(cudaEventElapsedTime(&estimate, probe[0], probe[1]),
                "cudaEventElapsedTime");
    int warm = estimate < 1 ? 5 : estimate < 20 ? 2 : 0;
    for (int i = 0; i < warm; ++i)
      op();
    int reps = static_cast<int>(std::min<double>(
        options_.maxReps, options_.budgetMs / std::max(estimate, 1e-3f)));
    reps = std::max(reps, std::min(3, options_.maxReps));
    Events events(2 * static_cast<size_t>(reps));
    for (int r = 0; r < reps; ++r) {
      cuda::check(cudaEventRecord(events[2 * r], stream), "cudaEventRecord");
      op();
      cuda::check(cudaEventRecord(events[2 * r + 1], stream),
                  "cudaEventRecord");
    }
    cuda::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
      float elapsed = 0;
      cuda::check(
          cudaEventElapsedTime(&elapsed, events[2 * r], events[2 * r + 1]),
          "cudaEventElapsedTime");
      ms.push_back(elapsed);
    }
    return summarize(ms);
  }

  /// Times `op`, which waits for the GPU itself, by the host clock.
  Timing timeWall(const std::function<void()> &op) const {
    auto once = [&] {
      Clock::time_point start = Clock::now();
      op();
      return std::chrono::duration<double, std::milli>(Clock::now() - start)
          .count();
    };
    once(); // first call: graph capture, lazy initialization
    double estimate = once();
    for (int i = 0; i < 3; ++i)
      once();
    int reps = static_cast<int>(std::min<double>(
        options_.maxReps, options_.budgetMs / std::max(estimate, 1e-3)));
    reps = std::max(reps, std::min(3, options_.maxReps));
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r)
      ms.push_back(once());
    return summarize(ms);
  }

  /// The registry entry of `kernel.op()`, after the load-time check of
  /// `args` (a shape the kernel rejects fails the row with its message).
  const KernelInfo &kernelFor(const KernelArgs &args) const {
    const KernelInfo *info = cuda::cudaKernels().lookup(args.kernel->op());
    if (!info)
      throw std::runtime_error("the CUDA backend has no '" + args.kernel->op() +
                               "' kernel");
    cuda::cudaKernels().verify(*info, args);
    return *info;
  }

  KernelArgs argsFor(const plan::Kernel &kernel,
                     const std::vector<const DeviceTensor *> &inputs,
                     const std::vector<const DeviceTensor *> &outputs) {
    KernelArgs args;
    args.kernel = &kernel;
    for (const DeviceTensor *tensor : inputs)
      args.inputs.push_back(tensor->view());
    for (const DeviceTensor *tensor : outputs)
      args.outputs.push_back(tensor->view());
    args.numIndices = 0;
    args.context = &ctx_;
    return args;
  }

  /// Row-major C[m, n] = A[m, k] B[k, n] through cublasGemmEx: the column-
  /// major C^T = B^T A^T, as the matmul kernel issues it.
  void cublasGemm(DType dtype, int64_t m, int64_t n, int64_t k, const void *a,
                  const void *b, void *c) const {
    static const float one = 1.f, zero = 0.f;
    cudaDataType_t type = cuda::cublasDataType(dtype);
    cuda::check(cublasGemmEx(ctx_.cublas, CUBLAS_OP_N, CUBLAS_OP_N,
                             static_cast<int>(n), static_cast<int>(m),
                             static_cast<int>(k), &one, b, type,
                             static_cast<int>(n), a, type, static_cast<int>(k),
                             &zero, c, type, static_cast<int>(n),
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx");
  }

  /// Half a second of bf16 GEMMs first, so the clocks are up before the
  /// first measurement.
  void warmUp() {
    try {
      int64_t n = 4096;
      DeviceTensor a(DType::BF16, {n, n}), b(DType::BF16, {n, n}),
          c(DType::BF16, {n, n});
      fillRandom(a, ctx_.stream);
      fillRandom(b, ctx_.stream);
      Clock::time_point end =
          Clock::now() + std::chrono::milliseconds(options_.quick ? 200 : 500);
      while (Clock::now() < end) {
        for (int i = 0; i < 10; ++i)
          cublasGemm(DType::BF16, n, n, n, a.buffer.data(), b.buffer.data(),
                     c.buffer.data());
        cuda::check(cudaStreamSynchronize(ctx_.stream), "warm-up GEMMs");
      }
      progress("warmed up with bf16 GEMMs");
    } catch (const std::exception &error) {
      progress(std::string("warm-up failed: ") + error.what());
      checkContext();
    }
  }

  //===--------------------------------------------------------------------===//
  // GEMM
  //===--------------------------------------------------------------------===//

  void gemms() {
    struct Size {
      int64_t m, n, k;
    };
    std::vector<Size> sizes =
        options_.quick
            ? std::vector<Size>{{4096, 4096, 4096}, {2048, 2048, 512}}
            : std::vector<Size>{{8192, 8192, 8192}, {4096, 4096, 1024}};
    for (DType dtype : {DType::BF16, DType::F32})
      for (const Size &size : sizes)
        measure("GEMM: matmul vs cublasGemmEx",
                format("%ldx%ldx%ld %s", static_cast<long>(size.m),
                       static_cast<long>(size.n), static_cast<long>(size.k),
                       typeName(dtype).c_str()),
                [&] { return gemm(dtype, size.m, size.n, size.k); });
  }

  Result gemm(DType dtype, int64_t m, int64_t n, int64_t k) {
    DeviceTensor a(dtype, {m, k}), b(dtype, {k, n}), c(dtype, {m, n});
    fillRandom(a, ctx_.stream);
    fillRandom(b, ctx_.stream);
    plan::Kernel kernel;
    kernel.set_op("matmul");
    KernelArgs args = argsFor(kernel, {&a, &b}, {&c});
    const KernelInfo &info = kernelFor(args);
    if (gCheckOnly)
      return checked();
    Timing braid = timeGpu([&] { info.run(args); });
    progress("  Braid matmul: " + describe(braid));
    Timing cublas;
    try {
      cublas = timeGpu([&] {
        cublasGemm(dtype, m, n, k, a.buffer.data(), b.buffer.data(),
                   c.buffer.data());
      });
    } catch (const std::exception &error) {
      throw std::runtime_error(std::string("cuBLAS alone: ") + error.what());
    }
    progress("  cublasGemmEx: " + describe(cublas));
    double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                   static_cast<double>(k);
    double braidRate = flops / (braid.medianMs * 1e-3) / 1e12;
    double cublasRate = flops / (cublas.medianMs * 1e-3) / 1e12;
    double &best = gemmRate_[dtype];
    best = std::max(best, cublasRate);
    return {format("%.1f TFLOP/s", braidRate),
            format("%.1f TFLOP/s", cublasRate),
            ratioText(braidRate / cublasRate)};
  }

  //===--------------------------------------------------------------------===//
  // Attention
  //===--------------------------------------------------------------------===//

  void attentions() {
    struct Size {
      int64_t b, h, s, d;
    };
    std::vector<Size> sizes =
        options_.quick
            ? std::vector<Size>{{1, 16, 2048, 128}}
            : std::vector<Size>{{1, 32, 4096, 128}, {4, 16, 2048, 128}};
    for (DType dtype : {DType::BF16, DType::F32})
      for (const Size &size : sizes)
        for (bool causal : {false, true})
          measure(std::string("attention") + (causal ? " causal" : "") +
                      " vs cuBLAS " + typeName(dtype) + " GEMM rate",
                  format("b%ld h%ld s%ld d%ld %s", static_cast<long>(size.b),
                         static_cast<long>(size.h), static_cast<long>(size.s),
                         static_cast<long>(size.d), typeName(dtype).c_str()),
                  [&] {
                    return attention(dtype, size.b, size.h, size.s, size.d,
                                     causal);
                  });
  }

  Result attention(DType dtype, int64_t b, int64_t h, int64_t s, int64_t d,
                   bool causal) {
    Shape shape = {b, h, s, d};
    DeviceTensor q(dtype, shape), k(dtype, shape), v(dtype, shape),
        out(dtype, shape);
    fillRandom(q, ctx_.stream);
    fillRandom(k, ctx_.stream);
    fillRandom(v, ctx_.stream);
    plan::Kernel kernel;
    kernel.set_op("attention");
    (*kernel.mutable_attrs())["causal"].set_b(causal);
    (*kernel.mutable_attrs())["scale"].set_f(1.0 /
                                             std::sqrt(static_cast<double>(d)));
    KernelArgs args = argsFor(kernel, {&q, &k, &v}, {&out});
    const KernelInfo &info = kernelFor(args);
    if (gCheckOnly)
      return checked();
    Timing braid = timeGpu([&] { info.run(args); });
    progress("  Braid attention: " + describe(braid));
    double flops = 4.0 * static_cast<double>(b) * static_cast<double>(h) *
                   static_cast<double>(s) * static_cast<double>(s) *
                   static_cast<double>(d) * (causal ? 0.5 : 1.0);
    double rate = flops / (braid.medianMs * 1e-3) / 1e12;
    auto ceiling = gemmRate_.find(dtype);
    if (ceiling == gemmRate_.end() || !(ceiling->second > 0))
      return {format("%.1f TFLOP/s", rate), "n/a (no GEMM rate)", "n/a"};
    return {format("%.1f TFLOP/s", rate),
            format("%.1f TFLOP/s", ceiling->second),
            ratioText(rate / ceiling->second)};
  }

  //===--------------------------------------------------------------------===//
  // Memory-bound kernels
  //===--------------------------------------------------------------------===//

  struct Operand {
    DType dtype;
    Shape shape;
  };

  /// Rows of `width` elements of `bytesPerElement` (all operands together)
  /// that move about the target bytes; a multiple of 64.
  int64_t rowsFor(int64_t width, double bytesPerElement) const {
    double target = options_.quick ? 256.0 * (1 << 20) : 1024.0 * (1 << 20);
    auto rows = static_cast<int64_t>(target / (bytesPerElement * width));
    return std::max<int64_t>(64, rows / 64 * 64);
  }

  void memoryBound() {
    const int64_t w = 4096;
    for (DType t : {DType::F32, DType::BF16}) {
      double e = static_cast<double>(byteSize(t));
      int64_t r = rowsFor(w, 3 * e);
      memoryRow("add (same shapes)", {{t, {r, w}}, {t, {r, w}}}, {{t, {r, w}}},
                "add", [](plan::Kernel &) {});
      r = rowsFor(w, 2 * e);
      memoryRow("softmax (last dim)", {{t, {r, w}}}, {{t, {r, w}}}, "softmax",
                [](plan::Kernel &k) { (*k.mutable_attrs())["dim"].set_i(1); });
      memoryRow("layer_norm (last dim)", {{t, {r, w}}, {t, {w}}, {t, {w}}},
                {{t, {r, w}}}, "layer_norm", [](plan::Kernel &k) {
                  (*k.mutable_attrs())["axis"].set_i(1);
                  (*k.mutable_attrs())["epsilon"].set_f(1e-5);
                });
      memoryRow("rms_norm (last dim)", {{t, {r, w}}, {t, {w}}}, {{t, {r, w}}},
                "rms_norm", [](plan::Kernel &k) {
                  (*k.mutable_attrs())["axis"].set_i(1);
                  (*k.mutable_attrs())["epsilon"].set_f(1e-6);
                });
      bool tanh = t == DType::BF16;
      memoryRow(tanh ? "gelu (tanh)" : "gelu (erf)", {{t, {r, w}}},
                {{t, {r, w}}}, "gelu", [tanh](plan::Kernel &k) {
                  (*k.mutable_attrs())["tanh"].set_b(tanh);
                });
      memoryRow("concat (last dim)", {{t, {r, w / 2}}, {t, {r, w / 2}}},
                {{t, {r, w}}}, "concat",
                [](plan::Kernel &k) { (*k.mutable_attrs())["dim"].set_i(1); });
    }
    int64_t r = rowsFor(w, 6);
    memoryRow("cast f32 -> bf16", {{DType::F32, {r, w}}},
              {{DType::BF16, {r, w}}}, "cast", [](plan::Kernel &) {});
    r = rowsFor(w, 8);
    memoryRow(
        "transpose (1,0)", {{DType::F32, {r, w}}}, {{DType::F32, {w, r}}},
        "transpose", [](plan::Kernel &k) {
          for (int64_t p : {1, 0})
            (*k.mutable_attrs())["permutation"].mutable_ints()->add_values(p);
        });
    // [B, S, H, D] -> [B, H, S, D], the attention layout change.
    int64_t s = 4096, h = 32, d = 128;
    int64_t batch = std::max<int64_t>(
        1, static_cast<int64_t>((options_.quick ? 256.0 : 1024.0) * (1 << 20) /
                                (4.0 * s * h * d)));
    memoryRow(
        "transpose (0,2,1,3)", {{DType::BF16, {batch, s, h, d}}},
        {{DType::BF16, {batch, h, s, d}}}, "transpose", [](plan::Kernel &k) {
          for (int64_t p : {0, 2, 1, 3})
            (*k.mutable_attrs())["permutation"].mutable_ints()->add_values(p);
        });
  }

  void memoryRow(const std::string &what, std::vector<Operand> inputs,
                 std::vector<Operand> outputs, const std::string &op,
                 const std::function<void(plan::Kernel &)> &setAttrs) {
    std::string shape;
    for (const Operand &input : inputs)
      shape += (shape.empty() ? "" : ", ") + shapeText(input.shape);
    shape += " -> ";
    for (size_t i = 0; i < outputs.size(); ++i)
      shape += (i ? ", " : "") + shapeText(outputs[i].shape);
    // One type for the row unless it changes (cast).
    std::string types = typeName(inputs[0].dtype);
    if (outputs[0].dtype != inputs[0].dtype)
      types += "->" + typeName(outputs[0].dtype);
    shape += " " + types;
    measure(what, shape, [&] {
      std::vector<DeviceTensor> ins, outs;
      ins.reserve(inputs.size());
      outs.reserve(outputs.size());
      uint64_t bytes = 0;
      for (const Operand &operand : inputs) {
        ins.emplace_back(operand.dtype, operand.shape);
        fillRandom(ins.back(), ctx_.stream);
        bytes += ins.back().bytes();
      }
      for (const Operand &operand : outputs) {
        outs.emplace_back(operand.dtype, operand.shape);
        bytes += outs.back().bytes();
      }
      plan::Kernel kernel;
      kernel.set_op(op);
      setAttrs(kernel);
      std::vector<const DeviceTensor *> inPointers, outPointers;
      for (const DeviceTensor &tensor : ins)
        inPointers.push_back(&tensor);
      for (const DeviceTensor &tensor : outs)
        outPointers.push_back(&tensor);
      KernelArgs args = argsFor(kernel, inPointers, outPointers);
      const KernelInfo &info = kernelFor(args);
      if (gCheckOnly)
        return checked();
      Timing braid = timeGpu([&] { info.run(args); });
      progress("  Braid " + op + ": " + describe(braid) + ", " + mib(bytes) +
               " moved");
      // The ceiling: a copy that reads and writes as many bytes in all.
      uint64_t half = (bytes / 2 + 255) / 256 * 256;
      DeviceBuffer source(half), target(half);
      fillRandom(source.data(), half, DType::F32, ctx_.stream);
      Timing copy = timeGpu([&] {
        cuda::check(cudaMemcpyAsync(target.data(), source.data(), half,
                                    cudaMemcpyDeviceToDevice, ctx_.stream),
                    "cudaMemcpyAsync (device to device)");
      });
      progress("  cudaMemcpyAsync of " + mib(half) + ": " + describe(copy));
      double braidRate = static_cast<double>(bytes) / (braid.medianMs * 1e-3);
      double copyRate =
          2.0 * static_cast<double>(half) / (copy.medianMs * 1e-3);
      return Result{format("%.0f GB/s", braidRate / 1e9),
                    format("%.0f GB/s", copyRate / 1e9),
                    ratioText(braidRate / copyRate)};
    });
  }

  //===--------------------------------------------------------------------===//
  // Launch overhead
  //===--------------------------------------------------------------------===//

  static constexpr int kOps = 1000;
  static constexpr int64_t kOpElements = 256;

  /// One stream of kOps `neg` kernels chained through kOps + 1 buffers of
  /// f32[256] (the logic of unittests/plan/PlanBuilder).
  static plan::Plan chainPlan() {
    plan::Plan p;
    p.set_format_version(kFormatVersion);
    p.mutable_mesh()->add_axis_names("x");
    p.mutable_mesh()->add_axis_sizes(1);
    const uint64_t bytes = kOpElements * 4;
    for (uint32_t id = 0; id <= kOps; ++id) {
      plan::Buffer *buffer = p.add_buffers();
      buffer->set_id(id);
      buffer->set_offset(id * ((bytes + 63) / 64 * 64));
      buffer->set_dtype(plan::F32);
      buffer->add_shape(kOpElements);
      p.set_arena_bytes(buffer->offset() + bytes);
    }
    plan::Binding *input = p.add_inputs();
    input->set_name("x");
    input->set_buffer(0);
    plan::Binding *output = p.add_outputs();
    output->set_name("y");
    output->set_buffer(kOps);
    plan::Stream *stream = p.add_streams();
    stream->set_name("compute");
    for (uint32_t i = 0; i < kOps; ++i) {
      plan::Kernel *kernel = stream->add_instructions()->mutable_kernel();
      kernel->set_op("neg");
      kernel->add_inputs(i);
      kernel->add_outputs(i + 1);
    }
    return p;
  }

  void launchOverhead() {
    std::string shape = format("%d x neg f32[%ld], 1 stream", kOps,
                               static_cast<long>(kOpElements));
    // Direct calls: the same kernels without the executor.
    std::unique_ptr<DeviceBuffer> chain;
    plan::Kernel neg;
    neg.set_op("neg");
    std::vector<KernelArgs> calls;
    Timing direct, directGraph;
    bool haveDirect = false, haveDirectGraph = false;
    auto directRun = [&] {
      const KernelInfo *info = cuda::cudaKernels().lookup("neg");
      for (const KernelArgs &args : calls)
        info->run(args);
      cuda::check(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize");
    };
    auto prepareDirect = [&] {
      if (!calls.empty())
        return;
      const uint64_t stride = kOpElements * 4;
      chain = std::make_unique<DeviceBuffer>((kOps + 1) * stride);
      fillRandom(chain->data(), chain->bytes(), DType::F32, ctx_.stream);
      auto *base = static_cast<uint8_t *>(chain->data());
      for (int i = 0; i < kOps; ++i) {
        KernelArgs args;
        args.kernel = &neg;
        args.inputs.push_back({DType::F32, {kOpElements}, base + i * stride});
        args.outputs.push_back(
            {DType::F32, {kOpElements}, base + (i + 1) * stride});
        args.context = &ctx_;
        if (i == 0)
          (void)kernelFor(args);
        calls.push_back(std::move(args));
      }
    };
    for (bool graph : {false, true}) {
      measure(
          graph ? "launch overhead: executor, CUDA graph, vs direct calls "
                  "in a graph"
                : "launch overhead: executor vs direct kernel calls",
          shape, [&] {
            plan::Plan proto = chainPlan();
            LoadOptions load;
            load.kernels = &cuda::cudaKernels();
            load.worldSize = 1;
            LoadedPlan loaded = validatePlan(proto, load);
            if (gCheckOnly) {
              prepareDirect();
              return checked();
            }
            auto comm =
                cuda::makeCudaCommunicator(loaded.mesh, 1, nullptr, nullptr);
            cuda::CudaExecutorOptions options;
            options.graph = graph;
            options.timing = false;
            cuda::CudaExecutor executor(loaded, *comm, nullptr, options);
            std::vector<float> x(kOpElements);
            std::mt19937 random(7);
            std::uniform_real_distribution<float> uniform(-1.f, 1.f);
            for (float &value : x)
              value = uniform(random);
            executor.setInput("x", x.data(), x.size() * 4);
            Timing braid = timeWall([&] { executor.run(); });
            // neg applied an even number of times is the identity.
            std::vector<uint8_t> y = executor.readOutput("y");
            if (y.size() != x.size() * 4 ||
                std::memcmp(y.data(), x.data(), y.size()) != 0)
              throw std::runtime_error(
                  "the chain of neg kernels gave a wrong result");
            progress(std::string("  executor") + (graph ? " (graph)" : "") +
                     ": " + describe(braid));
            double braidUs = braid.medianMs * 1e3 / kOps;
            prepareDirect();
            if (!graph && !haveDirect) {
              direct = timeWall(directRun);
              haveDirect = true;
              progress("  direct calls: " + describe(direct));
            }
            if (graph && !haveDirectGraph) {
              directGraph = timeDirectGraph(calls);
              haveDirectGraph = true;
              progress("  direct calls in a graph: " + describe(directGraph));
            }
            double ceilingUs =
                (graph ? directGraph : direct).medianMs * 1e3 / kOps;
            return Result{format("%.2f us/op", braidUs),
                          format("%.2f us/op", ceilingUs),
                          ratioText(ceilingUs / braidUs)};
          });
    }
  }

  /// The direct calls captured into a CUDA graph by hand, replayed.
  Timing timeDirectGraph(const std::vector<KernelArgs> &calls) {
    const KernelInfo *info = cuda::cudaKernels().lookup("neg");
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    struct Cleanup {
      cudaGraph_t &graph;
      cudaGraphExec_t &exec;
      ~Cleanup() {
        if (exec)
          (void)cudaGraphExecDestroy(exec);
        if (graph)
          (void)cudaGraphDestroy(graph);
      }
    } cleanup{graph, exec};
    cuda::check(
        cudaStreamBeginCapture(ctx_.stream, cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture");
    try {
      for (const KernelArgs &args : calls)
        info->run(args);
    } catch (...) {
      cudaGraph_t partial = nullptr;
      (void)cudaStreamEndCapture(ctx_.stream, &partial);
      if (partial)
        (void)cudaGraphDestroy(partial);
      (void)cudaGetLastError();
      throw;
    }
    cuda::check(cudaStreamEndCapture(ctx_.stream, &graph),
                "cudaStreamEndCapture");
    cuda::check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    return timeWall([&] {
      cuda::check(cudaGraphLaunch(exec, ctx_.stream), "cudaGraphLaunch");
      cuda::check(cudaStreamSynchronize(ctx_.stream), "cudaStreamSynchronize");
    });
  }

  Options options_;
  Clock::time_point started_;
  cuda::DeviceInfo info_;
  cuda::CudaContext ctx_;
  std::map<DType, double> gemmRate_;
  std::vector<Row> rows_;
  int failures_ = 0;
  std::string broken_;
};

} // namespace

int main(int argc, char **argv) {
  Options options;
  try {
    options = parseOptions(argc, argv);
  } catch (const UsageError &error) {
    std::cerr << "braid-gpu-bench: " << error.what() << "\n";
    return 2;
  }
  gCheckOnly = options.checkOnly;
  std::string missing = gCheckOnly ? "" : cuda::cudaUnavailableReason();
  if (!missing.empty()) {
    std::cerr << "braid-gpu-bench: no CUDA GPU: " << missing << "\n";
    return 1;
  }
  try {
    Bench bench(options);
    bench.runAll();
    bench.print();
    return bench.failures() ? 3 : 0;
  } catch (const std::exception &error) {
    // Only setting up (the device, the stream, cuBLAS) gets here.
    std::cerr << "braid-gpu-bench: error: " << error.what() << "\n";
    return 3;
  }
}
