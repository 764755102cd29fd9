//===- PlanSteps.h - a plan's instructions, resolved for one rank -*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The one decoding of a validated plan's instructions, for everything that
// walks them: the executors (CPU threads, CUDA streams), which bind the
// tensors to their arena, and the simulator, which binds them to no memory
// and reads only kinds, shapes, collectives, events and cost estimates. Per
// stream, each instruction with its tensors, its rank-dependent indices
// evaluated, its collective's group size, and the block layout a collective
// needs around the communicator's rank-major flat buffers. A plan field that
// any of them needs is read here, once.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_EXEC_PLANSTEPS_H
#define BRAID_RUNTIME_EXEC_PLANSTEPS_H

#include "runtime/comm/Communicator.h"
#include "runtime/cost/CollectiveCost.h"
#include "runtime/exec/KernelRegistry.h"
#include "runtime/exec/RunProfile.h"
#include "runtime/plan/PlanLoader.h"

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace braid::rt {

class SafetensorsFile;

enum class StepKind { Kernel, Collective, Record, Wait };

/// One instruction of a plan, decoded for one rank.
struct PlanStep {
  StepKind kind = StepKind::Kernel;
  /// The kernel op, the collective kind, "record_event" or "wait_event": for
  /// errors and traces.
  std::string name;
  /// The instruction's location in the plan (points into the plan).
  const std::string *location = nullptr;
  /// The plan's optional group (Plan.optional_groups) the step is in; -1:
  /// none. A skipped group's kernels with zeroWhenSkipped write zeros to
  /// their outputs and its other kernels do not run (decideOptionalGroup).
  int32_t optionalGroup = -1;
  bool zeroWhenSkipped = false;
  // Kernel.
  const KernelInfo *kernel = nullptr;
  KernelArgs args;
  /// The compiler's estimates of the kernel's FLOPs and bytes moved (the
  /// simulator's inputs; negative only from a faulty compiler).
  int64_t flops = 0, bytes = 0;
  // Collective.
  CollectiveKind collective = CollectiveKind::AllReduce;
  std::vector<std::string> axes;
  TensorView in, out;
  int64_t groupSize = 1;
  ReduceOp reduction = ReduceOp::Sum;
  int64_t dim = 0, splitDim = 0, concatDim = 0, shift = 0, root = 0;
  // Events.
  uint32_t event = 0;
};

/// Whether a run runs the optional groups it reaches: every one (`All`, what
/// the plan means without a run-time count), none it may skip (`None`), or
/// as the plan says: skip a group when its until_events are all recorded as
/// its stream reaches it (`Dynamic`). The fixed policies make a run
/// reproducible (tests compare them with the reference).
enum class OptionalPolicy { Dynamic, All, None };

/// Parses "dynamic", "all" or "none"; nullopt for anything else.
std::optional<OptionalPolicy> parseOptionalPolicy(const std::string &text);
/// "dynamic", "all" or "none", as parseOptionalPolicy reads them.
const char *toString(OptionalPolicy policy);

/// dst[b][a] = src[a][b] for blocks of `chunk` bytes, a < rows, b < columns.
struct BlockTranspose {
  int64_t rows = 0, columns = 0;
  size_t chunk = 0;
};

/// How a collective maps onto the Communicator's flat call: rearrange the
/// input (`before`), call with `count` elements per block, rearrange the
/// result (`after`).
struct CollectiveLayout {
  int64_t count = 0;
  std::optional<BlockTranspose> before, after;
};

/// The layout of a collective step (all_gather, reduce_scatter, all_to_all
/// may need rearranging; the others never do).
CollectiveLayout collectiveLayout(const PlanStep &step);

/// Bytes of the three scratch buffers runCollectiveStep asks for: a copy of
/// an input that overlaps the output, the input rearranged before the call,
/// the result before its rearrangement (0: not needed).
std::array<uint64_t, 3> collectiveScratchBytes(const PlanStep &step);

/// Runs a collective step on `comm`: the sequence every executor follows.
/// `ops` is the backend's memory: `scratch(k, bytes)` (buffer k of
/// collectiveScratchBytes), `copy(dst, src, bytes)` and `transpose(src, dst,
/// BlockTranspose)`; `extra...` trails every communicator call (the CUDA
/// backend's stream).
template <typename Comm, typename Ops, typename... Extra>
void runCollectiveStep(const PlanStep &step, Comm &comm, Ops &ops,
                       Extra... extra) {
  const TensorView &in = step.in, &out = step.out;
  if (in.numElements() == 0)
    return;
  // All-reduce works in place; the others need distinct input and output.
  if (step.collective == CollectiveKind::AllReduce) {
    comm.allReduce(step.axes, in.data, out.data, in.numElements(), in.dtype,
                   step.reduction, extra...);
    return;
  }
  const void *source = in.data;
  if (in.overlaps(out)) {
    void *copy = ops.scratch(0, in.numBytes());
    ops.copy(copy, in.data, in.numBytes());
    source = copy;
  }
  CollectiveLayout layout = collectiveLayout(step);
  if (layout.before) {
    void *packed = ops.scratch(1, in.numBytes());
    ops.transpose(source, packed, *layout.before);
    source = packed;
  }
  void *target = layout.after ? ops.scratch(2, out.numBytes()) : out.data;
  int64_t count = layout.count;
  switch (step.collective) {
  case CollectiveKind::AllReduce:
    break;
  case CollectiveKind::AllGather:
    comm.allGather(step.axes, source, target, count, in.dtype, extra...);
    break;
  case CollectiveKind::ReduceScatter:
    comm.reduceScatter(step.axes, source, target, count, in.dtype,
                       step.reduction, extra...);
    break;
  case CollectiveKind::AllToAll:
    comm.allToAll(step.axes, source, target, count, in.dtype, extra...);
    break;
  case CollectiveKind::CollectivePermute:
    comm.permute(step.axes, source, target, count, in.dtype, step.shift,
                 extra...);
    break;
  case CollectiveKind::Broadcast:
    comm.broadcast(step.axes, source, target, count, in.dtype, step.root,
                   extra...);
    break;
  }
  if (layout.after)
    ops.transpose(target, out.data, *layout.after);
}

/// Resolves every instruction of `plan` for `rank`; `buffer(id)` gives the
/// view of a buffer (its arena memory, or bufferLayout's view without
/// memory). Also fills `profile` with each stream's name and one timing
/// entry per instruction.
std::vector<std::vector<PlanStep>>
resolvePlanSteps(const LoadedPlan &plan, const MeshShape &mesh, int64_t rank,
                 const std::function<TensorView(uint32_t)> &buffer,
                 RunProfile &profile);

/// Writes the plan's constants and this rank's slice of every weight:
/// `sink(buffer, fill)` provides host memory for the buffer, calls fill on it
/// (which writes buffer.bytes bytes) and puts it in place. ZEROS weights are
/// zeros; with `checkpoint` (a --resume checkpoint checked against the plan)
/// state weights come from it instead of the weights file or zeros. Throws
/// PlanError when a file lacks a weight or holds another one than the plan
/// was validated against.
void writeInitialData(
    const LoadedPlan &plan, const MeshShape &mesh, int64_t rank,
    const SafetensorsFile *weights,
    const std::function<void(const BufferInfo &,
                             const std::function<void(void *)> &)> &sink,
    const SafetensorsFile *checkpoint = nullptr);

/// An order in which one thread can issue every step of every stream to
/// queues that run in order (CUDA streams): each wait comes after the record
/// of its event. Streams are advanced round-robin, each as far as it goes.
struct IssueOrder {
  /// (stream, index) pairs.
  std::vector<std::pair<size_t, size_t>> steps;
  /// Set when some wait can never be issued (its event is recorded by no
  /// step that can run before it): the first such step.
  std::optional<std::pair<size_t, size_t>> blocked;
};
IssueOrder issueOrder(const std::vector<std::vector<PlanStep>> &steps,
                      uint32_t numEvents);

/// Buffer `id` of `plan` in an arena starting at `arena`.
TensorView arenaView(const LoadedPlan &plan, uint8_t *arena, uint32_t id);

/// Per stream, the communicator channel its collectives go through: the
/// smallest channel on which no earlier stream runs collectives over any of
/// the same mesh axes (longer than 1). Two streams whose collectives could
/// be matched against each other (one group, like a plan's gathers and
/// reduce-scatters over dp, or overlapping groups, which a backend may run
/// over shared sub-communicators) thus get separate communicators
/// (Communicator::duplicate): their calls may interleave differently on
/// every rank, and apart they need not be ordered. The same on every rank.
std::vector<size_t>
collectiveChannels(const std::vector<std::vector<PlanStep>> &steps,
                   const MeshShape &mesh);

/// Buffer `id` of `plan` without memory (data null): its element type and
/// shape, for walking a plan without running it.
TensorView bufferLayout(const LoadedPlan &plan, uint32_t id);

/// The buffer of the input (or output) binding `name`; throws
/// std::invalid_argument for an unknown name.
uint32_t bindingBuffer(const LoadedPlan &plan, const std::string &name,
                       bool input);

/// "rank R, stream 'S', instruction I (op at loc)": the position of a step
/// for error messages.
std::string describeStep(int64_t rank, const RunProfile &profile,
                         const std::vector<std::vector<PlanStep>> &steps,
                         size_t stream, size_t index);

} // namespace braid::rt

#endif // BRAID_RUNTIME_EXEC_PLANSTEPS_H
