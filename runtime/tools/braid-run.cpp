//===- braid-run.cpp - runs a Braid plan on CPUs --------------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
//   braid-run plan.bplan [--weights W.safetensors] [--inputs DIR]
//             [--input NAME=FILE]... [--outputs DIR] [--expected DIR]
//             [--rtol R] [--atol A] [--trace out.json] [--repeat N]
//             [--timeout-s S]
//   braid-run plan.bplan --backend cuda [--cuda-graph] [same options]
//   braid-run plan.bplan --backend sim --hw PROFILE [--nodes N] [--world N]
//             [--trace out.json] [--svg out.svg]
//   braid-run train.bplan --steps N --data FILE [--data-dtype uint16|int32]
//             [--loss-log loss.csv] [--save ckpt.safetensors]
//             [--save-every K] [--resume ckpt.safetensors] [--shuffle SEED]
//
// One process per rank: alone it runs one-rank plans; under mpirun (in a
// build with MPI) every process runs its rank. Exit status: 0 success, 1 an
// output differs from --expected, 2 any error (usage, plan, weights, inputs,
// run), reported as one message.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/LocalCommunicator.h"
#include "runtime/core/Version.h"
#include "runtime/exec/Executor.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/kernels/ElementIO.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/sim/SimCommand.h"
#include "runtime/tools/TensorFiles.h"
#include "runtime/train/TokenData.h"
#include "runtime/train/TrainingDevice.h"
#include "runtime/train/TrainingLoop.h"
#include "runtime/weights/Safetensors.h"

#ifdef BRAID_RUNTIME_HAS_MPI
#include "runtime/comm/MpiCommunicator.h"
#endif

#ifdef BRAID_RUNTIME_HAS_CUDA
#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaExecutor.h"
#include "runtime/cuda/CudaKernels.h"
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace braid::rt;

namespace {

const char *kUsage = R"(usage: braid-run PLAN.bplan [options]

Runs a Braid plan on CPUs, or with --backend cuda on GPUs (one process per
rank; use mpirun for more ranks).

options:
  --weights FILE      weights (.safetensors); default: PLAN with the
                      extension .safetensors, when the plan has weights
  --inputs DIR        input_N.pb (ONNX TensorProto) for the plan's N-th input
  --input NAME=FILE   one input from a .npy or .pb file (overrides --inputs)
  --outputs DIR       write output_N.pb for the plan's N-th output (rank 0)
  --expected DIR      compare outputs with DIR/output_N.pb; prints the
                      largest errors and PASS or FAIL (exit status 1)
  --rtol R            relative tolerance for --expected (default 1e-4)
  --atol A            absolute tolerance for --expected (default 1e-6);
                      passes when |out - ref| <= atol + rtol * |ref|
  --trace FILE        Chrome trace JSON of the last run: one file for all
                      ranks (rank 0 writes it), a process per rank and a
                      track per stream, the ranks' clocks aligned at a
                      barrier just before the run
  --verbose           each rank's own summary (default: rank 0 prints one
                      summary of the run across ranks)
  --repeat N          run N times (default 1); the summary shows each total
  --threads N         cpu: threads each rank's kernels may use (default: the
                      cores this process may run on, divided by the ranks
                      mpirun started on this host; OMP_NUM_THREADS or
                      OPENBLAS_NUM_THREADS when set). The environment's
                      BRAID_CPU_GEMM=onednn|openblas picks the GEMM library
                      among those built in (--version names the one used);
                      BRAID_CPU_PACK=0 keeps constant weights unpacked
  --timeout-s S       longest wait for an event or a collective (default 300)
  --cuda-graph        cuda: capture the plan into a CUDA graph on the first
                      run and replay it (one launch per run; no per-op times)
  --optional-groups P[,P...]
                      a plan's optional work (braidc --algorithm acco=M:N):
                      dynamic (default: skipped once the round's
                      communication is done), all (always run) or none
                      (never run); one per rank, the last for the rest;
                      also read by --backend sim
  --help              this text
  --version           the version of Braid, and the CPU GEMM library
exit status: 0 success, 1 outputs differ from --expected, 2 error

training plans (braidc --train): one run is one step
  --steps N           run steps up to N (absolute: after --resume at step
                      10, --steps 20 runs steps 10..19)
  --data FILE         flat little-endian token ids, memory-mapped; row b of
                      step t reads window w = t*B + b: tokens
                      [w*S, w*S + S] (inputs, then labels shifted by one)
  --data-dtype T      uint16 (default) or int32
  --shuffle SEED      read the windows in a fixed permutation from SEED
  --loss-log FILE     step,loss CSV (rank 0; FILE.partial until the end)
  --save FILE         checkpoint of every state weight, whole (safetensors,
                      written atomically) after the last step
  --save-every K      also after every K-th step (same FILE)
  --resume FILE       start from a checkpoint, at its step
  other inputs of the plan come from --input/--inputs as usual
)";

