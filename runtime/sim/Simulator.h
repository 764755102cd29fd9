//===- Simulator.h - runs a plan in virtual time ----------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The `sim` backend: runs a plan's streams in virtual time on a described
// cluster (a hardware profile and a node count) without executing anything.
//
// One rank's plan stands for every rank (the plan is SPMD, so all ranks issue
// the same instructions at the same virtual times and every collective starts
// on all members at once). A plan whose ranks can do different work, one
// with optional groups (braidc --algorithm acco=M:N) on ranks of unequal
// speeds or policies, is simulated rank by rank instead: every rank's
// streams run on its own GPU, a collective starts when the last member of
// its group reaches it and runs at its slowest member's rate, and each rank
// decides its optional groups as the executors do (runtime/exec/PlanSteps.h,
// OptionalPolicy). Each instruction gets its time alone on the GPU
// from the cost model: kernels from their FLOPs and bytes (roofline,
// runtime/cost/Roofline.h), collectives from their kind, their buffer size and
// where their group sits (runtime/cost/ClusterCost.h). Then the streams run
// as CUDA streams do: in order, each waiting for the events it waits on,
// which complete when the recording stream reaches the record. Work that
// runs at the same time on different streams progresses at reduced rates
// (runtime/cost/Contention.h), so the simulation advances from one
// completion to the next, recomputing rates in between; the result is exact
// for that piecewise-constant model.
//
// Outputs: makespan, per-stream busy time, exposed communication (time when
// a collective runs and no kernel does), overlap efficiency against the
// bound max(total compute, total communication) (each total the sum of
// isolated times), a Chrome trace (the executor's writer, RunProfile) and
// an SVG timeline (runtime/sim/TimelineSvg.h).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SIM_SIMULATOR_H
#define BRAID_RUNTIME_SIM_SIMULATOR_H

#include "runtime/comm/Communicator.h"
#include "runtime/cost/CollectiveCost.h"
#include "runtime/cost/HardwareProfile.h"
#include "runtime/cost/Roofline.h"
#include "runtime/exec/PlanSteps.h"
#include "runtime/exec/RunProfile.h"
#include "runtime/plan/PlanLoader.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace braid::rt {

/// The simulated cluster and model switches.
struct SimConfig {
  HardwareProfile profile;
  /// Nodes in the cluster; 0 takes as few as hold the plan's mesh. Ranks
  /// fill nodes in row-major order; nodes * gpus_per_node must be at least
  /// the mesh size.
  int64_t nodes = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  /// Apply the profile's contention factors (off: overlapping work runs at
  /// full speed, except that kernels still share the GPU and collectives
  /// their link).
  bool contention = true;
  /// Heterogeneous workers: each rank's kernel time factor (1.5: its
  /// kernels take 1.5x as long); empty: all 1. Every collective starts when
  /// its last member reaches it. In a plan without optional groups every
  /// rank does the same work, so the slowest rank sets every collective's
  /// start: the simulator runs that rank (its kernels scaled by the largest
  /// factor) and the faster ranks wait at each collective. A plan with
  /// optional groups is simulated rank by rank (the file comment).
  std::vector<double> rankSpeeds;
  /// Each rank's policy for the plan's optional groups (braid-run
  /// --optional-groups): one per rank, the last for the rest; empty: all
  /// Dynamic.
  std::vector<OptionalPolicy> optionalPolicies;
};

enum class SimOpKind { Kernel, Collective, RecordEvent, WaitEvent };

/// One instruction of one stream, with its simulated times.
struct SimOp {
  SimOpKind kind = SimOpKind::Kernel;
  /// The kernel op, the collective kind, "record_event" or "wait_event".
  std::string name;
  std::string location;
  /// Kernels: the roofline class and the element type used for its peak.
  KernelClass kernelClass = KernelClass::Memory;
  DType dtype = DType::F32;
  /// Kernels: FLOPs; collectives: 0.
  double flops = 0;
  /// Kernels: bytes moved; collectives: S (runtime/cost/CollectiveCost.h).
  double bytes = 0;
  /// Collectives: the mesh axes ("dp, tp"), the group size and whether a
  /// group spans nodes.
  CollectiveKind collectiveKind = CollectiveKind::AllReduce;
  std::string axes;
  int64_t groupSize = 1;
  bool interNode = false;
  /// Events: the event number.
  uint32_t event = 0;
  /// Collectives: the lowest rank of this rank's group (where the members
  /// meet when every rank is simulated).
  int64_t groupLeader = 0;
  /// The optional group the instruction is in (0-based; -1: none); for a
  /// kernel of one, whether skipping it writes zeros to its outputs and
  /// what that takes alone, and whether this run skipped it (its isolated
  /// time is then the zero fill's, or 0).
  int32_t optionalGroup = -1;
  bool zeroWhenSkipped = false;
  double zeroFillSec = 0;
  bool skipped = false;
  /// Seconds the instruction takes alone on the GPU.
  double isolatedSec = 0;
  /// Virtual seconds since the start of the run; for a wait, from reaching
  /// it to passing it.
  double startSec = 0;
  double endSec = 0;

