//===- LocalCommunicator.h - the one-rank world -----------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The communicator of a run with a single rank: every group has one member,
// so every collective copies its input to its output (a reduction over one
// value is that value, avg included). Used by braid-run without mpirun and by
// tests of the executor.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COMM_LOCALCOMMUNICATOR_H
#define BRAID_RUNTIME_COMM_LOCALCOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

namespace braid::rt {

/// Collectives of a world of one rank.
class LocalCommunicator final : public Communicator {
public:
  /// `mesh` must have exactly one rank (every axis of size 1); throws
  /// std::invalid_argument otherwise.
  explicit LocalCommunicator(MeshShape mesh);

  int64_t rank() const override { return 0; }
  const MeshShape &mesh() const override { return mesh_; }
  std::unique_ptr<Communicator> duplicate() override;

  void allReduce(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype, ReduceOp op) override;
  void allGather(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype) override;
  void reduceScatter(const std::vector<std::string> &axes, const void *in,
                     void *out, int64_t count, DType dtype,
                     ReduceOp op) override;
  void allToAll(const std::vector<std::string> &axes, const void *in, void *out,
                int64_t count, DType dtype) override;
  void permute(const std::vector<std::string> &axes, const void *in, void *out,
               int64_t count, DType dtype, int64_t shift) override;
  void broadcast(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype, int64_t root) override;

private:
  /// Checks the axes and the count, then copies count elements.
  void copy(const char *collective, const std::vector<std::string> &axes,
            const void *in, void *out, int64_t count, DType dtype) const;

  MeshShape mesh_;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_COMM_LOCALCOMMUNICATOR_H
