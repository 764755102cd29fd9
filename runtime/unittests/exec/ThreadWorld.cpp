//===- ThreadWorld.cpp - several ranks in one process, for tests ----------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "ThreadWorld.h"

#include "runtime/kernels/ElementIO.h"

#include <algorithm>
#include <cstring>

namespace braid::rt::test {

namespace {

double combine(ReduceOp op, double a, double b) {
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    return a + b;
  case ReduceOp::Max:
    return std::max(a, b);
  case ReduceOp::Min:
    return std::min(a, b);
  }
  return a;
}

bool isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

class ThreadCommunicator final : public Communicator {
public:
  ThreadCommunicator(ThreadWorld &world, int64_t rank)
      : world_(world), rank_(rank) {}

  int64_t rank() const override { return rank_; }
  const MeshShape &mesh() const override { return world_.mesh(); }

  void allReduce(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype, ReduceOp op) override {
    std::vector<uint8_t> result(count * byteSize(dtype));
    exchange(axes, in, [&](const std::vector<const void *> &inputs, size_t) {
      reduceBlocks(inputs, 0, count, dtype, op, result.data());
    });
    std::memcpy(out, result.data(), result.size());
  }

  void allGather(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype) override {
    size_t bytes = count * byteSize(dtype);
    exchange(axes, in, [&](const std::vector<const void *> &inputs, size_t) {
      for (size_t i = 0; i < inputs.size(); ++i)
        std::memcpy(static_cast<char *>(out) + i * bytes, inputs[i], bytes);
    });
  }

  void reduceScatter(const std::vector<std::string> &axes, const void *in,
                     void *out, int64_t count, DType dtype,
                     ReduceOp op) override {
    exchange(axes, in,
             [&](const std::vector<const void *> &inputs, size_t self) {
               reduceBlocks(inputs, self * count, count, dtype, op, out);
             });
  }

  void allToAll(const std::vector<std::string> &axes, const void *in, void *out,
                int64_t count, DType dtype) override {
    size_t bytes = count * byteSize(dtype);
    exchange(
        axes, in, [&](const std::vector<const void *> &inputs, size_t self) {
          for (size_t i = 0; i < inputs.size(); ++i)
            std::memcpy(static_cast<char *>(out) + i * bytes,
                        static_cast<const char *>(inputs[i]) + self * bytes,
                        bytes);
        });
  }

  void permute(const std::vector<std::string> &axes, const void *in, void *out,
               int64_t count, DType dtype, int64_t shift) override {
    size_t bytes = count * byteSize(dtype);
    exchange(
        axes, in, [&](const std::vector<const void *> &inputs, size_t self) {
          int64_t n = static_cast<int64_t>(inputs.size());
          int64_t from = ((static_cast<int64_t>(self) - shift) % n + n) % n;
          std::memcpy(out, inputs[from], bytes);
        });
  }

  void broadcast(const std::vector<std::string> &axes, const void *in,
                 void *out, int64_t count, DType dtype, int64_t root) override {
    size_t bytes = count * byteSize(dtype);
    exchange(axes, in, [&](const std::vector<const void *> &inputs, size_t) {
      std::memcpy(out, inputs.at(root), bytes);
    });
  }

private:
  template <typename Fn>
  void exchange(const std::vector<std::string> &axes, const void *in, Fn fn) {
    std::vector<int64_t> members = world_.mesh().group(rank_, axes);
    size_t self =
        std::find(members.begin(), members.end(), rank_) - members.begin();
    std::vector<const void *> inputs =
        world_.arrive(members, rank_, in, timeout());
    fn(inputs, self);
    world_.leave(members, rank_, timeout());
  }

  /// out[k] = reduction over members of block element `offset + k`.
  static void reduceBlocks(const std::vector<const void *> &inputs,
                           int64_t offset, int64_t count, DType dtype,
                           ReduceOp op, void *out) {
    for (int64_t k = 0; k < count; ++k) {
      if (isFloat(dtype)) {
        double value = loadFloat(dtype, inputs[0], offset + k);
        for (size_t i = 1; i < inputs.size(); ++i)
          value = combine(op, value, loadFloat(dtype, inputs[i], offset + k));
        if (op == ReduceOp::Avg)
          value /= static_cast<double>(inputs.size());
        storeFloat(dtype, out, k, value);
      } else {
        int64_t value = loadInt(dtype, inputs[0], offset + k);
        for (size_t i = 1; i < inputs.size(); ++i)
          value = static_cast<int64_t>(combine(
              op, static_cast<double>(value),
              static_cast<double>(loadInt(dtype, inputs[i], offset + k))));
        if (op == ReduceOp::Avg)
          value /= static_cast<int64_t>(inputs.size());
        storeInt(dtype, out, k, value);
      }
    }
  }

  ThreadWorld &world_;
  int64_t rank_;
};

} // namespace

std::unique_ptr<Communicator> ThreadWorld::communicator(int64_t rank) {
  return std::make_unique<ThreadCommunicator>(*this, rank);
}

ThreadWorld::Meeting &ThreadWorld::meeting(const std::vector<int64_t> &members,
                                           int64_t rank, bool leaving) {
  auto &counter =
      leaving ? departures_[{rank, members}] : arrivals_[{rank, members}];
  Meeting &meeting = meetings_[{members, counter}];
  if (meeting.inputs.empty())
    meeting.inputs.resize(members.size());
  ++counter;
  return meeting;
}

std::vector<const void *>
ThreadWorld::arrive(const std::vector<int64_t> &members, int64_t rank,
                    const void *in, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  Meeting &m = meeting(members, rank, /*leaving=*/false);
  size_t self =
      std::find(members.begin(), members.end(), rank) - members.begin();
  m.inputs[self] = in;
  ++m.arrived;
  changed_.notify_all();
  if (!changed_.wait_for(lock, timeout,
                         [&] { return m.arrived == members.size(); }))
    throw CollectiveError("rank " + std::to_string(rank) +
                          ": timed out waiting for the group");
  return m.inputs;
}

void ThreadWorld::leave(const std::vector<int64_t> &members, int64_t rank,
                        std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  Meeting &m = meeting(members, rank, /*leaving=*/true);
  ++m.left;
  changed_.notify_all();
  if (!changed_.wait_for(lock, timeout,
                         [&] { return m.left == members.size(); }))
    throw CollectiveError("rank " + std::to_string(rank) +
                          ": timed out leaving the group");
}

} // namespace braid::rt::test