/// A usage or input error: one message, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string plan;
  std::string weights;
  std::string inputsDir;
  std::map<std::string, std::string> inputFiles;
  std::string outputsDir;
  std::string expectedDir;
  double rtol = 1e-4;
  double atol = 1e-6;
  std::string trace;
  int repeat = 1;
  int threads = 0; // 0: OMP_/OPENBLAS_NUM_THREADS, else the default
  double timeoutSeconds = 300;
  bool cudaGraph = false;
  std::vector<OptionalPolicy> optionalPolicies{OptionalPolicy::Dynamic};
  bool verbose = false;
  // Training runs.
  int64_t steps = 0;
  std::string data;
  TokenFormat dataFormat = TokenFormat::U16;
  std::string lossLog;
  std::string save;
  int64_t saveEvery = 0;
  std::string resume;
  std::optional<uint64_t> shuffleSeed;
  /// The training flags given, for the check that they come with --steps.
  std::vector<std::string> trainingFlags;
};

double parseNumber(const std::string &flag, const std::string &text) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value < 0)
    throw UsageError(flag + " needs a non-negative number, got '" + text + "'");
  return value;
}

/// A decimal whole number in [lowest, 2^63).
uint64_t parseWhole(const std::string &flag, const std::string &text,
                    uint64_t lowest) {
  uint64_t value = 0;
  bool valid = !text.empty() && text.size() <= 18;
  for (char c : text) {
    valid &= c >= '0' && c <= '9';
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (!valid || value < lowest)
    throw UsageError(flag + " needs a whole number from " +
                     std::to_string(lowest) + ", got '" + text + "'");
  return value;
}

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    // "--flag=value" and "--flag value" both work.
    std::optional<std::string> inlineValue;
    size_t equals = flag.find('=');
    if (flag.rfind("--", 0) == 0 && equals != std::string::npos) {
      inlineValue = flag.substr(equals + 1);
      flag = flag.substr(0, equals);
    }
    auto value = [&]() -> std::string {
      if (inlineValue)
        return *inlineValue;
      if (i + 1 >= argc)
        throw UsageError(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage << "\nsimulation in virtual time:\n" << kSimUsage;
      std::exit(0);
    }
    if (flag == "--version") {
      std::cout << "braid-run (Braid) " << kBraidVersion << "\n";
      try {
        std::string gemm = cpuGemmLibrary();
        std::cout << "CPU GEMM: " << gemm << "\n";
      } catch (const std::invalid_argument &error) {
        std::cerr << "braid-run: error: " << error.what() << "\n";
        std::exit(2);
      }
      std::exit(0);
    }
    if (flag == "--weights")
      options.weights = value();
    else if (flag == "--inputs")
      options.inputsDir = value();
    else if (flag == "--input") {
      std::string spec = value();
      size_t equals = spec.find('=');
      if (equals == std::string::npos || equals == 0)
        throw UsageError("--input needs NAME=FILE, got '" + spec + "'");
      options.inputFiles[spec.substr(0, equals)] = spec.substr(equals + 1);
    } else if (flag == "--outputs")
      options.outputsDir = value();
    else if (flag == "--expected")
      options.expectedDir = value();
    else if (flag == "--rtol")
      options.rtol = parseNumber("--rtol", value());
    else if (flag == "--atol")
      options.atol = parseNumber("--atol", value());
    else if (flag == "--trace")
      options.trace = value();
    else if (flag == "--repeat") {
      double repeat = parseNumber("--repeat", value());
      if (repeat < 1 || repeat > 1e6 || repeat != std::floor(repeat))
        throw UsageError("--repeat needs a whole number from 1");
      options.repeat = static_cast<int>(repeat);
    } else if (flag == "--threads") {
      uint64_t threads = parseWhole(flag, value(), 1);
      if (threads > 4096)
        throw UsageError("--threads needs a whole number from 1 to 4096");
      options.threads = static_cast<int>(threads);
    } else if (flag == "--timeout-s") {
      options.timeoutSeconds = parseNumber("--timeout-s", value());
      if (options.timeoutSeconds <= 0 || options.timeoutSeconds > 1e7)
        throw UsageError("--timeout-s needs a positive number of seconds");
    } else if (flag == "--cuda-graph") {
      if (inlineValue)
        throw UsageError("--cuda-graph takes no value");
      options.cudaGraph = true;
    } else if (flag == "--optional-groups") {
      options.optionalPolicies.clear();
      std::string list = value();
      for (size_t start = 0; start <= list.size();) {
        size_t comma = std::min(list.find(',', start), list.size());
        std::string item = list.substr(start, comma - start);
        std::optional<OptionalPolicy> policy = parseOptionalPolicy(item);
        if (!policy)
          throw UsageError("--optional-groups needs dynamic, all or none "
                           "(one per rank, comma-separated), got '" +
                           item + "'");
        options.optionalPolicies.push_back(*policy);
        start = comma + 1;
      }
    } else if (flag == "--verbose") {
      if (inlineValue)
        throw UsageError("--verbose takes no value");
      options.verbose = true;
    } else if (flag == "--steps") {
      options.steps = static_cast<int64_t>(parseWhole(flag, value(), 1));
    } else if (flag == "--data") {
      options.data = value();
      options.trainingFlags.push_back(flag);
    } else if (flag == "--data-dtype") {
      std::string text = value();
      std::optional<TokenFormat> format = parseTokenFormat(text);
      if (!format)
        throw UsageError("--data-dtype needs uint16 or int32, got '" + text +
                         "'");
      options.dataFormat = *format;
      options.trainingFlags.push_back(flag);
    } else if (flag == "--loss-log") {
      options.lossLog = value();
      options.trainingFlags.push_back(flag);
    } else if (flag == "--save") {
      options.save = value();
      options.trainingFlags.push_back(flag);
    } else if (flag == "--save-every") {
      options.saveEvery = static_cast<int64_t>(parseWhole(flag, value(), 1));
      options.trainingFlags.push_back(flag);
    } else if (flag == "--resume") {
      options.resume = value();
      options.trainingFlags.push_back(flag);
    } else if (flag == "--shuffle") {
      options.shuffleSeed = parseWhole(flag, value(), 0);
      options.trainingFlags.push_back(flag);
    } else if (flag.rfind("-", 0) == 0)
      throw UsageError("unknown option '" + flag + "' (see --help)");
    else if (options.plan.empty())
      options.plan = flag;
    else
      throw UsageError("more than one plan given: '" + options.plan +
                       "' and '" + flag + "'");
  }
  if (options.plan.empty())
    throw UsageError("no plan given (see --help)");
  if (options.steps == 0 && !options.trainingFlags.empty())
    throw UsageError(options.trainingFlags.front() +
                     " needs --steps (a training run)");
  if (options.steps > 0) {
    if (options.data.empty())
      throw UsageError("--steps needs --data FILE (the token ids to train "
                       "on)");
    if (options.saveEvery > 0 && options.save.empty())
      throw UsageError("--save-every needs --save FILE");
    if (!options.outputsDir.empty() || !options.expectedDir.empty() ||
        options.repeat != 1)
      throw UsageError("--outputs, --expected and --repeat do not apply to a "
                       "training run (--steps): it writes --loss-log and "
                       "--save");
  }
  return options;
}

