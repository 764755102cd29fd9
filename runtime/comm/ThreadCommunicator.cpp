//===- ThreadCommunicator.cpp - the ranks of a mesh as threads ------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// A collective is a meeting of its group's members, found by the group's
// ranks and by how many collectives this member has issued on that group
// before. Each member registers its input and waits until all have arrived;
// then every member computes its own result from all inputs into a staging
// buffer, outside the lock, and waits until all have finished reading before
// it writes its output (so any buffers may alias) and returns (so no peer
// reads its input afterwards). Once all members have arrived nothing blocks,
// so the second wait needs no timeout; a member that gives up in the first
// wait withdraws its input under the lock, so nobody reads it later.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/ThreadCommunicator.h"

#include "runtime/kernels/ElementIO.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>
#include <mutex>
#include <optional>

namespace braid::rt {

namespace {

/// What one member asks of a meeting; all members of a call must agree.
struct CallShape {
  const char *collective = "";
  int64_t count = 0;
  DType dtype = DType::F32;
  /// The ReduceOp, or -1 for collectives that do not reduce.
  int op = -1;
  /// The broadcast root or the permute step (shift modulo the group size).
  int64_t parameter = 0;

  bool operator==(const CallShape &other) const {
    return std::strcmp(collective, other.collective) == 0 &&
           count == other.count && dtype == other.dtype && op == other.op &&
           parameter == other.parameter;
  }
};

std::string describeShape(const CallShape &shape) {
  std::string text = std::string(shape.collective) + " of " +
                     std::to_string(shape.count) + " " +
                     std::string(toString(shape.dtype)) + " elements";
  static const char *const opNames[] = {"sum", "max", "min", "avg"};
  if (shape.op >= 0 && shape.op < 4)
    text += std::string(", ") + opNames[shape.op];
  if (std::strcmp(shape.collective, "broadcast") == 0)
    text += ", root " + std::to_string(shape.parameter);
  if (std::strcmp(shape.collective, "permute") == 0)
    text += ", step " + std::to_string(shape.parameter);
  return text;
}

/// One call of a collective on one group.
struct Meeting {
  Meeting(size_t members, uint64_t call)
      : inputs(members, nullptr), shapes(members), call(call) {}

  std::vector<const void *> inputs;
  std::vector<std::optional<CallShape>> shapes;
  /// The call number on the group (the meeting's key with the group).
  uint64_t call;
  size_t arrived = 0;
  size_t finished = 0;
  /// Set when two members disagree about the call; every member throws it.
  std::string disagreement;
};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

float combineFloats(ReduceOp op, float a, float b) {
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    return a + b;
  case ReduceOp::Max:
  case ReduceOp::Min:
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<float>::quiet_NaN();
    return op == ReduceOp::Max ? std::max(a, b) : std::min(a, b);
  }
  return a;
}

template <typename T> T combineInts(ReduceOp op, T a, T b) {
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg: {
    // Wraps like MPI_SUM on two's complement machines, without signed
    // overflow.
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  }
  case ReduceOp::Max:
    return std::max(a, b);
  case ReduceOp::Min:
    return std::min(a, b);
  }
  return a;
}

template <typename T>
void reduceInts(ReduceOp op, const std::vector<const void *> &inputs,
                int64_t offset, int64_t count, void *out) {
  auto *result = static_cast<T *>(out);
  T groupSize = static_cast<T>(inputs.size());
  for (int64_t k = 0; k < count; ++k) {
    T value = static_cast<const T *>(inputs[0])[offset + k];
    for (size_t i = 1; i < inputs.size(); ++i)
      value =
          combineInts(op, value, static_cast<const T *>(inputs[i])[offset + k]);
    result[k] = op == ReduceOp::Avg ? static_cast<T>(value / groupSize) : value;
  }
}

