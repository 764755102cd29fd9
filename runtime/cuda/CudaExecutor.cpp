//===- CudaExecutor.cpp - runs a validated plan on one GPU ----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaExecutor.h"

#include "runtime/cuda/CudaContext.h"
#include "runtime/plan/PlanError.h"

#include <algorithm>
#include <array>
#include <thread>

namespace braid::rt::cuda {
namespace {
using Clock = std::chrono::steady_clock;

/// dst[b][a] = src[a][b] for blocks of t.chunk bytes, as 2-D copies along
/// the shorter of the two loops.
void transposeBlocksAsync(const void *src, void *dst, const BlockTranspose &t,
                          cudaStream_t stream) {
  auto *from = static_cast<const char *>(src);
  auto *to = static_cast<char *>(dst);
  size_t chunk = t.chunk;
  // 2-D copies take pitches below 2 GiB; beyond, one copy per block.
  constexpr size_t kMaxPitch = (size_t(1) << 31) - 1;
  if (std::max(t.rows, t.columns) * chunk > kMaxPitch) {
    for (int64_t a = 0; a < t.rows; ++a)
      for (int64_t b = 0; b < t.columns; ++b)
        check(cudaMemcpyAsync(to + (b * t.rows + a) * chunk,
                              from + (a * t.columns + b) * chunk, chunk,
                              cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyAsync (collective layout)");
    return;
  }
  if (t.rows <= t.columns) {
    // Row a of the source (columns blocks in a row) lands every rows-th block.
    for (int64_t a = 0; a < t.rows; ++a)
      check(cudaMemcpy2DAsync(to + a * chunk, t.rows * chunk,
                              from + a * t.columns * chunk, chunk, chunk,
                              t.columns, cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpy2DAsync (collective layout)");
  } else {
    // Column b of the source (every columns-th block) lands contiguously.
    for (int64_t b = 0; b < t.columns; ++b)
      check(cudaMemcpy2DAsync(to + b * t.rows * chunk, chunk, from + b * chunk,
                              t.columns * chunk, chunk, t.rows,
                              cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpy2DAsync (collective layout)");
  }
}

std::string gib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB",
                static_cast<double>(bytes) / (1ull << 30));
  return text;
}
} // namespace

struct CudaExecutor::Streams {
  /// Per plan stream; never resized after construction (kernel steps point
  /// at their stream's context).
  std::vector<CudaContext> contexts;
  std::vector<cudaEvent_t> planEvents;
  /// Per stream: device scratch for collective rearrangements.
  std::vector<std::array<void *, 3>> scratch;
  /// Per stream and step: timing events around busy steps (when timing),
  /// completion events after collectives (always), else null.
  std::vector<std::vector<cudaEvent_t>> stepStart, stepEnd;
  cudaEvent_t begin = nullptr, done = nullptr;
  std::vector<cudaEvent_t> joins;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graphExec = nullptr;
  bool capturing = false;
  /// This run: per plan event, whether its record is issued; per optional
  /// group, 0 not reached, 1 runs, 2 skipped.
  std::vector<bool> recordIssued;
  std::vector<uint8_t> groupDecisions;

  ~Streams() {
    if (graphExec)
      cudaGraphExecDestroy(graphExec);
    if (graph)
      cudaGraphDestroy(graph);
    for (auto &perStream : {&stepStart, &stepEnd})
      for (auto &events : *perStream)
        for (cudaEvent_t event : events)
          if (event)
            cudaEventDestroy(event);
    for (cudaEvent_t event : planEvents)
      cudaEventDestroy(event);
    for (cudaEvent_t event : joins)
      cudaEventDestroy(event);
    if (begin)
      cudaEventDestroy(begin);
    if (done)
      cudaEventDestroy(done);
    for (auto &buffers : scratch)
      for (void *buffer : buffers)
        if (buffer)
          cudaFree(buffer);
    for (CudaContext &ctx : contexts)
      destroyContext(ctx);
  }
};

CudaExecutor::CudaExecutor(const LoadedPlan &plan, CudaCommunicator &comm,
                           const SafetensorsFile *weights,
                           CudaExecutorOptions options)
    : plan_(plan), comm_(comm), options_(options),
      streams_(std::make_unique<Streams>()) {
  const MeshShape &mesh = comm.mesh();
  if (mesh.axisNames != plan.mesh.axisNames ||
      mesh.axisSizes != plan.mesh.axisSizes)
    throw PlanError("the communicator's mesh differs from the plan's mesh");
  int64_t rank = comm.rank();
  std::string who = "rank " + std::to_string(rank);
  const plan::Plan &proto = plan.proto;
  comm_.setTimeout(options.timeout);

  try {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    cudaDeviceProp prop;
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");

    // The arena: one device allocation.
    uint64_t bytes = std::max<uint64_t>(proto.arena_bytes(), 1);
    void *arena = nullptr;
    cudaError_t status = cudaMalloc(&arena, bytes);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      size_t freeBytes = 0, totalBytes = 0;
      cudaMemGetInfo(&freeBytes, &totalBytes);
      throw ExecutionError(who + ": cannot allocate the arena of " +
                           std::to_string(proto.arena_bytes()) + " bytes (" +
                           gib(bytes) + ") on GPU " + std::to_string(device) +
                           " (" + prop.name + ", " + gib(freeBytes) +
                           " free of " + gib(totalBytes) +
                           "): " + cudaGetErrorString(status));
    }
    arena_ = static_cast<uint8_t *>(arena);
    check(cudaMemset(arena_, 0, bytes), "cudaMemset (arena)");

    // Constants and weights go through one host staging buffer.
    std::vector<uint8_t> staging;
    writeInitialData(plan, mesh, rank, weights,
                     [&](const BufferInfo &buffer,
                         const std::function<void(void *)> &fill) {
                       staging.assign(buffer.bytes, 0);
                       fill(staging.data());
                       check(cudaMemcpy(arena_ + buffer.offset, staging.data(),
                                        buffer.bytes, cudaMemcpyHostToDevice),
                             "uploading constants and weights");
                     },
                     options_.checkpoint);

    steps_ = resolvePlanSteps(plan, mesh, rank,
                              [this](uint32_t id) { return buffer(id); },
                              profile_);
    IssueOrder order = issueOrder(steps_, proto.num_events());
    if (order.blocked)
      throw PlanError(describeStep(rank, profile_, steps_,
                                   order.blocked->first,
                                   order.blocked->second) +
                      ": waits for event " +
                      std::to_string(
                          steps_[order.blocked->first][order.blocked->second]
                              .event) +
                      ", which no stream records before it (the streams "
                      "would deadlock)");
    order_ = std::move(order.steps);
    if (options_.graph && proto.optional_groups_size() > 0 &&
        options_.optionalPolicy == OptionalPolicy::Dynamic)
      throw PlanError("rank " + std::to_string(rank) + ": the plan has " +
                      std::to_string(proto.optional_groups_size()) +
                      " optional groups (a run-time micro-batch count), "
                      "decided while it runs; a CUDA graph replays fixed "
                      "work: run without --cuda-graph, or fix the groups "
                      "with --optional-groups all or none");

    // One stream, cuBLAS handle and workspace per plan stream.
    Streams &s = *streams_;
    s.contexts.resize(steps_.size());
    for (CudaContext &ctx : s.contexts)
      createContext(ctx, options.workspaceBytes);
    s.planEvents.assign(proto.num_events(), nullptr);
    for (cudaEvent_t &event : s.planEvents)
      check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
            "cudaEventCreate");
    check(cudaEventCreate(&s.begin), "cudaEventCreate");
    check(cudaEventCreate(&s.done), "cudaEventCreate");
    s.joins.assign(steps_.size(), nullptr);
    for (cudaEvent_t &event : s.joins)
      check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
            "cudaEventCreate");

    // Per step: the context of kernels, timing and completion events, the
    // collectives' scratch and groups.
    // Per channel (collectiveChannels), the axis sets in plan order.
    std::vector<size_t> channels = collectiveChannels(steps_, plan.mesh);
    size_t numChannels = 1;
    for (size_t channel : channels)
      numChannels = std::max(numChannels, channel + 1);
    std::vector<std::vector<std::vector<std::string>>> axisSets(numChannels);
    s.scratch.assign(steps_.size(), {nullptr, nullptr, nullptr});
    s.stepStart.resize(steps_.size());
    s.stepEnd.resize(steps_.size());
    bool timing = options.timing && !options.graph;
    for (size_t stream = 0; stream < steps_.size(); ++stream) {
      std::array<uint64_t, 3> need = {0, 0, 0};
      s.stepStart[stream].assign(steps_[stream].size(), nullptr);
      s.stepEnd[stream].assign(steps_[stream].size(), nullptr);
      for (size_t i = 0; i < steps_[stream].size(); ++i) {
        PlanStep &step = steps_[stream][i];
        bool busy =
            step.kind == StepKind::Kernel || step.kind == StepKind::Collective;
        if (timing && busy)
          check(cudaEventCreate(&s.stepStart[stream][i]), "cudaEventCreate");
        if ((timing && busy) || step.kind == StepKind::Collective)
          check(cudaEventCreateWithFlags(&s.stepEnd[stream][i],
                                         timing ? 0 : cudaEventDisableTiming),
                "cudaEventCreate");
        if (step.kind == StepKind::Kernel)
          step.args.context = &s.contexts[stream];
        if (step.kind != StepKind::Collective)
          continue;
        std::vector<std::vector<std::string>> &sets =
            axisSets[channels[stream]];
        if (std::find(sets.begin(), sets.end(), step.axes) == sets.end())
          sets.push_back(step.axes);
        std::array<uint64_t, 3> bytes = collectiveScratchBytes(step);
        for (int k = 0; k < 3; ++k)
          need[k] = std::max(need[k], bytes[k]);
      }
      for (int k = 0; k < 3; ++k)
        if (need[k])
          check(cudaMalloc(&s.scratch[stream][k], need[k]),
                "cudaMalloc (collective scratch)");
    }
    // The same axis sets in the same order on every rank: the plan's.
    for (size_t channel = 0; channel < axisSets.size(); ++channel)
      comm_.prepare(axisSets[channel], static_cast<int>(proto.comm_sms()),
                    channel);
    for (size_t stream = 0; stream < steps_.size(); ++stream)
      comm_.bindStream(s.contexts[stream].stream, channels[stream]);
    // The memset and the uploads ran on the legacy default stream, which
    // the plan's non-blocking streams do not wait for (and a pageable
    // cudaMemcpy may return before its DMA lands): finish them now.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (uploads)");
  } catch (const CudaError &error) {
    release();
    throw ExecutionError(who + ": setting up the CUDA backend: " +
                         error.what());
  } catch (const CollectiveError &error) {
    release();
    throw ExecutionError(std::string("setting up the CUDA backend: ") +
                         error.what());
  } catch (...) {
    // A constructor that throws runs no destructor: free the device memory
    // here (a caller may go on, e.g. with a smaller plan).
    release();
    throw;
  }
}

/// Frees the device memory (after the GPU is idle); also what a failed
/// constructor does, since no destructor runs then.
void CudaExecutor::release() {
  cudaDeviceSynchronize();
  (void)cudaGetLastError();
  streams_.reset();
  if (arena_)
    cudaFree(arena_);
  arena_ = nullptr;
}

CudaExecutor::~CudaExecutor() { release(); }

TensorView CudaExecutor::buffer(uint32_t id) const {
  return arenaView(plan_, arena_, id);
}

TensorView CudaExecutor::input(const std::string &name) const {
  return buffer(bindingBuffer(plan_, name, /*input=*/true));
}

TensorView CudaExecutor::output(const std::string &name) const {
  return buffer(bindingBuffer(plan_, name, /*input=*/false));
}

void CudaExecutor::setInput(const std::string &name, const void *data,
                            size_t bytes) {
  TensorView view = input(name);
  if (bytes != view.numBytes())
    throw std::invalid_argument("input '" + name + "' takes " +
                                std::to_string(view.numBytes()) +
                                " bytes, got " + std::to_string(bytes));
  check(cudaMemcpy(view.data, data, bytes, cudaMemcpyHostToDevice),
        "copying an input to the GPU");
  // A pageable cudaMemcpy may return before the data lands, on the legacy
  // stream the plan's non-blocking streams do not wait for.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (input)");
}

std::vector<uint8_t> CudaExecutor::readOutput(const std::string &name) const {
  return readBuffer(bindingBuffer(plan_, name, /*input=*/false));
}

std::vector<uint8_t> CudaExecutor::readBuffer(uint32_t id) const {
  TensorView view = buffer(id);
  std::vector<uint8_t> bytes(view.numBytes());
  check(cudaMemcpy(bytes.data(), view.data, bytes.size(),
                   cudaMemcpyDeviceToHost),
        "copying a buffer from the GPU");
  return bytes;
}

void CudaExecutor::fail(size_t stream, size_t index, const std::string &what) {
  throw ExecutionError(
      describeStep(comm_.rank(), profile_, steps_, stream, index) + ": " +
      what);
}

void CudaExecutor::runCollective(size_t stream, const PlanStep &step) {
  // Device memory: scratch was sized at construction (collectiveScratchBytes).
  struct DeviceOps {
    std::array<void *, 3> &buffers;
    cudaStream_t stream;
    void *scratch(int which, uint64_t) { return buffers[which]; }
    void copy(void *dst, const void *src, uint64_t bytes) {
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync (collective input)");
    }
    void transpose(const void *src, void *dst, const BlockTranspose &t) {
      transposeBlocksAsync(src, dst, t, stream);
    }
  } ops{streams_->scratch[stream], streams_->contexts[stream].stream};
  runCollectiveStep(step, comm_, ops, ops.stream);
}

void CudaExecutor::enqueue(size_t stream, size_t index) {
  Streams &s = *streams_;
  const PlanStep &step = steps_[stream][index];
  cudaStream_t cuda = s.contexts[stream].stream;
  // Events a graph's caller reads must be recorded as external nodes.
  auto record = [&](cudaEvent_t event) {
    if (event)
      check(cudaEventRecordWithFlags(event, cuda,
                                     s.capturing ? cudaEventRecordExternal
                                                 : cudaEventRecordDefault),
            "cudaEventRecord");
  };
  try {
    if (step.optionalGroup >= 0 && skipsGroup(stream, step.optionalGroup) &&
        step.kind == StepKind::Kernel) {
      // A skipped group's kernel: zeros where the plan reads its results
      // later, nothing otherwise.
      if (step.zeroWhenSkipped)
        for (const TensorView &out : step.args.outputs)
          check(cudaMemsetAsync(out.data, 0, out.numBytes(), cuda),
                "cudaMemsetAsync");
      return;
    }
    switch (step.kind) {
    case StepKind::Kernel:
      record(s.stepStart[stream][index]);
      step.kernel->run(step.args);
      record(s.stepEnd[stream][index]);
      return;
    case StepKind::Collective:
      record(s.stepStart[stream][index]);
      runCollective(stream, step);
      record(s.stepEnd[stream][index]);
      return;
    case StepKind::Record:
      check(cudaEventRecord(s.planEvents[step.event], cuda), "cudaEventRecord");
      s.recordIssued[step.event] = true;
      return;
    case StepKind::Wait:
      check(cudaStreamWaitEvent(cuda, s.planEvents[step.event], 0),
            "cudaStreamWaitEvent");
      return;
    }
  } catch (const ExecutionError &) {
    throw;
  } catch (const std::exception &error) {
    fail(stream, index, error.what());
  }
}

bool CudaExecutor::skipsGroup(size_t stream, int32_t group) {
  Streams &s = *streams_;
  uint8_t &decision = s.groupDecisions[group];
  if (decision == 0) {
    bool skip = options_.optionalPolicy == OptionalPolicy::None;
    if (options_.optionalPolicy == OptionalPolicy::Dynamic) {
      // What the CPU executor decides when its stream reaches the group:
      // the host waits until this stream has run what precedes the group,
      // then asks whether the round's communication is done. An event
      // whose record is not issued yet counts as not done (CUDA calls an
      // unrecorded event complete).
      check(cudaStreamSynchronize(s.contexts[stream].stream),
            "cudaStreamSynchronize (deciding an optional group)");
      skip = true;
      for (uint32_t event :
           plan_.proto.optional_groups(group).until_events()) {
        if (!skip)
          break;
        if (!s.recordIssued[event]) {
          skip = false;
          break;
        }
        cudaError_t status = cudaEventQuery(s.planEvents[event]);
        if (status == cudaErrorNotReady) {
          skip = false;
        } else if (status != cudaSuccess) {
          (void)cudaGetLastError();
          check(status, "cudaEventQuery (deciding an optional group)");
        }
      }
    }
    decision = skip ? 2 : 1;
    profile_.groupsRun[group] = !skip;
  }
  return decision == 2;
}

void CudaExecutor::enqueueAll() {
  Streams &s = *streams_;
  s.recordIssued.assign(plan_.proto.num_events(), false);
  s.groupDecisions.assign(plan_.proto.optional_groups_size(), 0);
  profile_.groupsRun.assign(s.groupDecisions.size(), true);
  for (const auto &[stream, index] : order_)
    enqueue(stream, index);
}

void CudaExecutor::waitForCompletion() {
  Streams &s = *streams_;
  Clock::time_point deadline = Clock::now() + options_.timeout;
  // The first step not finished, in stream order: what a failure names.
  auto firstUnfinished = [&](bool collectivesOnly) -> std::pair<size_t, size_t> {
    for (size_t stream = 0; stream < steps_.size(); ++stream)
      for (size_t i = 0; i < steps_[stream].size(); ++i) {
        cudaEvent_t end = s.stepEnd[stream][i];
        if (!end || (collectivesOnly &&
                     steps_[stream][i].kind != StepKind::Collective))
          continue;
        if (cudaEventQuery(end) != cudaSuccess)
          return {stream, i};
      }
    return {steps_.size(), 0};
  };
  std::chrono::microseconds pause(5);
  while (true) {
    cudaError_t status = cudaEventQuery(s.done);
    if (status == cudaSuccess)
      return;
    if (status != cudaErrorNotReady) {
      (void)cudaGetLastError();
      auto [stream, index] = firstUnfinished(false);
      fail(stream, index,
           std::string("the GPU failed while running the plan: ") +
               cudaGetErrorName(status) + " (" + cudaGetErrorString(status) +
               ")" +
               (options_.timing && !options_.graph
                    ? ""
                    : "; run with CUDA_LAUNCH_BLOCKING=1 to find the kernel"));
    }
    try {
      comm_.checkAsyncErrors();
    } catch (const CollectiveError &error) {
      auto [stream, index] = firstUnfinished(true);
      comm_.abort();
      fail(stream, index, error.what());
    }
    if (Clock::now() > deadline) {
      auto [stream, index] = firstUnfinished(true);
      comm_.abort();
      fail(stream, index,
           "timed out after " +
               std::to_string(
                   std::chrono::duration<double>(options_.timeout).count()) +
               " s (" +
               (stream < steps_.size()
                    ? "this collective had not finished: a peer is dead or "
                      "stuck"
                    : "the GPU did not finish") +
               "; the NCCL communicators were aborted)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
}

void CudaExecutor::run() {
  Streams &s = *streams_;
  for (StreamTiming &stream : profile_.streams)
    for (InstructionTiming &timing : stream.instructions)
      timing.startNs = timing.endNs = -1;
  if (steps_.empty())
    return;
  cudaStream_t main = s.contexts[0].stream;
  try {
    // Every stream starts after `begin` and main waits for every stream's
    // end, so the run is one fork-join on main (also as a graph).
    auto enqueueForkJoin = [&] {
      for (size_t k = 1; k < steps_.size(); ++k)
        check(cudaStreamWaitEvent(s.contexts[k].stream, s.begin, 0),
              "cudaStreamWaitEvent");
      enqueueAll();
      for (size_t k = 1; k < steps_.size(); ++k) {
        check(cudaEventRecord(s.joins[k], s.contexts[k].stream),
              "cudaEventRecord");
        check(cudaStreamWaitEvent(main, s.joins[k], 0), "cudaStreamWaitEvent");
      }
    };
    if (options_.graph) {
      if (!s.graphExec) {
        // One eager run first: kernels load, cuBLAS picks its algorithms and
        // one-time calls (shared-memory attributes) happen outside the
        // capture, where they may synchronize.
        check(cudaEventRecord(s.begin, main), "cudaEventRecord");
        enqueueForkJoin();
        check(cudaEventRecord(s.done, main), "cudaEventRecord");
        waitForCompletion();
        check(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal),
              "cudaStreamBeginCapture");
        s.capturing = true;
        try {
          check(cudaEventRecord(s.begin, main), "cudaEventRecord");
          enqueueForkJoin();
        } catch (...) {
          // Join every forked stream back into main (best effort: the
          // capture may already be invalidated) so that ending the capture
          // takes every stream out of capture mode.
          for (size_t k = 1; k < steps_.size(); ++k)
            if (cudaEventRecord(s.joins[k], s.contexts[k].stream) ==
                cudaSuccess)
              (void)cudaStreamWaitEvent(main, s.joins[k], 0);
          cudaGraph_t broken = nullptr;
          cudaStreamEndCapture(main, &broken);
          if (broken)
            cudaGraphDestroy(broken);
          (void)cudaGetLastError();
          s.capturing = false;
          throw;
        }
        s.capturing = false;
        check(cudaStreamEndCapture(main, &s.graph), "cudaStreamEndCapture");
        check(cudaGraphInstantiate(&s.graphExec, s.graph, 0),
              "cudaGraphInstantiate");
      }
      check(cudaEventRecord(s.begin, main), "cudaEventRecord");
      check(cudaGraphLaunch(s.graphExec, main), "cudaGraphLaunch");
    } else {
      check(cudaEventRecord(s.begin, main), "cudaEventRecord");
      enqueueForkJoin();
    }
    check(cudaEventRecord(s.done, main), "cudaEventRecord");
  } catch (const ExecutionError &) {
    cudaDeviceSynchronize();
    throw;
  } catch (const std::exception &error) {
    cudaDeviceSynchronize();
    throw ExecutionError("rank " + std::to_string(comm_.rank()) +
                         ": enqueueing the plan: " + error.what());
  }
  waitForCompletion();

  float total = 0;
  cudaError_t timed = cudaEventElapsedTime(&total, s.begin, s.done);
  if (timed != cudaSuccess)
    throw ExecutionError("rank " + std::to_string(comm_.rank()) +
                         ": cudaEventElapsedTime: " +
                         cudaGetErrorString(timed));
  profile_.totalNs = static_cast<int64_t>(double(total) * 1e6);
  if (options_.graph)
    profile_.untimed = "the plan ran as one CUDA graph";
  else if (!options_.timing)
    profile_.untimed = "instruction timing is off";
  if (!profile_.untimed.empty())
    return;
  for (size_t stream = 0; stream < steps_.size(); ++stream)
    for (size_t i = 0; i < steps_[stream].size(); ++i) {
      cudaEvent_t start = s.stepStart[stream][i], end = s.stepEnd[stream][i];
      if (!start || !end)
        continue;
      float a = 0, b = 0;
      if (cudaEventElapsedTime(&a, s.begin, start) != cudaSuccess ||
          cudaEventElapsedTime(&b, s.begin, end) != cudaSuccess)
        continue;
      InstructionTiming &timing = profile_.streams[stream].instructions[i];
      timing.startNs = static_cast<int64_t>(double(a) * 1e6);
      timing.endNs = static_cast<int64_t>(double(b) * 1e6);
    }
}

} // namespace braid::rt::cuda
