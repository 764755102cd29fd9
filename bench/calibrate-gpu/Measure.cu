//===- Measure.cu - what calibrate-gpu measures on a GPU ------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "Measure.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace calibrate {

namespace {

void check(cudaError_t status, const char *call) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(call) + ": " +
                             cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char *call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + ": cuBLAS status " +
                             std::to_string(static_cast<int>(status)));
}

void check(ncclResult_t status, const char *call) {
  if (status != ncclSuccess)
    throw std::runtime_error(std::string(call) + ": " +
                             ncclGetErrorString(status));
}

#define CHECK(call) check((call), #call)

/// Device memory freed on scope exit.
class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    CHECK(cudaMalloc(&data_, std::max<size_t>(bytes, 16)));
    CHECK(cudaMemset(data_, 0, std::max<size_t>(bytes, 16)));
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void *get() const { return data_; }
  size_t bytes() const { return bytes_; }

private:
  void *data_ = nullptr;
  size_t bytes_ = 0;
};

class Stream {
public:
  Stream() {
    CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  operator cudaStream_t() const { return stream_; }

private:
  cudaStream_t stream_;
};

class Event {
public:
  Event() { CHECK(cudaEventCreate(&event_)); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  operator cudaEvent_t() const { return event_; }

private:
  cudaEvent_t event_;
};

class Blas {
public:
  Blas() { CHECK(cublasCreate(&handle_)); }
  ~Blas() { cublasDestroy(handle_); }
  Blas(const Blas &) = delete;
  Blas &operator=(const Blas &) = delete;
  operator cublasHandle_t() const { return handle_; }

private:
  cublasHandle_t handle_;
};

/// Seconds between two recorded events.
double elapsed(const Event &start, const Event &stop) {
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms * 1e-3;
}

/// Seconds per call of `launch` on `stream`: one warm-up, then enough
/// repetitions to last ~`target` seconds (at least 3, at most 2000).
double timeIt(cudaStream_t stream, const std::function<void()> &launch,
              double target = 0.03) {
  Event start, stop;
  launch();
  CHECK(cudaEventRecord(start, stream));
  launch();
  CHECK(cudaEventRecord(stop, stream));
  double once = std::max(elapsed(start, stop), 1e-7);
  int repeats = static_cast<int>(std::clamp(target / once, 3.0, 2000.0));
  CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < repeats; ++i)
    launch();
  CHECK(cudaEventRecord(stop, stream));
  return elapsed(start, stop) / repeats;
}

__global__ void emptyKernel() {}

/// Copies `count` 16-byte words `passes` times over (grid-stride).
__global__ void copyKernel(const int4 *__restrict__ in, int4 *__restrict__ out,
                           size_t count, int passes) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int pass = 0; pass < passes; ++pass)
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
         i < count; i += stride)
      out[i] = in[i];
}

/// 4 independent FMA chains of `iterations` steps per thread.
__global__ void fmaKernel(float *out, int iterations) {
  float a = threadIdx.x * 1e-3f, b = a + 1, c = a + 2, d = a + 3;
  const float x = 0.999f, y = 1e-4f;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, x, y);
    b = fmaf(b, x, y);
    c = fmaf(c, x, y);
    d = fmaf(d, x, y);
  }
  if (a + b + c + d == 12345.0f)
    out[threadIdx.x] = a;
}

/// Softmax over rows of `columns` bf16 values, in place; one block per row.
__global__ void softmaxKernel(__nv_bfloat16 *data, int columns) {
  __nv_bfloat16 *row = data + static_cast<size_t>(blockIdx.x) * columns;
  __shared__ float partial[32];
  float maximum = -INFINITY;
  for (int i = threadIdx.x; i < columns; i += blockDim.x)
    maximum = fmaxf(maximum, __bfloat162float(row[i]));
  for (int offset = 16; offset > 0; offset /= 2)
    maximum = fmaxf(maximum, __shfl_xor_sync(0xffffffff, maximum, offset));
  if (threadIdx.x % 32 == 0)
    partial[threadIdx.x / 32] = maximum;
  __syncthreads();
  maximum = -INFINITY;
  for (int w = 0; w < blockDim.x / 32; ++w)
    maximum = fmaxf(maximum, partial[w]);
  __syncthreads();
  float sum = 0;
  for (int i = threadIdx.x; i < columns; i += blockDim.x)
    sum += __expf(__bfloat162float(row[i]) - maximum);
  for (int offset = 16; offset > 0; offset /= 2)
    sum += __shfl_xor_sync(0xffffffff, sum, offset);
  if (threadIdx.x % 32 == 0)
    partial[threadIdx.x / 32] = sum;
  __syncthreads();
  sum = 0;
  for (int w = 0; w < blockDim.x / 32; ++w)
    sum += partial[w];
  float inverse = 1 / sum;
  for (int i = threadIdx.x; i < columns; i += blockDim.x)
    row[i] =
        __float2bfloat16(__expf(__bfloat162float(row[i]) - maximum) * inverse);
}

