//===- CudaExecutor.h - runs a validated plan on one GPU --------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA executor. At construction it allocates the rank's arena as one
// device allocation, uploads the constants and the rank's slice of every
// weight, makes one CUDA stream per plan stream (each with its own cuBLAS
// handle and workspace), one CUDA event per plan event, and the NCCL
// communicators of the plan's collectives.
//
// run() enqueues every stream's instructions from one host thread: kernels
// and collectives on their stream, record_event / wait_event as
// cudaEventRecord / cudaStreamWaitEvent. The host interleaves the streams so
// that an event is always recorded before a wait on it is enqueued (a wait
// on an event not yet recorded would not wait). It then waits for the GPU,
// polling NCCL for asynchronous errors; past the timeout it aborts the
// communicators and names the first collective that had not finished.
//
// With `graph`, the first run runs the plan once eagerly (one-time work such
// as kernel loading stays out of the capture), then captures the whole plan
// (every stream, NCCL included) into one CUDA graph; every run launches the
// graph: one launch instead of one per instruction. Per-instruction timings come from
// CUDA events around each instruction when `timing` is set (not with
// `graph`: a graph's nodes are not timed one by one).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_CUDAEXECUTOR_H
#define BRAID_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "runtime/cuda/CudaCommunicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/PlanSteps.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace braid::rt::cuda {

struct CudaExecutorOptions {
  /// Longest a run may take on the GPU before it is aborted; also the NCCL
  /// calls' timeout.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  /// Capture the plan into a CUDA graph on the first run and replay it.
  bool graph = false;
  /// Time every instruction with CUDA events (ignored with `graph`).
  bool timing = true;
  /// Bytes of kernel workspace per stream (cuBLAS, attention partials).
  size_t workspaceBytes = 64u << 20;
  /// A --resume checkpoint, already checked against the plan: the state
  /// weights start from it instead of the weights file or zeros. Must
  /// outlive the constructor.
  const SafetensorsFile *checkpoint = nullptr;
  /// Which optional groups (Plan.optional_groups) a run runs. Dynamic
  /// decides on the host when the group is issued: it waits for the group's
  /// stream to drain and skips the group when the records of its
  /// until_events are issued and complete. A CUDA graph replays fixed work,
  /// so `graph` with a plan that has groups needs All or None.
  OptionalPolicy optionalPolicy = OptionalPolicy::Dynamic;
};

class CudaExecutor {
public:
  /// Uses the current CUDA device. `plan` and `comm` must outlive the
  /// executor. Throws PlanError (mesh or weights mismatch) or ExecutionError
  /// (device memory, CUDA, NCCL set-up), naming the rank.
  CudaExecutor(const LoadedPlan &plan, CudaCommunicator &comm,
               const SafetensorsFile *weights,
               CudaExecutorOptions options = {});
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor &) = delete;
  CudaExecutor &operator=(const CudaExecutor &) = delete;

  /// Copies host bytes into the input binding `name` (its exact size).
  void setInput(const std::string &name, const void *data, size_t bytes);
  /// Copies the output binding `name` to the host (after run()).
  std::vector<uint8_t> readOutput(const std::string &name) const;
  /// Copies buffer `id` to the host (after run(): trained state for
  /// checkpoints).
  std::vector<uint8_t> readBuffer(uint32_t id) const;
  /// The device view of an input or output binding.
  TensorView input(const std::string &name) const;
  TensorView output(const std::string &name) const;

  /// Runs the plan once and waits for it. Throws ExecutionError.
  void run();

  /// Timings of the last run; totalNs is the GPU time from the first to
  /// the last instruction.
  const RunProfile &profile() const { return profile_; }
  /// Whether runs replay a captured CUDA graph.
  bool usesGraph() const { return options_.graph; }

private:
  struct Streams;

  TensorView buffer(uint32_t id) const;
  void release();
  void enqueueAll();
  /// Whether this run skips optional group `group` (of `stream`), decided
  /// the first time one of its steps is issued.
  bool skipsGroup(size_t stream, int32_t group);
  void enqueue(size_t stream, size_t index);
  void runCollective(size_t stream, const PlanStep &step);
  void waitForCompletion();
  [[noreturn]] void fail(size_t stream, size_t index, const std::string &what);

  const LoadedPlan &plan_;
  CudaCommunicator &comm_;
  CudaExecutorOptions options_;
  uint8_t *arena_ = nullptr;
  std::vector<std::vector<PlanStep>> steps_;
  /// The order the host issues (stream, step) in: issueOrder's.
  std::vector<std::pair<size_t, size_t>> order_;
  std::unique_ptr<Streams> streams_;
  RunProfile profile_;
};

} // namespace braid::rt::cuda

#endif // BRAID_RUNTIME_CUDA_CUDAEXECUTOR_H
