//===- CudaCommunicator.cpp - collectives on device memory ----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaCommunicator.h"

#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/CudaDevice.h"

#include <algorithm>
#include <map>
#include <thread>

#ifdef BRAID_RUNTIME_HAS_NCCL
#include <mpi.h>
#include <nccl.h>
#endif

namespace braid::rt::cuda {
namespace {

using Clock = std::chrono::steady_clock;

std::string axesToString(const std::vector<std::string> &axes) {
  std::string text = "[";
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? ", " : "") + axes[i];
  return text + "]";
}

/// The axes in the mesh's order, without repeats: the key of a group.
std::vector<std::string> canonicalAxes(const MeshShape &mesh,
                                       const std::vector<std::string> &axes) {
  std::vector<std::string> sorted;
  for (const std::string &name : mesh.axisNames)
    if (std::find(axes.begin(), axes.end(), name) != axes.end())
      sorted.push_back(name);
  for (const std::string &axis : axes)
    if (std::find(mesh.axisNames.begin(), mesh.axisNames.end(), axis) ==
        mesh.axisNames.end())
      throw CollectiveError("the mesh has no axis '" + axis + "'");
  return sorted;
}

class DeviceCommunicator final : public CudaCommunicator {
public:
  DeviceCommunicator(MeshShape mesh, int64_t rank)
      : mesh_(std::move(mesh)), rank_(rank) {}
  ~DeviceCommunicator() override;

  int64_t rank() const override { return rank_; }
  const MeshShape &mesh() const override { return mesh_; }

  void prepare(const std::vector<std::vector<std::string>> &axisSets,
               int commSms, size_t channel) override;
  void bindStream(cudaStream_t stream, size_t channel) override {
    streamChannels_[stream] = channel;
  }

  void allReduce(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype, ReduceOp op,
                 cudaStream_t stream) override;
  void allGather(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype,
                 cudaStream_t stream) override;
  void reduceScatter(const std::vector<std::string> &axes, const void *in,
                     void *out, int64_t count, DType dtype, ReduceOp op,
                     cudaStream_t stream) override;
  void allToAll(const std::vector<std::string> &axes, const void *in,
                void *out, int64_t count, DType dtype,
                cudaStream_t stream) override;
  void permute(const std::vector<std::string> &axes, const void *in,
               void *out, int64_t count, DType dtype, int64_t shift,
               cudaStream_t stream) override;
  void broadcast(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype, int64_t root,
                 cudaStream_t stream) override;

  void checkAsyncErrors() override;
  void abort() override;

#ifdef BRAID_RUNTIME_HAS_NCCL
  /// Joins the world NCCL communicator (MPI broadcasts rank 0's id).
  void initWorld(int *argc, char ***argv);
#endif

private:
  /// Group size of `axes` (1: a local copy does).
  int64_t groupSize(const std::vector<std::string> &axes) const {
    return static_cast<int64_t>(mesh_.group(rank_, axes).size());
  }
  void copy(const void *in, void *out, int64_t count, DType dtype,
            cudaStream_t stream) const {
    if (in != out && count > 0)
      check(cudaMemcpyAsync(out, in, count * byteSize(dtype),
                            cudaMemcpyDeviceToDevice, stream),
            "cudaMemcpyAsync (collective of one rank)");
  }
  std::string where(const char *collective,
                    const std::vector<std::string> &axes) const {
    return "rank " + std::to_string(rank_) + ": NCCL " + collective +
           " over " + axesToString(axes);
  }

  MeshShape mesh_;
  int64_t rank_ = 0;
  bool aborted_ = false;
  std::map<cudaStream_t, size_t> streamChannels_;

#ifdef BRAID_RUNTIME_HAS_NCCL
  ncclComm_t group(const std::vector<std::string> &axes,
                   const char *collective, cudaStream_t stream);
  void settle(ncclComm_t comm, ncclResult_t result, const std::string &what);

