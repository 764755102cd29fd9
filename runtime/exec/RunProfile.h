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
// source location in args.
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
  std::vector<StreamTiming> streams;
  /// Why the instructions carry no times (e.g. the run was one CUDA graph);
  /// empty when they do.
  std::string untimed;

  /// Total, per-stream busy time and share, and the ops that took longest.
  std::string summary() const;
  /// Writes the Chrome trace JSON of this run.
  void writeChromeTrace(std::ostream &os) const;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_EXEC_RUNPROFILE_H
