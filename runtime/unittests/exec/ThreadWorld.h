//===- ThreadWorld.h - several ranks in one process, for tests --*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// A test double for MPI: every rank is a thread of this process and a
// collective is a rendezvous of its group's members in shared memory. It lets
// tests run multi-rank plans (collectives with real groups, sharded weights,
// rank-dependent indices) without mpirun. Reductions compute in double.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_UNITTESTS_EXEC_THREADWORLD_H
#define BRAID_RUNTIME_UNITTESTS_EXEC_THREADWORLD_H

#include "runtime/comm/Communicator.h"

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

namespace braid::rt::test {

/// The shared state of all ranks.
class ThreadWorld {
public:
  explicit ThreadWorld(MeshShape mesh) : mesh_(std::move(mesh)) {}

  /// The communicator of `rank` (owned by the caller; the world must outlive
  /// it).
  std::unique_ptr<Communicator> communicator(int64_t rank);

  /// Blocks until every member of `members` has called it with the same
  /// `key` and sequence number; returns every member's `in` in group order,
  /// then waits again (in `leave`) so inputs stay valid while read.
  std::vector<const void *> arrive(const std::vector<int64_t> &members,
                                   int64_t rank, const void *in,
                                   std::chrono::milliseconds timeout);
  void leave(const std::vector<int64_t> &members, int64_t rank,
             std::chrono::milliseconds timeout);

  const MeshShape &mesh() const { return mesh_; }

private:
  struct Meeting {
    std::vector<const void *> inputs;
    size_t arrived = 0;
    size_t left = 0;
  };
  using Key = std::pair<std::vector<int64_t>, int64_t>;

  Meeting &meeting(const std::vector<int64_t> &members, int64_t rank,
                   bool leaving);

  MeshShape mesh_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<Key, Meeting> meetings_;
  /// Per rank and group: how many arrivals / departures so far.
  std::map<std::pair<int64_t, std::vector<int64_t>>, int64_t> arrivals_,
      departures_;
};

} // namespace braid::rt::test

#endif // BRAID_RUNTIME_UNITTESTS_EXEC_THREADWORLD_H