  /// Kernels and collectives keep a stream busy; events do not.
  bool busy() const {
    return kind == SimOpKind::Kernel || kind == SimOpKind::Collective;
  }
  double durationSec() const { return endSec - startSec; }
  /// Whether sharing the GPU or a link made it take longer than alone.
  bool slowed() const;
};

struct SimStream {
  std::string name;
  std::vector<SimOp> ops;

  /// The summed duration of the busy ops.
  double busySec() const;
};

/// The numbers every run reports (DESIGN.md, "Cost model and simulator").
struct SimMetrics {
  double makespanSec = 0;
  /// Sums of isolated times of all kernels and of all collectives.
  double totalComputeSec = 0;
  double totalCommunicationSec = 0;
  /// max(totalComputeSec, totalCommunicationSec): no schedule of these
  /// kernels and collectives on one GPU is shorter (except collectives on
  /// different link classes overlapping each other).
  double boundSec = 0;
  /// boundSec / makespanSec; 1 is perfect overlap.
  double overlapEfficiency = 0;
  /// Time some kernel runs; time some collective runs (unions of intervals).
  double computeActiveSec = 0;
  double communicationActiveSec = 0;
  /// Time a collective runs while no kernel does.
  double exposedCommunicationSec = 0;
  /// 1 - exposed / communicationActive (1 when there is no communication).
  double hiddenCommunicationFraction = 1;
  int64_t kernels = 0;
  int64_t collectives = 0;
};

/// One simulated rank.
struct SimRank {
  int64_t rank = 0;
  /// Its kernel time factor (--rank-speeds).
  double factor = 1;
  OptionalPolicy policy = OptionalPolicy::Dynamic;
  /// When its last instruction ends.
  double finishSec = 0;
  /// The plan's optional groups it ran (of SimResult::optionalGroups).
  int64_t groupsRun = 0;
  /// The time its kernels took (the sum of their simulated durations).
  double kernelSec = 0;
};

/// The result of one simulated run.
struct SimResult {
  std::string profileName;
  MeshShape mesh;
  int64_t worldSize = 1;
  int64_t nodes = 1;
  int64_t gpusPerNode = 1;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  /// The slowest rank's kernel time factor and which rank it is (1 and -1
  /// without --rank-speeds).
  double slowestFactor = 1;
  int64_t slowestRank = -1;
  /// The ranks simulated: every rank (everyRank) or the one that stands for
  /// all; `streams` are the timeline of `shownRank`, the slowest.
  std::vector<SimRank> ranks;
  bool everyRank = false;
  int64_t shownRank = 0;
  /// The plan's optional groups (0: none).
  int64_t optionalGroups = 0;
  std::vector<SimStream> streams;
  /// The makespan is the last rank's finish; the rest of the metrics are
  /// shownRank's.
  SimMetrics metrics;
  /// The plan's arena: every buffer the plan needs at once, per rank (0:
  /// unknown, for a measured run), and the profile GPU's memory (0: none).
  uint64_t arenaBytes = 0;
  double gpuMemoryBytes = 0;

  /// A text report: cluster, metrics, streams, collectives per group.
  std::string summary() const;
  /// The timeline as the executor's profile (nanoseconds), for its Chrome
  /// trace writer and summary.
  RunProfile toRunProfile() const;
  /// The Chrome trace JSON of the simulated timeline (Perfetto opens it).
  void writeChromeTrace(std::ostream &os) const;
};

/// A measured run (one rank's profile, from the CPU or CUDA backend) in the
/// simulator's terms, so that its timeline draws and measures like a
/// simulated one: collectives and events by name, kernels otherwise (no
/// roofline class: they draw in one color), every duration as measured.
/// `platform` says what ran it ("cpu backend, rank 0").
SimResult measuredResult(const RunProfile &profile, const MeshShape &mesh,
                         const std::string &platform);

/// Simulates `plan` on `config`'s cluster. Throws std::invalid_argument when
/// the cluster cannot hold the plan's mesh.
SimResult simulate(const LoadedPlan &plan, const SimConfig &config);

/// Validates a plan for simulation: like loading it for the CPU backend,
/// but without a weights file (weights only fill buffers at load, which
/// costs no simulated time) and for the plan's own mesh size. Throws
/// PlanError.
LoadedPlan validatePlanForSimulation(plan::Plan proto);

/// Reads a .bplan file and validates it for simulation; throws PlanError.
LoadedPlan loadPlanForSimulation(const std::string &path);

} // namespace braid::rt

#endif // BRAID_RUNTIME_SIM_SIMULATOR_H