  bool mpiInitializedHere_ = false;
  ncclComm_t world_ = nullptr;
  /// Keyed by channel and canonical axes.
  std::map<std::pair<size_t, std::vector<std::string>>, ncclComm_t> groups_;
#endif
};

#ifdef BRAID_RUNTIME_HAS_NCCL
ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ncclFloat32;
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::I64:
    return ncclInt64;
  case DType::I32:
    return ncclInt32;
  case DType::I1:
    return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return ncclSum;
  case ReduceOp::Max:
    return ncclMax;
  case ReduceOp::Min:
    return ncclMin;
  case ReduceOp::Avg:
    return ncclAvg;
  }
  return ncclSum;
}

void DeviceCommunicator::settle(ncclComm_t comm, ncclResult_t result,
                                const std::string &what) {
  Clock::time_point deadline = Clock::now() + timeout();
  while (result == ncclInProgress) {
    if (Clock::now() > deadline)
      throw CollectiveError(
          what + ": timed out after " +
          std::to_string(std::chrono::duration<double>(timeout()).count()) +
          " s (a peer did not take part; it may have died)");
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    if (ncclCommGetAsyncError(comm, &result) != ncclSuccess)
      break;
  }
  if (result != ncclSuccess) {
    std::string detail = comm ? ncclGetLastError(comm) : "";
    throw CollectiveError(what + ": " + ncclGetErrorString(result) +
                          (detail.empty() ? "" : " (" + detail + ")"));
  }
}

void DeviceCommunicator::initWorld(int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS)
      throw CollectiveError("MPI_Init_thread failed (needed to start NCCL)");
    mpiInitializedHere_ = true;
  }
  int size = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (size != mesh_.numRanks())
    throw CollectiveError("the plan's mesh has " +
                          std::to_string(mesh_.numRanks()) +
                          " ranks, but the launcher started " +
                          std::to_string(size) + " processes");
  rank_ = rank;
  ncclUniqueId id;
  if (rank == 0) {
    ncclResult_t made = ncclGetUniqueId(&id);
    if (made != ncclSuccess)
      throw CollectiveError(std::string("rank 0: ncclGetUniqueId: ") +
                            ncclGetErrorString(made));
  }
  if (MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    throw CollectiveError("rank " + std::to_string(rank) +
                          ": MPI_Bcast of the NCCL unique id failed");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t result =
      ncclCommInitRankConfig(&world_, size, id, rank, &config);
  settle(world_, result,
         "rank " + std::to_string(rank) + ": joining the NCCL world of " +
             std::to_string(size) + " ranks");
}

ncclComm_t DeviceCommunicator::group(const std::vector<std::string> &axes,
                                     const char *collective,
                                     cudaStream_t stream) {
  if (aborted_)
    throw CollectiveError(where(collective, axes) +
                          ": the communicators were aborted");
  auto bound = streamChannels_.find(stream);
  size_t channel = bound == streamChannels_.end() ? 0 : bound->second;
  auto it = groups_.find({channel, canonicalAxes(mesh_, axes)});
  if (it == groups_.end())
    throw CollectiveError(where(collective, axes) +
                          ": no communicator was prepared for this group");
  return it->second;
}
#endif

