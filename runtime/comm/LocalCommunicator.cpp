//===- LocalCommunicator.cpp - the one-rank world -------------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/LocalCommunicator.h"

#include <cstring>
#include <stdexcept>

namespace braid::rt {

LocalCommunicator::LocalCommunicator(MeshShape mesh) : mesh_(std::move(mesh)) {
  int64_t ranks = mesh_.numRanks();
  if (ranks != 1)
    throw std::invalid_argument(
        "the local communicator runs one rank, but the mesh has " +
        std::to_string(ranks) +
        " (run under mpirun with a build that has MPI)");
}

void LocalCommunicator::copy(const char *collective,
                             const std::vector<std::string> &axes,
                             const void *in, void *out, int64_t count,
                             DType dtype) const {
  try {
    (void)mesh_.group(0, axes);
  } catch (const std::invalid_argument &error) {
    throw CollectiveError(std::string("rank 0: ") + collective + ": " +
                          error.what());
  }
  if (count < 0)
    throw CollectiveError(std::string("rank 0: ") + collective +
                          ": negative element count " + std::to_string(count));
  if (count == 0 || in == out)
    return;
  // memmove: the plan may place input and output in overlapping buffers.
  std::memmove(out, in, static_cast<size_t>(count) * byteSize(dtype));
}

void LocalCommunicator::allReduce(const std::vector<std::string> &axes,
                                  const void *in, void *out, int64_t count,
                                  DType dtype, ReduceOp) {
  copy("all_reduce", axes, in, out, count, dtype);
}

void LocalCommunicator::allGather(const std::vector<std::string> &axes,
                                  const void *in, void *out, int64_t count,
                                  DType dtype) {
  copy("all_gather", axes, in, out, count, dtype);
}

void LocalCommunicator::reduceScatter(const std::vector<std::string> &axes,
                                      const void *in, void *out, int64_t count,
                                      DType dtype, ReduceOp) {
  copy("reduce_scatter", axes, in, out, count, dtype);
}

void LocalCommunicator::allToAll(const std::vector<std::string> &axes,
                                 const void *in, void *out, int64_t count,
                                 DType dtype) {
  copy("all_to_all", axes, in, out, count, dtype);
}

void LocalCommunicator::permute(const std::vector<std::string> &axes,
                                const void *in, void *out, int64_t count,
                                DType dtype, int64_t) {
  // Any shift modulo a group of one is the rank itself.
  copy("collective_permute", axes, in, out, count, dtype);
}

void LocalCommunicator::broadcast(const std::vector<std::string> &axes,
                                  const void *in, void *out, int64_t count,
                                  DType dtype, int64_t root) {
  if (root != 0)
    throw CollectiveError("rank 0: broadcast: root " + std::to_string(root) +
                          " is outside a group of 1");
  copy("broadcast", axes, in, out, count, dtype);
}

std::unique_ptr<Communicator> LocalCommunicator::duplicate() {
  auto copy = std::make_unique<LocalCommunicator>(mesh_);
  copy->setTimeout(timeout());
  return copy;
}

} // namespace braid::rt