size_t freeMemory() {
  size_t free = 0, total = 0;
  CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

/// One GEMM C[M,N] = A[M,K] B[K,N] (column-major, as cuBLAS sees it).
struct Gemm {
  int m, n, k;
};

void runGemm(cublasHandle_t blas, const Gemm &g, bool bf16, const void *a,
             const void *b, void *c) {
  const float alpha = 1, beta = 0;
  cudaDataType type = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  cublasComputeType_t compute =
      bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
  CHECK(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, g.m, g.n, g.k, &alpha, a,
                     type, g.m, b, type, g.k, &beta, c, type, g.m, compute,
                     CUBLAS_GEMM_DEFAULT));
}

/// Launches the copy kernel on `blocks` blocks.
void launchCopy(const DeviceBuffer &in, DeviceBuffer &out, int blocks,
                int threads, int passes, cudaStream_t stream) {
  size_t words = in.bytes() / sizeof(int4);
  copyKernel<<<blocks, threads, 0, stream>>>(
      static_cast<const int4 *>(in.get()), static_cast<int4 *>(out.get()),
      words, passes);
  CHECK(cudaGetLastError());
}

} // namespace

bool queryDevice(DeviceInfo &info, std::string &error) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    error = std::string("no usable CUDA GPU (cudaGetDeviceCount: ") +
            cudaGetErrorString(status) + ")";
    return false;
  }
  if (count == 0) {
    error = "no CUDA GPU is visible to this process";
    return false;
  }
  cudaDeviceProp prop;
  status = cudaGetDeviceProperties(&prop, 0);
  if (status != cudaSuccess) {
    error =
        std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(status);
    return false;
  }
  info.name = prop.name;
  info.smCount = prop.multiProcessorCount;
  info.memoryBytes = static_cast<double>(prop.totalGlobalMem);
  info.major = prop.major;
  info.minor = prop.minor;
  info.deviceCount = count;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  info.cudaVersion = std::to_string(runtime / 1000) + "." +
                     std::to_string(runtime % 1000 / 10);
  int nccl = 0;
  ncclGetVersion(&nccl);
  info.ncclVersion = std::to_string(nccl / 10000) + "." +
                     std::to_string(nccl / 100 % 100) + "." +
                     std::to_string(nccl % 100);
  return true;
}

std::vector<Sample> measureGemm(const std::string &dtype, bool quick) {
  CHECK(cudaSetDevice(0));
  bool bf16 = dtype == "bf16";
  size_t element = bf16 ? 2 : 4;
  std::vector<Gemm> shapes = {{256, 256, 256},    {512, 512, 512},
                              {1024, 1024, 1024}, {2048, 2048, 2048},
                              {4096, 4096, 4096}, {8192, 8192, 8192}};
  if (!quick) {
    // Transformer-like: tokens x (3 * hidden) x hidden, and the FFN.
    shapes.push_back({8192, 12288, 4096});
    shapes.push_back({8192, 4096, 16384});
    shapes.push_back({16384, 8192, 8192});
  }
  size_t largest = 0;
  for (const Gemm &g : shapes)
    largest = std::max(
        {largest, size_t(g.m) * g.k, size_t(g.k) * g.n, size_t(g.m) * g.n});
  largest *= element;
  DeviceBuffer a(largest), b(largest), c(largest);
  Blas blas;
  Stream stream;
  CHECK(cublasSetStream(blas, stream));
  std::vector<Sample> samples;
  for (const Gemm &g : shapes) {
    double seconds = timeIt(
        stream, [&] { runGemm(blas, g, bf16, a.get(), b.get(), c.get()); });
    samples.push_back({std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
                           std::to_string(g.k),
                       2.0 * g.m * g.n * g.k, seconds});
  }
  return samples;
}

