//===- Communicator.h - collectives between the ranks of a run --*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The executor talks to other ranks only through this interface. Ranks form
// a mesh with named axes (row-major: the last axis varies fastest); a
// collective runs over the *group* of ranks that differ from this one only
// along some axes. Buffers are flat: where a collective concatenates or
// splits, it does so in rank-major blocks of the group (group index 0 first);
// the executor arranges blocks along the tensor dimension the plan names.
//
// Implementations: LocalCommunicator (one rank), MpiCommunicator (mpirun),
// ThreadCommunicator (every rank a thread of one process), and the CUDA
// backend's NCCL communicator. Every call either completes or throws
// CollectiveError.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COMM_COMMUNICATOR_H
#define BRAID_RUNTIME_COMM_COMMUNICATOR_H

#include "runtime/core/DType.h"

#include <chrono>
#include <memory>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace braid::rt {

/// The mesh of a run: axis names and sizes, row-major rank numbering.
struct MeshShape {
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;

  /// Total number of ranks.
  int64_t numRanks() const;
  /// This rank's coordinate along `axis`; throws for an unknown axis.
  int64_t coordinate(int64_t rank, const std::string &axis) const;
  /// The ranks of `rank`'s group spanned by `axes`, in group order (the
  /// listed axes vary row-major in the order of the mesh's axes).
  std::vector<int64_t> group(int64_t rank,
                             const std::vector<std::string> &axes) const;
};

/// "[dp, tp]": axes as collective errors name them.
std::string formatAxes(const std::vector<std::string> &axes);
/// "[dp=2, tp=4]" (as far as names and sizes pair up).
std::string formatMesh(const MeshShape &mesh);
/// "0.05 s": a timeout as errors state it.
std::string formatSeconds(std::chrono::milliseconds duration);

enum class ReduceOp { Sum, Max, Min, Avg };

/// A collective failed or timed out; the message names the rank, the
/// collective and, when the executor adds it, the plan position.
class CollectiveError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Collectives over mesh-axis groups. Thread-safe for one caller thread per
/// stream; calls on one group are issued in the same order by every member.
/// Two streams that both run collectives on one group each need their own
/// communicator (duplicate()): their calls interleave differently on every
/// rank.
class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int64_t rank() const = 0;
  virtual const MeshShape &mesh() const = 0;

  /// A communicator over the same mesh whose collectives are matched apart
  /// from this one's (MPI: its own communicators, NCCL: its own comms), so
  /// that another stream may run collectives on the same groups at the same
  /// time. Collective over the world: every rank calls it, in the same order
  /// among its duplicate() calls. It takes this communicator's timeout.
  virtual std::unique_ptr<Communicator> duplicate() = 0;

  /// Elementwise reduction of `count` elements; every member gets the result.
  /// `in` and `out` may alias.
  virtual void allReduce(const std::vector<std::string> &axes, const void *in,
                         void *out, int64_t count, DType dtype,
                         ReduceOp op) = 0;
  /// Each member contributes `count` elements; `out` receives group-size
  /// blocks of `count`, in group order.
  virtual void allGather(const std::vector<std::string> &axes, const void *in,
                         void *out, int64_t count, DType dtype) = 0;
  /// `in` holds group-size blocks of `count`; member i gets the reduction of
  /// every member's block i.
  virtual void reduceScatter(const std::vector<std::string> &axes,
                             const void *in, void *out, int64_t count,
                             DType dtype, ReduceOp op) = 0;
  /// `in` holds group-size blocks of `count`; block j goes to member j, and
  /// `out` block i comes from member i.
  virtual void allToAll(const std::vector<std::string> &axes, const void *in,
                        void *out, int64_t count, DType dtype) = 0;
  /// Sends `in` to group member (i + shift) mod n and receives from
  /// (i - shift) mod n into `out`.
  virtual void permute(const std::vector<std::string> &axes, const void *in,
                       void *out, int64_t count, DType dtype,
                       int64_t shift) = 0;
  /// Copies member `root`'s buffer to every member (`in` used at the root).
  virtual void broadcast(const std::vector<std::string> &axes, const void *in,
                         void *out, int64_t count, DType dtype,
                         int64_t root) = 0;

  /// Longest a collective may wait for its peers before CollectiveError.
  void setTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }
  std::chrono::milliseconds timeout() const { return timeout_; }

private:
  std::chrono::milliseconds timeout_{std::chrono::seconds(300)};
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_COMM_COMMUNICATOR_H
