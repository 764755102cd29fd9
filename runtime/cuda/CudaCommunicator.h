//===- CudaCommunicator.h - collectives on device memory --------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA executor's collectives: the Communicator's operations, on device
// buffers, enqueued on a CUDA stream. Groups of one rank (every group of a
// one-rank run) are device-to-device copies. Larger groups run on NCCL:
// rank 0 makes a unique id, MPI broadcasts it, every rank joins one world
// NCCL communicator and splits one communicator per mesh-axis group off it
// (ncclCommSplit, the same sequence of splits on every rank: prepare() takes
// the plan's axis sets in plan order), one per channel where two streams run
// collectives on the same group (a plan's gathers and reduce-scatters). The plan's `comm_sms` becomes NCCL's
// maxCTAs, the share of SMs its kernels may occupy beside compute.
//
// Communicators are non-blocking: every NCCL call is settled against the
// timeout (a peer that never joins, or dies, fails the call instead of
// hanging it), and waitFor() polls NCCL's asynchronous errors while the
// executor waits for a run to finish; abort() tears the communicators down
// so that kernels stuck on a dead peer return.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_CUDACOMMUNICATOR_H
#define BRAID_RUNTIME_CUDA_CUDACOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

#include <cuda_runtime.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace braid::rt::cuda {

class CudaCommunicator {
public:
  virtual ~CudaCommunicator() = default;

  virtual int64_t rank() const = 0;
  virtual const MeshShape &mesh() const = 0;

  /// Makes the communicators of the groups spanned by each axis set, in this
  /// order (the same on every rank), for `channel`: streams on different
  /// channels (collectiveChannels) get their own communicators of a group,
  /// since their calls interleave differently on every rank. Every rank
  /// prepares the same channels in the same order. `commSms` > 0 caps
  /// NCCL's CTAs.
  virtual void prepare(const std::vector<std::vector<std::string>> &axisSets,
                       int commSms, size_t channel = 0) = 0;
  /// The channel the collectives enqueued on `stream` use (default 0).
  virtual void bindStream(cudaStream_t stream, size_t channel) = 0;

  // The Communicator's collectives, same layouts, on device memory.
  virtual void allReduce(const std::vector<std::string> &axes, const void *in,
                         void *out, int64_t count, DType dtype, ReduceOp op,
                         cudaStream_t stream) = 0;
  virtual void allGather(const std::vector<std::string> &axes, const void *in,
                         void *out, int64_t count, DType dtype,
                         cudaStream_t stream) = 0;
  virtual void reduceScatter(const std::vector<std::string> &axes,
                             const void *in, void *out, int64_t count,
                             DType dtype, ReduceOp op,
                             cudaStream_t stream) = 0;
  virtual void allToAll(const std::vector<std::string> &axes, const void *in,
                        void *out, int64_t count, DType dtype,
                        cudaStream_t stream) = 0;
  virtual void permute(const std::vector<std::string> &axes, const void *in,
                       void *out, int64_t count, DType dtype, int64_t shift,
                       cudaStream_t stream) = 0;
  virtual void broadcast(const std::vector<std::string> &axes, const void *in,
                         void *out, int64_t count, DType dtype, int64_t root,
                         cudaStream_t stream) = 0;

  /// Throws CollectiveError if a communicator reported an asynchronous
  /// error (a peer died, the network failed).
  virtual void checkAsyncErrors() = 0;
  /// Aborts every communicator (after a timeout); later calls fail.
  virtual void abort() = 0;

  void setTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }
  std::chrono::milliseconds timeout() const { return timeout_; }

private:
  std::chrono::milliseconds timeout_{std::chrono::seconds(300)};
};

/// The communicator for this process: one rank without a launcher, NCCL
/// bootstrapped over MPI under mpirun (`argc`/`argv` go to MPI_Init). Throws
/// CollectiveError when the world does not match the mesh or this build has
/// no NCCL / MPI for a run of several ranks.
std::unique_ptr<CudaCommunicator>
makeCudaCommunicator(const MeshShape &mesh, int64_t launchedRanks, int *argc,
                     char ***argv);

} // namespace braid::rt::cuda

#endif // BRAID_RUNTIME_CUDA_CUDACOMMUNICATOR_H