/// out[k] = the reduction over the members of element `offset + k`.
void reduceElements(DType dtype, ReduceOp op,
                    const std::vector<const void *> &inputs, int64_t offset,
                    int64_t count, void *out) {
  float groupSize = static_cast<float>(inputs.size());
  switch (dtype) {
  case DType::F32: {
    auto *result = static_cast<float *>(out);
    for (int64_t k = 0; k < count; ++k) {
      float value = static_cast<const float *>(inputs[0])[offset + k];
      for (size_t i = 1; i < inputs.size(); ++i)
        value = combineFloats(
            op, value, static_cast<const float *>(inputs[i])[offset + k]);
      result[k] = op == ReduceOp::Avg ? value / groupSize : value;
    }
    return;
  }
  case DType::F16:
  case DType::BF16: {
    bool isHalf = dtype == DType::F16;
    auto decode = [&](uint16_t bits) {
      return isHalf ? halfToFloat(bits) : bfloat16ToFloat(bits);
    };
    auto encode = [&](float value) {
      return isHalf ? floatToHalf(value) : floatToBfloat16(value);
    };
    auto *result = static_cast<uint16_t *>(out);
    for (int64_t k = 0; k < count; ++k) {
      uint16_t bits = static_cast<const uint16_t *>(inputs[0])[offset + k];
      for (size_t i = 1; i < inputs.size(); ++i)
        bits = encode(combineFloats(
            op, decode(bits),
            decode(static_cast<const uint16_t *>(inputs[i])[offset + k])));
      result[k] = op == ReduceOp::Avg ? encode(decode(bits) / groupSize) : bits;
    }
    return;
  }
  case DType::I64:
    reduceInts<int64_t>(op, inputs, offset, count, out);
    return;
  case DType::I32:
    reduceInts<int32_t>(op, inputs, offset, count, out);
    return;
  case DType::I1: {
    bool isOr = op == ReduceOp::Sum || op == ReduceOp::Max;
    auto *result = static_cast<uint8_t *>(out);
    for (int64_t k = 0; k < count; ++k) {
      bool value = static_cast<const uint8_t *>(inputs[0])[offset + k] != 0;
      for (size_t i = 1; i < inputs.size(); ++i) {
        bool other = static_cast<const uint8_t *>(inputs[i])[offset + k] != 0;
        value = isOr ? (value || other) : (value && other);
      }
      result[k] = value ? 1 : 0;
    }
    return;
  }
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// The world
//===----------------------------------------------------------------------===//

struct ThreadWorld::State {
  explicit State(MeshShape mesh) : mesh(std::move(mesh)) {}

  MeshShape mesh;
  std::mutex mutex;
  std::condition_variable changed;
  /// Keyed by the channel (0, or a duplicate's), the group's ranks and the
  /// call number on that group in that channel.
  std::map<std::tuple<uint64_t, std::vector<int64_t>, uint64_t>,
           std::shared_ptr<Meeting>>
      meetings;
  /// Per rank, channel and group: how many collectives the rank issued on it.
  std::map<std::tuple<int64_t, uint64_t, std::vector<int64_t>>, uint64_t>
      calls;
  /// Per rank: how many duplicates it made (the k-th is channel k on every
  /// rank, since every rank makes them in the same order).
  std::map<int64_t, uint64_t> duplicates;
  bool aborted = false;
  std::string abortReason;

  void abortLocked(const std::string &reason) {
    if (!aborted) {
      aborted = true;
      abortReason = reason;
    }
    changed.notify_all();
  }
};

namespace {

/// One rank's view of a ThreadWorld.
class ThreadCommunicator final : public Communicator {
public:
  ThreadCommunicator(ThreadWorld::State &world, int64_t rank,
                     uint64_t channel = 0)
      : world_(world), rank_(rank), channel_(channel) {}

  int64_t rank() const override { return rank_; }
  const MeshShape &mesh() const override { return world_.mesh; }

  std::unique_ptr<Communicator> duplicate() override {
    uint64_t channel;
    {
      std::lock_guard<std::mutex> lock(world_.mutex);
      channel = ++world_.duplicates[rank_];
    }
    auto copy = std::make_unique<ThreadCommunicator>(world_, rank_, channel);
    copy->setTimeout(timeout());
    return copy;
  }

  void allReduce(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype, ReduceOp op) override {
    CallShape shape{"all_reduce", count, dtype,
                    reduceOpIndex("all_reduce", op, axes), 0};
    run(axes, shape, in, out, count,
        [&](const std::vector<const void *> &inputs, size_t, void *result) {
          reduceElements(dtype, op, inputs, 0, count, result);
        });
  }

  void allGather(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype) override {
    CallShape shape{"all_gather", count, dtype, -1, 0};
    size_t bytes = blockBytes(count, dtype);
    run(axes, shape, in, out, count * groupSize(axes),
        [&](const std::vector<const void *> &inputs, size_t, void *result) {
          for (size_t i = 0; i < inputs.size(); ++i)
            std::memcpy(static_cast<char *>(result) + i * bytes, inputs[i],
                        bytes);
        });
  }

  void reduceScatter(const std::vector<std::string> &axes, const void *in,
                     void *out, int64_t count, DType dtype,
                     ReduceOp op) override {
    CallShape shape{"reduce_scatter", count, dtype,
                    reduceOpIndex("reduce_scatter", op, axes), 0};
    run(axes, shape, in, out, count,
        [&](const std::vector<const void *> &inputs, size_t self,
            void *result) {
          reduceElements(dtype, op, inputs, int64_t(self) * count, count,
                         result);
        });
  }

  void allToAll(const std::vector<std::string> &axes, const void *in, void *out,
                int64_t count, DType dtype) override {
    CallShape shape{"all_to_all", count, dtype, -1, 0};
    size_t bytes = blockBytes(count, dtype);
    run(axes, shape, in, out, count * groupSize(axes),
        [&](const std::vector<const void *> &inputs, size_t self,
            void *result) {
          for (size_t i = 0; i < inputs.size(); ++i)
            std::memcpy(static_cast<char *>(result) + i * bytes,
                        static_cast<const char *>(inputs[i]) + self * bytes,
                        bytes);
        });
  }

  void permute(const std::vector<std::string> &axes, const void *in, void *out,
               int64_t count, DType dtype, int64_t shift) override {
    int64_t n = groupSize(axes);
    int64_t step = ((shift % n) + n) % n;
    CallShape shape{"permute", count, dtype, -1, step};
    size_t bytes = blockBytes(count, dtype);
    run(axes, shape, in, out, count,
        [&](const std::vector<const void *> &inputs, size_t self,
            void *result) {
          std::memcpy(result, inputs[(int64_t(self) - step + n) % n], bytes);
        });
  }

  void broadcast(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype, int64_t root) override {
    // Axis errors first, as run() reports them.
    int64_t n = int64_t(members("broadcast", axes).size());
    if (root < 0 || root >= n)
      throw CollectiveError(
          describe("broadcast", axes, n) + ": root " + std::to_string(root) +
          " is not a member index in [0, " + std::to_string(n) + ")");
    CallShape shape{"broadcast", count, dtype, -1, root};
    size_t bytes = blockBytes(count, dtype);
    run(axes, shape, in, out, count,
        [&](const std::vector<const void *> &inputs, size_t, void *result) {
          std::memcpy(result, inputs[root], bytes);
        });
  }

private:
  std::string describe(const char *collective,
                       const std::vector<std::string> &axes,
                       int64_t members = 0) const {
    std::string text = "rank " + std::to_string(rank_) + ": " + collective +
                       " over axes " + formatAxes(axes);
    if (members > 0)
      text += " (group of " + std::to_string(members) + ")";
    return text;
  }

  /// The members of this rank's group over `axes`; throws CollectiveError
  /// for an unknown or repeated axis. The collective's name comes from the
  /// call being checked, so argument errors name it.
  std::vector<int64_t> members(const char *collective,
                               const std::vector<std::string> &axes) const {
    const MeshShape &mesh = world_.mesh;
    for (size_t k = 0; k < axes.size(); ++k) {
      if (std::find(mesh.axisNames.begin(), mesh.axisNames.end(), axes[k]) ==
          mesh.axisNames.end())
        throw CollectiveError(describe(collective, axes) +
                              ": unknown mesh axis '" + axes[k] +
                              "'; the mesh is " + formatMesh(mesh));
      if (std::find(axes.begin(), axes.begin() + k, axes[k]) !=
          axes.begin() + k)
        throw CollectiveError(describe(collective, axes) + ": axis '" +
                              axes[k] + "' is listed twice");
    }
    return mesh.group(rank_, axes);
  }

  /// The group size, for computing sizes before run() checks the axes; an
  /// invalid axis list gives 1 here and throws in run().
  int64_t groupSize(const std::vector<std::string> &axes) const {
    try {
      return int64_t(world_.mesh.group(rank_, axes).size());
    } catch (const std::invalid_argument &) {
      return 1;
    }
  }

  static size_t blockBytes(int64_t count, DType dtype) {
    return count > 0 ? size_t(count) * byteSize(dtype) : 0;
  }

  int reduceOpIndex(const char *collective, ReduceOp op,
                    const std::vector<std::string> &axes) const {
    switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Max:
    case ReduceOp::Min:
    case ReduceOp::Avg:
      return static_cast<int>(op);
    }
    throw CollectiveError(describe(collective, axes) + ": unknown reduce op " +
                          std::to_string(static_cast<int>(op)));
  }

  /// Meets the group, lets `compute` fill `resultCount` elements from every
  /// member's input, and copies them to `out`.
  template <typename Compute>
  void run(const std::vector<std::string> &axes, const CallShape &shape,
           const void *in, void *out, int64_t resultCount, Compute compute) {
    std::vector<int64_t> group = members(shape.collective, axes);
    int64_t n = int64_t(group.size());
    std::string where = describe(shape.collective, axes, n);
    if (shape.count < 0 || shape.count > INT_MAX)
      throw CollectiveError(where + ": count " + std::to_string(shape.count) +
                            " is outside [0, 2^31 - 1]");
    try {
      (void)byteSize(shape.dtype);
    } catch (const std::invalid_argument &error) {
      throw CollectiveError(where + ": " + error.what());
    }
    size_t self = std::find(group.begin(), group.end(), rank_) - group.begin();

    std::shared_ptr<Meeting> meeting = arrive(group, self, shape, in, where);
    std::vector<uint8_t> result(blockBytes(resultCount, shape.dtype));
    compute(meeting->inputs, self, result.data());
    leave(group, *meeting);
    if (!result.empty())
      std::memcpy(out, result.data(), result.size());
  }

  std::shared_ptr<Meeting> arrive(const std::vector<int64_t> &group,
                                  size_t self, const CallShape &shape,
                                  const void *in, const std::string &where) {
    std::unique_lock<std::mutex> lock(world_.mutex);
    if (world_.aborted)
      throw CollectiveError(where +
                            " refused: the world is unusable after an "
                            "earlier failure (" +
                            world_.abortReason + ")");
    uint64_t call = world_.calls[{rank_, channel_, group}]++;
    std::shared_ptr<Meeting> &slot = world_.meetings[{channel_, group, call}];
    if (!slot)
      slot = std::make_shared<Meeting>(group.size(), call);
    std::shared_ptr<Meeting> meeting = slot;
    meeting->inputs[self] = in;
    meeting->shapes[self] = shape;
    for (size_t i = 0; i < group.size() && meeting->disagreement.empty(); ++i)
      if (i != self && meeting->shapes[i] && !(*meeting->shapes[i] == shape))
        meeting->disagreement =
            "call " + std::to_string(call) + " on the group: rank " +
            std::to_string(group[i]) + " issued " +
            describeShape(*meeting->shapes[i]) + ", rank " +
            std::to_string(rank_) + " " + describeShape(shape);
    ++meeting->arrived;
    world_.changed.notify_all();

    auto deadline = std::chrono::steady_clock::now() + timeout();
    world_.changed.wait_until(lock, deadline, [&] {
      return meeting->arrived == group.size() || world_.aborted;
    });
    if (meeting->arrived != group.size()) {
      // Withdraw, so that nobody reads `in` after this call returns.
      meeting->inputs[self] = nullptr;
      meeting->shapes[self].reset();
      --meeting->arrived;
      if (world_.aborted)
        throw CollectiveError(where + " aborted: " + world_.abortReason);
      std::string message =
          where + " timed out after " + formatSeconds(timeout()) +
          "; a peer may have failed or issued a different collective";
      world_.abortLocked(message);
      throw CollectiveError(message);
    }
    if (!meeting->disagreement.empty()) {
      std::string message =
          where + ": members disagree about " + meeting->disagreement;
      lock.unlock();
      leave(group, *meeting);
      throw CollectiveError(message);
    }
    return meeting;
  }

  /// Waits until every member is done reading the inputs; the last one
  /// forgets the meeting.
  void leave(const std::vector<int64_t> &group, Meeting &meeting) {
    std::unique_lock<std::mutex> lock(world_.mutex);
    if (++meeting.finished == group.size()) {
      world_.meetings.erase({channel_, group, meeting.call});
      world_.changed.notify_all();
      return;
    }
    world_.changed.wait(lock, [&] { return meeting.finished == group.size(); });
  }

  ThreadWorld::State &world_;
  int64_t rank_;
  uint64_t channel_;
};

} // namespace

ThreadWorld::ThreadWorld(MeshShape mesh) {
  for (size_t k = 0; k < mesh.axisNames.size(); ++k)
    for (size_t j = 0; j < k; ++j)
      if (mesh.axisNames[j] == mesh.axisNames[k])
        throw std::invalid_argument("thread world: mesh axis '" +
                                    mesh.axisNames[k] + "' appears twice");
  (void)mesh.numRanks(); // Throws for sizes below 1.
  state_ = std::make_unique<State>(std::move(mesh));
}

ThreadWorld::~ThreadWorld() = default;

const MeshShape &ThreadWorld::mesh() const { return state_->mesh; }

std::unique_ptr<Communicator> ThreadWorld::communicator(int64_t rank) {
  int64_t ranks = state_->mesh.numRanks();
  if (rank < 0 || rank >= ranks)
    throw std::invalid_argument("thread world: rank " + std::to_string(rank) +
                                " is outside a mesh of " +
                                std::to_string(ranks) + " ranks");
  return std::make_unique<ThreadCommunicator>(*state_, rank);
}

void ThreadWorld::abort(const std::string &reason) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->abortLocked(reason);
}

} // namespace braid::rt
