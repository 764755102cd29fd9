//===- RunProfile.h - timings of one run of a plan --------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The executor times every instruction (steady clock, nanoseconds from the
// start of the run). From that come a text summary (total time, busy time per
// stream, time per op) and a Chrome trace JSON that Perfetto and
// chrome://tracing open: one process per rank, one thread ("tid") per stream,
// one complete ("X") event per instruction named after its op, with the
// source location in args. Several ranks' profiles merge into one trace on
// one clock (mergeProfiles: braid-run gathers them to rank 0) and one
// summary across ranks.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_EXEC_RUNPROFILE_H
#define BRAID_RUNTIME_EXEC_RUNPROFILE_H

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace braid::rt {

/// One instruction of one run.
struct InstructionTiming {
  /// The op ("matmul", "all_reduce", "wait_event", ...).
  std::string name;
  std::string location;
  /// Kernels and collectives keep a stream busy; event records and waits do
  /// not.
  bool busy = false;
  /// Nanoseconds since the start of the run; -1 when it did not run (an
  /// earlier failure stopped the stream).
  int64_t startNs = -1;
  int64_t endNs = -1;
};

struct StreamTiming {
  std::string name;
  std::vector<InstructionTiming> instructions;

  /// Total time of the busy instructions that ran.
  int64_t busyNs() const;
};

/// The timings of one run on one rank.
struct RunProfile {
  int64_t rank = 0;
  /// From the start of the run until every stream finished.
  int64_t totalNs = 0;
  /// Where the run started on a clock shared by every rank of a merged
  /// trace (mergeProfiles): nanoseconds after the ranks' common sync point
  /// (braid-run measures it; 0 for one rank).
  int64_t offsetNs = 0;
  std::vector<StreamTiming> streams;
  /// Why the instructions carry no times (e.g. the run was one CUDA graph);
  /// empty when they do.
  std::string untimed;
  /// Per optional group of the plan (Plan.optional_groups): whether the run
  /// ran it (false: skipped). Empty for a plan without groups.
  std::vector<bool> groupsRun;

  /// Total, per-stream busy time and share, and the ops that took longest.
  std::string summary() const;
  /// Writes the Chrome trace JSON of this run.
  void writeChromeTrace(std::ostream &os) const;

  /// The profile as JSON text and back (to gather ranks' profiles); fromJson
  /// throws std::invalid_argument on text toJson did not write.
  std::string toJson() const;
  static RunProfile fromJson(const std::string &text);
};

/// The ranks' profiles of one run, in rank order.
struct MergedProfile {
  std::vector<RunProfile> ranks;

  /// One Chrome trace: a process per rank, a thread per stream, every event
  /// at its rank's offsetNs plus its own time, so that the ranks' events
  /// line up on one clock.
  void writeChromeTrace(std::ostream &os) const;
  /// The run across ranks: the slowest rank's total (the run's time) and
  /// the fastest, each stream's mean busy time, the ops that took longest
  /// summed over ranks.
  std::string summary() const;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_EXEC_RUNPROFILE_H