std::vector<Sample> measureAttention(bool quick) {
  CHECK(cudaSetDevice(0));
  const int heads = 32, dim = 128; // batch 2 x 16 heads
  std::vector<int> lengths = {512, 1024, 2048};
  if (!quick)
    lengths.push_back(4096);
  int longest = lengths.back();
  while (longest > 512 &&
         size_t(heads) * longest * longest * 2 * 2 > freeMemory() / 2)
    longest /= 2;
  size_t qkv = size_t(heads) * longest * dim * 2;
  DeviceBuffer q(qkv), k(qkv), v(qkv), out(qkv);
  DeviceBuffer scores(size_t(heads) * longest * longest * 2);
  Blas blas;
  Stream stream;
  CHECK(cublasSetStream(blas, stream));
  std::vector<Sample> samples;
  for (int s : lengths) {
    if (s > longest)
      break;
    const float alpha = 1, beta = 0;
    long long qStride = static_cast<long long>(s) * dim;
    long long sStride = static_cast<long long>(s) * s;
    double seconds = timeIt(stream, [&] {
      // Row-major scores[S,S] = Q K^T is column-major K' Q' with K'^T.
      CHECK(cublasGemmStridedBatchedEx(
          blas, CUBLAS_OP_T, CUBLAS_OP_N, s, s, dim, &alpha, k.get(),
          CUDA_R_16BF, dim, qStride, q.get(), CUDA_R_16BF, dim, qStride, &beta,
          scores.get(), CUDA_R_16BF, s, sStride, heads, CUBLAS_COMPUTE_32F,
          CUBLAS_GEMM_DEFAULT));
      softmaxKernel<<<heads * s, 256, 0, stream>>>(
          static_cast<__nv_bfloat16 *>(scores.get()), s);
      CHECK(cudaGetLastError());
      // Row-major out[S,D] = P V is column-major V' P'.
      CHECK(cublasGemmStridedBatchedEx(
          blas, CUBLAS_OP_N, CUBLAS_OP_N, dim, s, s, &alpha, v.get(),
          CUDA_R_16BF, dim, qStride, scores.get(), CUDA_R_16BF, s, sStride,
          &beta, out.get(), CUDA_R_16BF, dim, qStride, heads,
          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    double pairs = double(heads) * s * s;
    samples.push_back(
        {"S=" + std::to_string(s), pairs * (4.0 * dim + 5), seconds});
  }
  return samples;
}

std::vector<Sample> measureMemory(bool quick) {
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  size_t largest = size_t(1) << 30;
  while (largest > (size_t(1) << 24) && 2 * largest > freeMemory() / 2)
    largest /= 2;
  DeviceBuffer in(largest), out(largest);
  Stream stream;
  std::vector<Sample> samples;
  int blocks = prop.multiProcessorCount * 8;
  for (size_t bytes = size_t(1) << 16; bytes <= largest;
       bytes *= quick ? 16 : 4) {
    size_t words = bytes / sizeof(int4);
    double seconds = timeIt(stream, [&] {
      int needed =
          static_cast<int>(std::min<size_t>(blocks, (words + 255) / 256));
      copyKernel<<<std::max(needed, 1), 256, 0, stream>>>(
          static_cast<const int4 *>(in.get()), static_cast<int4 *>(out.get()),
          words, 1);
      CHECK(cudaGetLastError());
    });
    samples.push_back(
        {std::to_string(bytes >> 10) + " KiB", 2.0 * bytes, seconds});
  }
  return samples;
}

Sample measureVectorFlops() {
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  DeviceBuffer sink(4096 * sizeof(float));
  Stream stream;
  const int iterations = 1 << 14, threads = 256;
  int blocks = prop.multiProcessorCount * 16;
  double seconds = timeIt(stream, [&] {
    fmaKernel<<<blocks, threads, 0, stream>>>(static_cast<float *>(sink.get()),
                                              iterations);
    CHECK(cudaGetLastError());
  });
  double flops = double(blocks) * threads * iterations * 4 * 2;
  return {"fma", flops, seconds};
}

double measureKernelOverhead() {
  CHECK(cudaSetDevice(0));
  Stream stream;
  const int launches = 2000;
  return timeIt(stream,
                [&] {
                  for (int i = 0; i < launches; ++i)
                    emptyKernel<<<1, 32, 0, stream>>>();
                  CHECK(cudaGetLastError());
                }) /
         launches;
}

NcclSamples measureNccl(bool quick) {
  NcclSamples result;
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  result.ranks = count;
  std::vector<int> devices(count);
  for (int i = 0; i < count; ++i)
    devices[i] = i;
  std::vector<ncclComm_t> comms(count);
  CHECK(ncclCommInitAll(comms.data(), count, devices.data()));
  size_t largest = size_t(1) << 30;
  CHECK(cudaSetDevice(0));
  while (largest > (size_t(1) << 20) && 2 * largest > freeMemory() / 2)
    largest /= 2;
  std::vector<void *> send(count), recv(count);
  std::vector<cudaStream_t> streams(count);
  for (int i = 0; i < count; ++i) {
    CHECK(cudaSetDevice(i));
    CHECK(cudaMalloc(&send[i], largest));
    CHECK(cudaMalloc(&recv[i], largest));
    CHECK(cudaMemset(send[i], 0, largest));
    CHECK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
  }
  auto allReduce = [&](size_t bytes) {
    CHECK(ncclGroupStart());
    for (int i = 0; i < count; ++i)
      CHECK(ncclAllReduce(send[i], recv[i], bytes / 2, ncclBfloat16, ncclSum,
                          comms[i], streams[i]));
    CHECK(ncclGroupEnd());
  };
  auto synchronize = [&] {
    for (int i = 0; i < count; ++i) {
      CHECK(cudaSetDevice(i));
      CHECK(cudaStreamSynchronize(streams[i]));
    }
  };
  for (size_t bytes = size_t(1) << 20; bytes <= largest;
       bytes *= quick ? 64 : 8) {
    allReduce(bytes);
    synchronize();
    int repeats = bytes >= (size_t(1) << 28) ? 5 : 20;
    auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < repeats; ++r)
      allReduce(bytes);
    synchronize();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() /
        repeats;
    result.allReduce.push_back(
        {std::to_string(bytes >> 20) + " MiB", double(bytes), seconds});
  }
  for (int i = 0; i < count; ++i) {
    CHECK(cudaSetDevice(i));
    cudaFree(send[i]);
    cudaFree(recv[i]);
    cudaStreamDestroy(streams[i]);
    ncclCommDestroy(comms[i]);
  }
  CHECK(cudaSetDevice(0));
  return result;
}

ContentionSamples measureContention(int commSms) {
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  commSms = std::clamp(commSms, 1, prop.multiProcessorCount - 1);
  ContentionSamples result;
  const Gemm gemm{8192, 8192, 8192};
  size_t gemmBytes = size_t(gemm.m) * gemm.n * 2;
  DeviceBuffer a(gemmBytes), b(gemmBytes), c(gemmBytes);
  size_t copyBytes = size_t(256) << 20;
  DeviceBuffer commIn(copyBytes), commOut(copyBytes);
  DeviceBuffer memIn(copyBytes), memOut(copyBytes);
  Blas blas;
  Stream computeStream, commStream;
  CHECK(cublasSetStream(blas, computeStream));
  int fullBlocks = prop.multiProcessorCount * 8;

  auto gemmOnce = [&] { runGemm(blas, gemm, true, a.get(), b.get(), c.get()); };
  auto memoryOnce = [&] {
    launchCopy(memIn, memOut, fullBlocks, 256, 1, computeStream);
  };
  result.gemmAlone = timeIt(computeStream, gemmOnce);
  result.memoryAlone = timeIt(computeStream, memoryOnce);
  result.commAlone = timeIt(commStream, [&] {
    launchCopy(commIn, commOut, commSms, 512, 1, commStream);
  });

  Event start, stop;
  // One side measured while the other runs for its whole duration: the
  // other side is sized to last three times as long and launched first.
  auto whileOther = [&](cudaStream_t measured,
                        const std::function<void()> &once, double onceSeconds,
                        cudaStream_t other,
                        const std::function<void(int)> &background,
                        double backgroundSeconds) {
    int repeats = std::max(3, static_cast<int>(0.05 / onceSeconds));
    int backgroundRepeats = std::max(
        1, static_cast<int>(3 * repeats * onceSeconds / backgroundSeconds) + 1);
    background(backgroundRepeats);
    CHECK(cudaEventRecord(start, measured));
    for (int i = 0; i < repeats; ++i)
      once();
    CHECK(cudaEventRecord(stop, measured));
    double seconds = elapsed(start, stop) / repeats;
    CHECK(cudaStreamSynchronize(other));
    return seconds;
  };
  auto commBackground = [&](int passes) {
    launchCopy(commIn, commOut, commSms, 512, passes, commStream);
  };
  result.gemmWithComm =
      whileOther(computeStream, gemmOnce, result.gemmAlone, commStream,
                 commBackground, result.commAlone);
  result.memoryWithComm =
      whileOther(computeStream, memoryOnce, result.memoryAlone, commStream,
                 commBackground, result.commAlone);
  auto gemmBackground = [&](int repeats) {
    for (int i = 0; i < repeats; ++i)
      gemmOnce();
  };
  result.commWithGemm = whileOther(
      commStream,
      [&] { launchCopy(commIn, commOut, commSms, 512, 1, commStream); },
      result.commAlone, computeStream, gemmBackground, result.gemmAlone);
  return result;
}

} // namespace calibrate
