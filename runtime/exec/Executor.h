//===- Executor.h - runs a validated plan on one rank -----------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The CPU executor. At construction it allocates the rank's arena (one
// zeroed, page-aligned block of arena_bytes), copies the constants in and
// the rank's slice of every weight. run() starts one worker thread per
// stream; each runs its instruction list in order. Streams synchronize only
// through events: record sets an event's flag, wait blocks until it is set
// (flags are cleared at the start of every run). Kernels come from the
// registry the plan was validated against; collectives go through the
// Communicator, with the tensor-layout rearrangement around its rank-major
// flat blocks (all_gather and reduce_scatter along `dim`, all_to_all's
// `split_dim` / `concat_dim`).
//
// The first failure in any stream stops every stream at its next
// instruction (waits wake up) and run() throws ExecutionError naming the
// rank, the stream, the instruction index, the op and its location.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_EXEC_EXECUTOR_H
#define BRAID_RUNTIME_EXEC_EXECUTOR_H

#include "runtime/comm/Communicator.h"
#include "runtime/exec/KernelRegistry.h"
#include "runtime/exec/PlanSteps.h"
#include "runtime/exec/RunProfile.h"
#include "runtime/plan/PlanLoader.h"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace braid::rt {

class SafetensorsFile;

/// A failure while running a plan; the message says where.
class ExecutionError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct ExecutorOptions {
  /// Longest an event wait may block before the run fails. (Collectives have
  /// the Communicator's own timeout.)
  std::chrono::milliseconds eventTimeout{std::chrono::seconds(300)};
  /// A --resume checkpoint, already checked against the plan: the state
  /// weights start from it instead of the weights file or zeros. Must
  /// outlive the constructor.
  const SafetensorsFile *checkpoint = nullptr;
  /// Lets kernels prepare once at load (KernelInfo::prepare; the CPU matmul
  /// repacks constant weights into the GEMM library's layout). A weight
  /// whose every reader keeps its own prepared copy is then released from
  /// the arena: buffer() reads it as zeros. Never for training plans.
  bool prepareKernels = true;
  /// Which optional groups (Plan.optional_groups) a run runs.
  OptionalPolicy optionalPolicy = OptionalPolicy::Dynamic;
};

/// Runs one validated plan on one rank.
class Executor {
public:
  /// `plan` and `comm` must outlive the executor. `weights` is the file the
  /// plan was validated against (may be null when the plan has no weights).
  /// Throws PlanError when the communicator's mesh differs from the plan's,
  /// ExecutionError when the arena cannot be allocated.
  Executor(const LoadedPlan &plan, Communicator &comm,
           const SafetensorsFile *weights, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// The arena tensor of the input binding `name`, to fill before run().
  /// Throws std::invalid_argument for an unknown name.
  TensorView input(const std::string &name) const;
  /// The arena tensor of the output binding `name`, valid after run().
  TensorView output(const std::string &name) const;
  /// The arena tensor of buffer `id`.
  TensorView buffer(uint32_t id) const;

  /// Runs every stream once. Throws ExecutionError on any failure.
  void run();

  /// Timings of the last run (also of a failed one).
  const RunProfile &profile() const { return profile_; }

private:
  struct State;

  void prepareKernels();
  void runStream(size_t stream);
  void execute(size_t stream, const PlanStep &step);
  void runCollective(size_t stream, const PlanStep &step);
  void waitEvent(uint32_t event);
  void recordEvent(uint32_t event);
  void reportFailure(size_t stream, size_t index, const std::string &what);
  /// Whether this run skips optional group `group`; decided when its stream
  /// first reaches it, by the policy (Dynamic: when every until_event is
  /// recorded by then).
  bool skipsGroup(int32_t group);

  const LoadedPlan &plan_;
  Communicator &comm_;
  /// Per stream, the communicator its collectives go through: comm_, or
  /// one of `duplicates_` when another stream runs collectives on the same
  /// group (collectiveChannels).
  std::vector<Communicator *> streamComm_;
  std::vector<std::unique_ptr<Communicator>> duplicates_;
  ExecutorOptions options_;
  uint8_t *arena_ = nullptr;
  size_t arenaMapped_ = 0;
  std::vector<std::vector<PlanStep>> steps_;
  /// What the kernels' `prepare` made (KernelArgs::prepared points into it).
  std::vector<std::shared_ptr<const void>> prepared_;
  std::unique_ptr<State> state_;
  RunProfile profile_;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_EXEC_EXECUTOR_H
