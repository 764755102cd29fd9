//===- ThreadCommunicator.h - the ranks of a mesh as threads ----*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Runs every rank of a mesh as threads of one process: a ThreadWorld holds
// the shared state and hands out one Communicator per rank. A collective is a
// rendezvous of its group's members in shared memory, matched per group (the
// group's ranks) and per call number on that group, so different streams of
// one rank may run collectives on different groups at the same time, as the
// Communicator contract allows. Used by in-process multi-rank runs: the
// executor's tests and braid-fuzz-partition.
//
// Semantics are MpiCommunicator's (see MpiCommunicator.h):
//  - f32 reduces in float in group order; f16 and bf16 reduce pairwise in
//    float and round each partial result to nearest even; Avg is Sum divided
//    by the group size (rounded again for 16-bit floats); for i64 and i32 it
//    is C++ integer division (truncates toward zero).
//  - i1 holds 0/1 bytes: Sum and Max are logical or, Min and Avg logical and.
//  - Max and Min of floats return NaN when either operand is NaN.
//  - Counts above 2^31 - 1 elements per block throw, as with MPI.
// Unlike MPI, any `in` and `out` may alias (results are staged), and the
// members of one call are checked against each other: a member that issues
// another collective, count, element type, reduction, root or shift at the
// same position on the group makes every member throw CollectiveError naming
// both calls, where MPI would hang or mix up data.
//
// Failures: a member that waits longer than its communicator's timeout for
// its peers throws CollectiveError naming its rank, the collective and the
// group, and the world refuses every later call; abort() does the same at
// once (a rank whose run failed frees its peers from waiting out the
// timeout).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COMM_THREADCOMMUNICATOR_H
#define BRAID_RUNTIME_COMM_THREADCOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

#include <memory>
#include <string>

namespace braid::rt {

/// The shared state of the ranks of one mesh that run as threads of this
/// process.
class ThreadWorld {
public:
  /// Throws std::invalid_argument for an invalid mesh (a size below 1, axis
  /// names that repeat).
  explicit ThreadWorld(MeshShape mesh);
  ~ThreadWorld();
  ThreadWorld(const ThreadWorld &) = delete;
  ThreadWorld &operator=(const ThreadWorld &) = delete;

  const MeshShape &mesh() const;

  /// The communicator of `rank` (in [0, numRanks)); the world must outlive
  /// it. Throws std::invalid_argument for a rank outside the mesh.
  std::unique_ptr<Communicator> communicator(int64_t rank);

  /// Makes every collective that waits now, or is issued later, throw
  /// CollectiveError with `reason`. Only the first reason is kept.
  void abort(const std::string &reason);

  struct State;

private:
  std::unique_ptr<State> state_;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_COMM_THREADCOMMUNICATOR_H