bool fileExists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

/// The number of processes the launcher started, from its environment
/// (1 without a launcher).
int64_t launchedRanks() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char *value = std::getenv(name)) {
      long long size = std::atoll(value);
      if (size > 0)
        return size;
    }
  }
  return 1;
}

std::unique_ptr<Communicator> makeCommunicator(const MeshShape &mesh,
                                               int64_t ranks, int *argc,
                                               char ***argv) {
#ifdef BRAID_RUNTIME_HAS_MPI
  if (ranks > 1 || mesh.numRanks() > 1)
    return makeMpiCommunicator(mesh, argc, argv);
#else
  (void)argc;
  (void)argv;
  if (ranks > 1)
    throw UsageError("this braid-run was built without MPI, so it cannot run "
                     "under a launcher with " +
                     std::to_string(ranks) +
                     " processes (configure with -DBRAID_RUNTIME_WITH_MPI=ON)");
#endif
  return std::make_unique<LocalCommunicator>(mesh);
}

std::string describe(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(toString(dtype)) + " " + shapeToString(shape);
}

/// Reads every input binding's data, by name, except the inputs in `skip`
/// (a training run's tokens and labels).
std::vector<HostTensor> readInputs(const Options &options,
                                   const LoadedPlan &plan,
                                   const std::set<std::string> &skip = {}) {
  std::vector<HostTensor> inputs;
  for (const auto &[name, file] : options.inputFiles) {
    bool known = false;
    for (const auto &binding : plan.proto.inputs())
      known |= binding.name() == name;
    if (!known)
      throw UsageError("--input " + name + ": the plan has no input '" + name +
                       "'");
    if (skip.count(name))
      throw UsageError("--input " + name + ": a training run fills '" + name +
                       "' from --data");
  }
  for (int i = 0; i < plan.proto.inputs_size(); ++i) {
    const auto &binding = plan.proto.inputs(i);
    if (skip.count(binding.name()))
      continue;
    const BufferInfo &buffer = plan.buffers[binding.buffer()];
    std::string path;
    auto it = options.inputFiles.find(binding.name());
    if (it != options.inputFiles.end())
      path = it->second;
    else if (!options.inputsDir.empty())
      path = options.inputsDir + "/input_" + std::to_string(i) + ".pb";
    else
      throw UsageError("input " + std::to_string(i) + " '" + binding.name() +
                       "' (" + describe(buffer.dtype, buffer.shape) +
                       ") has no data: give --inputs DIR or --input " +
                       binding.name() + "=FILE");
    HostTensor tensor = readTensorFile(path);
    if (tensor.dtype != buffer.dtype || tensor.shape != buffer.shape)
      throw UsageError("input " + std::to_string(i) + " '" + binding.name() +
                       "' must be " + describe(buffer.dtype, buffer.shape) +
                       ", but '" + path + "' holds " +
                       describe(tensor.dtype, tensor.shape));
    tensor.name = binding.name();
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

/// What braid-run needs of a backend's executor.
class Runner {
public:
  virtual ~Runner() = default;
  virtual int64_t rank() const = 0;
  virtual void setInput(const HostTensor &tensor) = 0;
  virtual void run() = 0;
  virtual HostTensor output(const std::string &name) const = 0;
  virtual const RunProfile &profile() const = 0;
  /// The executor as the training loop drives it.
  virtual TrainingDevice &device() = 0;
};

HostTensor hostTensor(const std::string &name, const TensorView &view,
                      const void *bytes) {
  HostTensor tensor;
  tensor.name = name;
  tensor.dtype = view.dtype;
  tensor.shape = view.shape;
  auto *begin = static_cast<const uint8_t *>(bytes);
  tensor.data.assign(begin, begin + view.numBytes());
  return tensor;
}

/// Rank `rank`'s entry of --optional-groups (the last for the rest).
OptionalPolicy policyOfRank(const std::vector<OptionalPolicy> &policies,
                            int64_t rank) {
  return policies[std::min<size_t>(static_cast<size_t>(rank),
                                   policies.size() - 1)];
}

class CpuRunner final : public Runner {
public:
  CpuRunner(const LoadedPlan &plan, const SafetensorsFile *weights,
            const SafetensorsFile *checkpoint, int64_t ranks,
            std::chrono::milliseconds timeout,
            const std::vector<OptionalPolicy> &policies, int *argc,
            char ***argv)
      : comm_(makeCommunicator(plan.mesh, ranks, argc, argv)) {
    comm_->setTimeout(timeout);
    ExecutorOptions options;
    options.eventTimeout = timeout;
    options.optionalPolicy = policyOfRank(policies, comm_->rank());
    options.checkpoint = checkpoint;
    executor_ = std::make_unique<Executor>(plan, *comm_, weights, options);
    device_ = std::make_unique<ExecutorDevice>(*executor_, *comm_);
  }
  int64_t rank() const override { return comm_->rank(); }
  void setInput(const HostTensor &tensor) override {
    std::memcpy(executor_->input(tensor.name).data, tensor.data.data(),
                tensor.data.size());
  }
  void run() override { executor_->run(); }
  HostTensor output(const std::string &name) const override {
    TensorView view = executor_->output(name);
    return hostTensor(name, view, view.data);
  }
  const RunProfile &profile() const override { return executor_->profile(); }
  TrainingDevice &device() override { return *device_; }

private:
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<ExecutorDevice> device_;
};

#ifdef BRAID_RUNTIME_HAS_CUDA
/// The CUDA backend as the training loop drives it. Checkpoint gathers go
/// through NCCL on a stream of their own, polled against the
/// communicator's timeout like the executor's runs.
class CudaTrainingDevice final : public TrainingDevice {
public:
  CudaTrainingDevice(cuda::CudaExecutor &executor,
                     cuda::CudaCommunicator &comm, const LoadedPlan &plan)
      : executor_(executor), comm_(comm), plan_(plan) {}
  int64_t rank() const override { return comm_.rank(); }
  void setInput(const std::string &name, const void *data,
                size_t bytes) override {
    executor_.setInput(name, data, bytes);
  }
  void run() override { executor_.run(); }
  std::vector<uint8_t> readBuffer(uint32_t id) override {
    return executor_.readBuffer(id);
  }
  void allGather(const void *in, void *out, int64_t count,
                 DType dtype) override {
    const std::vector<std::string> &axes = comm_.mesh().axisNames;
    // Every rank reaches its first gather at the same point, so the
    // communicator of the whole mesh is made in the same order everywhere.
    if (!prepared_) {
      comm_.prepare({axes}, static_cast<int>(plan_.proto.comm_sms()));
      prepared_ = true;
    }
    size_t bytes = static_cast<size_t>(count) * byteSize(dtype);
    size_t ranks = static_cast<size_t>(comm_.mesh().numRanks());
    void *deviceIn = nullptr, *deviceOut = nullptr;
    cudaStream_t stream = nullptr;
    auto release = [&] {
      cudaFree(deviceIn);
      cudaFree(deviceOut);
      if (stream)
        cudaStreamDestroy(stream);
    };
    try {
      cuda::check(cudaMalloc(&deviceIn, std::max<size_t>(bytes, 1)),
                  "cudaMalloc (checkpoint gather)");
      cuda::check(cudaMalloc(&deviceOut, std::max<size_t>(bytes * ranks, 1)),
                  "cudaMalloc (checkpoint gather)");
      cuda::check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                  "cudaStreamCreate");
      cuda::check(cudaMemcpy(deviceIn, in, bytes, cudaMemcpyHostToDevice),
                  "uploading a checkpoint shard");
      comm_.allGather(axes, deviceIn, deviceOut, count, dtype, stream);
      auto deadline = std::chrono::steady_clock::now() + comm_.timeout();
      cudaError_t state;
      while ((state = cudaStreamQuery(stream)) == cudaErrorNotReady) {
        comm_.checkAsyncErrors();
        if (std::chrono::steady_clock::now() > deadline) {
          comm_.abort();
          throw CollectiveError("rank " + std::to_string(comm_.rank()) +
                                ": the checkpoint gather timed out after " +
                                formatSeconds(comm_.timeout()));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      cuda::check(state, "the checkpoint gather");
      cuda::check(
          cudaMemcpy(out, deviceOut, bytes * ranks, cudaMemcpyDeviceToHost),
          "downloading a gathered checkpoint shard");
    } catch (...) {
      release();
      throw;
    }
    release();
  }

private:
  cuda::CudaExecutor &executor_;
  cuda::CudaCommunicator &comm_;
  const LoadedPlan &plan_;
  bool prepared_ = false;
};

class CudaRunner final : public Runner {
public:
  CudaRunner(const LoadedPlan &plan, const SafetensorsFile *weights,
             const SafetensorsFile *checkpoint, int64_t ranks,
             std::chrono::milliseconds timeout, bool graph,
             const std::vector<OptionalPolicy> &policies, int *argc,
             char ***argv) {
    int count = 0;
    cuda::check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    cuda::check(cudaSetDevice(cuda::deviceForLocalRank(count)),
                "cudaSetDevice");
    comm_ = cuda::makeCudaCommunicator(plan.mesh, ranks, argc, argv);
    comm_->setTimeout(timeout);
    cuda::CudaExecutorOptions options;
    options.timeout = timeout;
    options.graph = graph;
    options.checkpoint = checkpoint;
    options.optionalPolicy = policyOfRank(policies, comm_->rank());
    executor_ =
        std::make_unique<cuda::CudaExecutor>(plan, *comm_, weights, options);
    device_ = std::make_unique<CudaTrainingDevice>(*executor_, *comm_, plan);
  }
  int64_t rank() const override { return comm_->rank(); }
  void setInput(const HostTensor &tensor) override {
    executor_->setInput(tensor.name, tensor.data.data(), tensor.data.size());
  }
  void run() override { executor_->run(); }
  HostTensor output(const std::string &name) const override {
    std::vector<uint8_t> bytes = executor_->readOutput(name);
    return hostTensor(name, executor_->output(name), bytes.data());
  }
  const RunProfile &profile() const override { return executor_->profile(); }
  TrainingDevice &device() override { return *device_; }

private:
  std::unique_ptr<cuda::CudaCommunicator> comm_;
  std::unique_ptr<cuda::CudaExecutor> executor_;
  std::unique_ptr<CudaTrainingDevice> device_;
};
#endif

/// Compares outputs with DIR/output_N.pb; prints one line per output and
/// returns whether all pass.
bool compareOutputs(const Options &options,
                    const std::vector<HostTensor> &outputs,
                    const std::string &prefix) {
  bool allPass = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor &out = outputs[i];
    std::string path =
        options.expectedDir + "/output_" + std::to_string(i) + ".pb";
    HostTensor expected = readTensorProto(path);
    std::string head = prefix + "output " + std::to_string(i) + " '" +
                       out.name + "' " + describe(out.dtype, out.shape);
    if (expected.shape != out.shape) {
      std::cout << head << ": FAIL, expected shape "
                << shapeToString(expected.shape) << " (" << path << ")\n";
      allPass = false;
      continue;
    }
    auto isFloatType = [](DType dtype) {
      return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
    };
    bool isFloat = isFloatType(out.dtype);
    if (isFloat != isFloatType(expected.dtype)) {
      std::cout << head << ": FAIL, expected "
                << describe(expected.dtype, expected.shape) << " (" << path
                << ")\n";
      allPass = false;
      continue;
    }
    double maxAbs = 0, maxRel = 0;
    int64_t mismatches = 0;
    for (int64_t k = 0; k < out.numElements(); ++k) {
      double a, b;
      if (isFloat) {
        a = loadFloat(out.dtype, out.data.data(), k);
        b = loadFloat(expected.dtype, expected.data.data(), k);
      } else {
        a = static_cast<double>(loadInt(out.dtype, out.data.data(), k));
        b = static_cast<double>(
            loadInt(expected.dtype, expected.data.data(), k));
      }
      if (std::isnan(a) && std::isnan(b))
        continue;
      // Equal infinities match; NaN against a number never does.
      double abs = a == b ? 0.0 : std::fabs(a - b);
      if (std::isnan(abs))
        abs = INFINITY;
      double rel = abs == 0 ? 0.0 : abs / std::max(std::fabs(b), 1e-30);
      if (std::isnan(rel))
        rel = INFINITY;
      maxAbs = std::max(maxAbs, abs);
      maxRel = std::max(maxRel, rel);
      double allowed = isFloat ? options.atol + options.rtol * std::fabs(b) : 0;
      if (!(abs <= allowed))
        ++mismatches;
    }
    bool pass = mismatches == 0;
    allPass &= pass;
    char numbers[160];
    std::snprintf(numbers, sizeof(numbers),
                  ": max abs err %.3g, max rel err %.3g", maxAbs, maxRel);
    std::cout << head << numbers;
    if (!pass)
      std::cout << ", " << mismatches << " of " << out.numElements()
                << " elements outside atol " << options.atol << " + rtol "
                << options.rtol;
    std::cout << ": " << (pass ? "PASS" : "FAIL") << "\n";
  }
  std::cout << prefix << (allPass ? "PASS" : "FAIL") << "\n";
  return allPass;
}

/// When a rank's last run started, for lining the ranks up in one trace.
struct RunStart {
  /// steady_clock at the start of the run, and at the barrier before it.
  int64_t startedNs = 0;
  int64_t syncedNs = 0;
};

int64_t steadyNs(std::chrono::steady_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             at.time_since_epoch())
      .count();
}

/// Every rank's profile of the runner's last run, gathered to every rank
/// (each rank calls this; one rank needs no communication), with each
/// rank's offset on a common clock: the machine's monotonic clock when every
/// rank runs on one host (exact), else the barrier before the run (ranks
/// leave it at nearly the same moment).
MergedProfile gatherProfiles(Runner &runner, int64_t ranks,
                             const RunStart &start) {
  RunProfile mine = runner.profile();
  MergedProfile merged;
  if (ranks <= 1) {
    merged.ranks.push_back(std::move(mine));
    return merged;
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  int64_t clocks[3] = {
      static_cast<int64_t>(std::hash<std::string>()(host) >> 1),
      start.startedNs, start.syncedNs};
  std::vector<int64_t> everyClock(static_cast<size_t>(3 * ranks));
  runner.device().allGather(clocks, everyClock.data(), 3, DType::I64);
  bool oneHost = true;
  int64_t earliest = everyClock[1];
  for (int64_t r = 0; r < ranks; ++r) {
    oneHost = oneHost && everyClock[3 * r] == everyClock[0];
    earliest = std::min(earliest, everyClock[3 * r + 1]);
  }
  mine.offsetNs = oneHost ? start.startedNs - earliest
                          : start.startedNs - start.syncedNs;
  std::string text = mine.toJson();
  int64_t length = static_cast<int64_t>(text.size());
  std::vector<int64_t> lengths(static_cast<size_t>(ranks));
  runner.device().allGather(&length, lengths.data(), 1, DType::I64);
  int64_t words = (*std::max_element(lengths.begin(), lengths.end()) + 3) / 4;
  std::vector<int32_t> padded(static_cast<size_t>(words), 0);
  std::memcpy(padded.data(), text.data(), text.size());
  std::vector<int32_t> all(static_cast<size_t>(words * ranks));
  runner.device().allGather(padded.data(), all.data(), words, DType::I32);
  for (int64_t r = 0; r < ranks; ++r)
    merged.ranks.push_back(RunProfile::fromJson(std::string(
        reinterpret_cast<const char *>(all.data() + r * words),
        static_cast<size_t>(lengths[r]))));
  return merged;
}

/// The Chrome trace of the last run, when `path` is given: one file, written
/// by rank 0, holding every rank.
void writeTrace(const std::string &path, const MergedProfile &merged,
                int64_t rank) {
  if (path.empty() || rank != 0)
    return;
  std::ofstream trace(path);
  merged.writeChromeTrace(trace);
  if (!trace)
    throw UsageError("cannot write the trace '" + path + "'");
}

/// Rank 0 prints the run across ranks, or with --verbose every rank's own
/// summary, in rank order.
void printSummary(const MergedProfile &merged, const Options &options,
                  int64_t rank) {
  if (rank != 0)
    return;
  if (options.verbose)
    for (const RunProfile &profile : merged.ranks)
      std::cout << profile.summary();
  else
    std::cout << merged.summary();
}

int run(int argc, char **argv) {
  // --- sim backend (owner: runtime/sim, see runtime/sim/SimCommand.h) ---- //
  // Takes --backend, --hw, --nodes, --world and --svg out of argv.
  SimFlags sim = takeSimFlags(argc, argv);
  Options options = parseOptions(argc, argv);
  sim.optionalPolicies = options.optionalPolicies;
  if (sim.backend == "sim")
    return runSimBackend(sim, options.plan, options.trace, std::cout);
  // --- end sim backend ---------------------------------------------------- //

  // The weights file: given, or beside the plan when the plan needs one.
  std::string weightsPath = options.weights;
  if (weightsPath.empty()) {
    std::string stem = options.plan;
    size_t dot = stem.rfind('.');
    size_t slash = stem.rfind('/');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
      stem = stem.substr(0, dot);
    if (fileExists(stem + ".safetensors"))
      weightsPath = stem + ".safetensors";
  }
  std::optional<SafetensorsFile> weights;
  if (!weightsPath.empty())
    weights = SafetensorsFile::open(weightsPath);

  bool useCuda = sim.backend == "cuda";
  if (options.cudaGraph && !useCuda)
    throw UsageError("--cuda-graph needs --backend cuda");
#ifdef BRAID_RUNTIME_HAS_CUDA
  if (useCuda) {
    std::string missing = cuda::cudaUnavailableReason();
    if (!missing.empty())
      throw UsageError("--backend cuda: " + missing);
  }
#else
  if (useCuda)
    throw UsageError("--backend cuda: this braid-run was built without the "
                     "CUDA backend (no CUDA toolkit when it was configured; "
                     "configure with nvcc on PATH)");
#endif

  if (options.threads > 0 && useCuda)
    throw UsageError("--threads is for the CPU backend");
  // The runtime owns the thread count: ranks sharing a host share its cores
  // instead of each starting one BLAS thread per core.
  if (!useCuda) {
    int threads = options.threads;
    for (const char *name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
      if (const char *value = std::getenv(name); threads <= 0 && value)
        threads = std::atoi(value);
    try {
      (void)cpuGemmLibrary(); // BRAID_CPU_GEMM names one this build has
    } catch (const std::invalid_argument &error) {
      throw UsageError(error.what());
    }
    setCpuKernelThreads(threads > 0 ? threads : defaultCpuKernelThreads());
  }

  int64_t ranks = launchedRanks();
  LoadOptions loadOptions;
  loadOptions.kernels = &cpuKernels();
#ifdef BRAID_RUNTIME_HAS_CUDA
  if (useCuda)
    loadOptions.kernels = &cuda::cudaKernels();
#endif
  loadOptions.worldSize = ranks;
  loadOptions.weights = weights ? &*weights : nullptr;
  LoadedPlan plan = loadPlanFile(options.plan, loadOptions);

  // A training run is checked whole (data, checkpoint, inputs) before any
  // executor exists or any file is written.
  std::optional<SafetensorsFile> resumed;
  std::optional<TokenFile> data;
  std::optional<TrainingRun> training;
  std::vector<HostTensor> inputs;
  if (options.steps > 0) {
    if (!options.resume.empty())
      resumed = SafetensorsFile::open(options.resume, "checkpoint");
    data = TokenFile::open(options.data, options.dataFormat);
    TrainingOptions trainingOptions;
    trainingOptions.steps = options.steps;
    trainingOptions.lossLog = options.lossLog;
    trainingOptions.save = options.save;
    trainingOptions.saveEvery = options.saveEvery;
    trainingOptions.shuffleSeed = options.shuffleSeed;
    trainingOptions.progress = ::isatty(STDERR_FILENO) == 1;
    if (plan.proto.has_training()) {
      std::set<std::string> filled = {plan.proto.training().tokens_input(),
                                      plan.proto.training().labels_input()};
      for (HostTensor &input : readInputs(options, plan, filled))
        trainingOptions.fixedInputs[input.name] = std::move(input.data);
    }
    training.emplace(plan, *data, std::move(trainingOptions),
                     weights ? &*weights : nullptr,
                     resumed ? &*resumed : nullptr);
  } else {
    inputs = readInputs(options, plan);
  }

  auto timeout = std::chrono::milliseconds(
      static_cast<int64_t>(options.timeoutSeconds * 1000));
  const SafetensorsFile *checkpoint = resumed ? &*resumed : nullptr;
  std::unique_ptr<Runner> runner;
#ifdef BRAID_RUNTIME_HAS_CUDA
  if (useCuda)
    runner = std::make_unique<CudaRunner>(plan, weights ? &*weights : nullptr,
                                          checkpoint, ranks, timeout,
                                          options.cudaGraph,
                                          options.optionalPolicies, &argc,
                                          &argv);
#endif
  if (!runner)
    runner = std::make_unique<CpuRunner>(plan, weights ? &*weights : nullptr,
                                         checkpoint, ranks, timeout,
                                         options.optionalPolicies, &argc,
                                         &argv);
  int64_t rank = runner->rank();
  std::string prefix = ranks > 1 ? "[rank " + std::to_string(rank) + "] " : "";

  if (training) {
    TrainingSummary summary = training->run(runner->device(), std::cerr);
    if (rank == 0)
      std::cout << summary.format();
    // The steps' collectives keep the ranks in step: no sync point of its
    // own, offsets 0.
    if (!options.trace.empty() || !sim.svg.empty()) {
      MergedProfile merged = gatherProfiles(*runner, ranks, RunStart{});
      writeTrace(options.trace, merged, rank);
      if (!sim.svg.empty() && rank == 0)
        writeMeasuredSvg(sim, options.plan, merged.ranks.front(), plan.mesh,
                         useCuda ? "cuda" : "cpu");
    }
    return 0;
  }

  std::vector<int64_t> totals;
  RunStart start;
  for (int r = 0; r < options.repeat; ++r) {
    // Inputs go in before every run: the memory plan may reuse their bytes.
    for (const HostTensor &input : inputs)
      runner->setInput(input);
    // Several ranks start together: a barrier (a one-element all-gather
    // every rank leaves at nearly the same moment); across hosts it is the
    // common clock of the merged trace.
    auto synced = std::chrono::steady_clock::now();
    if (ranks > 1) {
      int64_t token = rank;
      std::vector<int64_t> gathered(static_cast<size_t>(ranks));
      runner->device().allGather(&token, gathered.data(), 1, DType::I64);
      synced = std::chrono::steady_clock::now();
    }
    auto started = std::chrono::steady_clock::now();
    runner->run();
    start = {steadyNs(started), steadyNs(synced)};
    totals.push_back(runner->profile().totalNs);
  }

  MergedProfile merged = gatherProfiles(*runner, ranks, start);
  printSummary(merged, options, rank);
  if (options.repeat > 1) {
    // Each run takes as long as its slowest rank.
    std::vector<int64_t> all(totals.size() * static_cast<size_t>(ranks));
    if (ranks > 1)
      runner->device().allGather(totals.data(), all.data(),
                                 static_cast<int64_t>(totals.size()),
                                 DType::I64);
    else
      all = totals;
    for (size_t run = 0; run < totals.size(); ++run)
      for (int64_t r = 0; r < ranks; ++r)
        totals[run] = std::max(totals[run], all[r * totals.size() + run]);
    if (rank == 0) {
      std::cout << "  totals over " << options.repeat << " runs (ms"
                << (ranks > 1 ? ", slowest rank" : "") << "):";
      for (int64_t total : totals)
        std::cout << " " << static_cast<double>(total) / 1e6;
      std::cout << "\n";
    }
  }
  writeTrace(options.trace, merged, rank);
  if (!sim.svg.empty() && rank == 0)
    writeMeasuredSvg(sim, options.plan, merged.ranks.front(), plan.mesh,
                     useCuda ? "cuda" : "cpu");

  std::vector<HostTensor> outputs;
  for (const auto &binding : plan.proto.outputs())
    outputs.push_back(runner->output(binding.name()));
  if (!options.outputsDir.empty() && rank == 0) {
    // The folder is made if missing (one level, like mkdir).
    if (::mkdir(options.outputsDir.c_str(), 0777) != 0 && errno != EEXIST)
      throw TensorFileError("cannot create the outputs folder '" +
                            options.outputsDir + "': " + std::strerror(errno));
  }
  if (!options.outputsDir.empty() && rank == 0)
    for (size_t i = 0; i < outputs.size(); ++i)
      writeTensorProto(options.outputsDir + "/output_" + std::to_string(i) +
                           ".pb",
                       outputs[i]);
  if (!options.expectedDir.empty() && !compareOutputs(options, outputs, prefix))
    return 1;
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &error) {
    std::cerr << "braid-run: error: " << error.what() << "\n";
    return 2;
  }
}