DeviceCommunicator::~DeviceCommunicator() {
#ifdef BRAID_RUNTIME_HAS_NCCL
  if (!aborted_) {
    // Non-blocking communicators: ncclCommFinalize (collective, returns
    // ncclInProgress) flushes outstanding work; once every communicator is
    // quiescent ncclCommDestroy frees it locally. One that does not settle
    // in time (a dead peer) is aborted instead of hanging the exit.
    std::vector<ncclComm_t> comms;
    for (auto &[key, comm] : groups_)
      if (comm)
        comms.push_back(comm);
    if (world_)
      comms.push_back(world_);
    std::vector<ncclResult_t> states;
    for (ncclComm_t comm : comms)
      states.push_back(ncclCommFinalize(comm));
    Clock::time_point deadline = Clock::now() + timeout();
    for (size_t i = 0; i < comms.size(); ++i) {
      while (states[i] == ncclInProgress && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        if (ncclCommGetAsyncError(comms[i], &states[i]) != ncclSuccess)
          break;
      }
      if (states[i] == ncclSuccess)
        ncclCommDestroy(comms[i]);
      else
        ncclCommAbort(comms[i]);
    }
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (mpiInitializedHere_ && !finalized)
    MPI_Finalize();
#endif
}

void DeviceCommunicator::prepare(
    const std::vector<std::vector<std::string>> &axisSets, int commSms,
    size_t channel) {
  for (const std::vector<std::string> &axes : axisSets) {
    std::vector<std::string> key = canonicalAxes(mesh_, axes);
    if (groupSize(key) == 1)
      continue;
#ifdef BRAID_RUNTIME_HAS_NCCL
    if (groups_.count({channel, key}))
      continue;
    std::vector<int64_t> members = mesh_.group(rank_, key);
    int color = static_cast<int>(*std::min_element(members.begin(),
                                                   members.end()));
    int index = static_cast<int>(
        std::find(members.begin(), members.end(), rank_) - members.begin());
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    if (commSms > 0)
      config.maxCTAs = commSms;
    ncclComm_t comm = nullptr;
    ncclResult_t result = ncclCommSplit(world_, color, index, &comm, &config);
    settle(comm ? comm : world_, result,
           "rank " + std::to_string(rank_) +
               ": splitting the NCCL communicator of mesh axes " +
               axesToString(key));
    groups_[{channel, key}] = comm;
#else
    (void)commSms;
    (void)channel;
    throw CollectiveError("this runtime was built without NCCL, so the CUDA "
                          "backend cannot run collectives over several ranks "
                          "(mesh axes " +
                          axesToString(key) + ")");
#endif
  }
}

void DeviceCommunicator::allReduce(const std::vector<std::string> &axes,
                                   const void *in, void *out, int64_t count,
                                   DType dtype, ReduceOp op,
                                   cudaStream_t stream) {
  if (groupSize(axes) == 1 || count == 0)
    return copy(in, out, count, dtype, stream);
#ifdef BRAID_RUNTIME_HAS_NCCL
  ncclComm_t comm = group(axes, "all_reduce", stream);
  settle(comm,
         ncclAllReduce(in, out, count, ncclType(dtype), ncclOp(op), comm,
                       stream),
         where("all_reduce", axes));
#else
  (void)op;
#endif
}

void DeviceCommunicator::allGather(const std::vector<std::string> &axes,
                                   const void *in, void *out, int64_t count,
                                   DType dtype, cudaStream_t stream) {
  if (groupSize(axes) == 1 || count == 0)
    return copy(in, out, count, dtype, stream);
#ifdef BRAID_RUNTIME_HAS_NCCL
  ncclComm_t comm = group(axes, "all_gather", stream);
  settle(comm, ncclAllGather(in, out, count, ncclType(dtype), comm, stream),
         where("all_gather", axes));
#endif
}

void DeviceCommunicator::reduceScatter(const std::vector<std::string> &axes,
                                       const void *in, void *out,
                                       int64_t count, DType dtype, ReduceOp op,
                                       cudaStream_t stream) {
  if (groupSize(axes) == 1 || count == 0)
    return copy(in, out, count, dtype, stream);
#ifdef BRAID_RUNTIME_HAS_NCCL
  ncclComm_t comm = group(axes, "reduce_scatter", stream);
  settle(comm,
         ncclReduceScatter(in, out, count, ncclType(dtype), ncclOp(op), comm,
                           stream),
         where("reduce_scatter", axes));
#else
  (void)op;
#endif
}

void DeviceCommunicator::allToAll(const std::vector<std::string> &axes,
                                  const void *in, void *out, int64_t count,
                                  DType dtype, cudaStream_t stream) {
  int64_t n = groupSize(axes);
  if (n == 1 || count == 0)
    return copy(in, out, count, dtype, stream);
#ifdef BRAID_RUNTIME_HAS_NCCL
  ncclComm_t comm = group(axes, "all_to_all", stream);
  size_t bytes = count * byteSize(dtype);
  ncclResult_t result = ncclGroupStart();
  for (int64_t peer = 0; peer < n && result == ncclSuccess; ++peer) {
    result = ncclSend(static_cast<const char *>(in) + peer * bytes, count,
                      ncclType(dtype), static_cast<int>(peer), comm, stream);
    if (result == ncclSuccess)
      result = ncclRecv(static_cast<char *>(out) + peer * bytes, count,
                        ncclType(dtype), static_cast<int>(peer), comm, stream);
  }
  ncclResult_t ended = ncclGroupEnd();
  settle(comm, result != ncclSuccess ? result : ended,
         where("all_to_all", axes));
#endif
}

void DeviceCommunicator::permute(const std::vector<std::string> &axes,
                                 const void *in, void *out, int64_t count,
                                 DType dtype, int64_t shift,
                                 cudaStream_t stream) {
  std::vector<int64_t> members = mesh_.group(rank_, axes);
  int64_t n = static_cast<int64_t>(members.size());
  int64_t normalized = ((shift % n) + n) % n;
  if (n == 1 || normalized == 0 || count == 0)
    return copy(in, out, count, dtype, stream);
#ifdef BRAID_RUNTIME_HAS_NCCL
  ncclComm_t comm = group(axes, "collective_permute", stream);
  int64_t me = std::find(members.begin(), members.end(), rank_) -
               members.begin();
  int to = static_cast<int>((me + normalized) % n);
  int from = static_cast<int>((me - normalized + n) % n);
  ncclResult_t result = ncclGroupStart();
  if (result == ncclSuccess)
    result = ncclSend(in, count, ncclType(dtype), to, comm, stream);
  if (result == ncclSuccess)
    result = ncclRecv(out, count, ncclType(dtype), from, comm, stream);
  ncclResult_t ended = ncclGroupEnd();
  settle(comm, result != ncclSuccess ? result : ended,
         where("collective_permute", axes));
#endif
}

void DeviceCommunicator::broadcast(const std::vector<std::string> &axes,
                                   const void *in, void *out, int64_t count,
                                   DType dtype, int64_t root,
                                   cudaStream_t stream) {
  if (groupSize(axes) == 1 || count == 0)
    return copy(in, out, count, dtype, stream);
#ifdef BRAID_RUNTIME_HAS_NCCL
  ncclComm_t comm = group(axes, "broadcast", stream);
  settle(comm,
         ncclBroadcast(in, out, count, ncclType(dtype), static_cast<int>(root),
                       comm, stream),
         where("broadcast", axes));
#else
  (void)root;
#endif
}

void DeviceCommunicator::checkAsyncErrors() {
#ifdef BRAID_RUNTIME_HAS_NCCL
  for (auto &[key, comm] : groups_) {
    const std::vector<std::string> &axes = key.second;
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
      continue;
    if (state != ncclSuccess && state != ncclInProgress)
      throw CollectiveError("rank " + std::to_string(rank_) +
                            ": the NCCL communicator of mesh axes " +
                            axesToString(axes) + " failed: " +
                            ncclGetErrorString(state) + " (" +
                            ncclGetLastError(comm) + ")");
  }
#endif
}

void DeviceCommunicator::abort() {
#ifdef BRAID_RUNTIME_HAS_NCCL
  if (aborted_)
    return;
  for (auto &[key, comm] : groups_)
    ncclCommAbort(comm);
  if (world_)
    ncclCommAbort(world_);
#endif
  aborted_ = true;
}

} // namespace

std::unique_ptr<CudaCommunicator>
makeCudaCommunicator(const MeshShape &mesh, int64_t launchedRanks, int *argc,
                     char ***argv) {
  if (launchedRanks <= 1 && mesh.numRanks() <= 1)
    return std::make_unique<DeviceCommunicator>(mesh, 0);
#ifdef BRAID_RUNTIME_HAS_NCCL
  auto comm = std::make_unique<DeviceCommunicator>(mesh, 0);
  comm->initWorld(argc, argv);
  return comm;
#else
  (void)argc;
  (void)argv;
  throw CollectiveError(
      "this runtime was built without NCCL and MPI, so the CUDA backend runs "
      "one-rank plans only (the plan's mesh has " +
      std::to_string(mesh.numRanks()) + " ranks)");
#endif
}

} // namespace braid::rt::cuda
