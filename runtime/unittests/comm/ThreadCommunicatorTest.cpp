//===- ThreadCommunicatorTest.cpp - the ranks of a mesh as threads --------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Every collective on meshes of 2, 3 and 4 ranks and on 2-axis meshes, over
// every way to name a group, against values computed from rank numbers;
// 16-bit float rounding against bit patterns worked out by hand; concurrent
// calls on two groups; disagreeing members, timeouts and aborts.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/ThreadCommunicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <thread>

using namespace braid::rt;
using testing::HasSubstr;

namespace {

using Axes = std::vector<std::string>;

/// Runs `body` on every rank of `world`, each in its own thread.
void onEveryRank(ThreadWorld &world,
                 const std::function<void(Communicator &)> &body) {
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < world.mesh().numRanks(); ++rank)
    threads.emplace_back([&, rank] {
      std::unique_ptr<Communicator> comm = world.communicator(rank);
      comm->setTimeout(std::chrono::seconds(60));
      body(*comm);
    });
  for (std::thread &thread : threads)
    thread.join();
}

/// The meshes under test, each with every way to name a group on it (the
/// empty group, each axis, and for two axes both orders).
struct MeshCase {
  MeshShape mesh;
  std::vector<Axes> axisSets;
};

std::vector<MeshCase> meshCases() {
  return {
      {MeshShape{{"x"}, {2}}, {{}, {"x"}}},
      {MeshShape{{"x"}, {3}}, {{}, {"x"}}},
      {MeshShape{{"x"}, {4}}, {{}, {"x"}}},
      {MeshShape{{"dp", "tp"}, {2, 2}},
       {{}, {"dp"}, {"tp"}, {"dp", "tp"}, {"tp", "dp"}}},
      {MeshShape{{"dp", "tp"}, {2, 3}},
       {{}, {"dp"}, {"tp"}, {"dp", "tp"}, {"tp", "dp"}}},
      {MeshShape{{"dp", "tp"}, {3, 1}}, {{"tp"}, {"dp", "tp"}}},
  };
}

/// This rank's position in its group over `axes`, and the group's ranks.
struct Membership {
  std::vector<int64_t> ranks;
  int64_t self = 0;
  int64_t size() const { return int64_t(ranks.size()); }
};

Membership membership(const Communicator &comm, const Axes &axes) {
  Membership m;
  m.ranks = comm.mesh().group(comm.rank(), axes);
  for (size_t i = 0; i < m.ranks.size(); ++i)
    if (m.ranks[i] == comm.rank())
      m.self = int64_t(i);
  return m;
}

/// Element k of rank r's input: distinct per (rank, element), exact in f32
/// and in every partial sum below.
template <typename T> T valueOf(int64_t rank, int64_t k) {
  return T(rank * 100 + k * 3 - 7);
}

const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min,
                         ReduceOp::Avg};

template <typename T>
T reduceOver(ReduceOp op, const std::vector<int64_t> &ranks, int64_t k) {
  T sum = 0, best = valueOf<T>(ranks[0], k), least = best;
  for (int64_t r : ranks) {
    sum += valueOf<T>(r, k);
    best = std::max(best, valueOf<T>(r, k));
    least = std::min(least, valueOf<T>(r, k));
  }
  switch (op) {
  case ReduceOp::Sum:
    return sum;
  case ReduceOp::Max:
    return best;
  case ReduceOp::Min:
    return least;
  case ReduceOp::Avg:
    return sum / T(ranks.size());
  }
  return 0;
}

template <typename T> DType dtypeOf();
template <> DType dtypeOf<float>() { return DType::F32; }
template <> DType dtypeOf<int64_t>() { return DType::I64; }
template <> DType dtypeOf<int32_t>() { return DType::I32; }

template <typename T> void checkReductions() {
  for (const MeshCase &c : meshCases()) {
    ThreadWorld world(c.mesh);
    onEveryRank(world, [&](Communicator &comm) {
      for (const Axes &axes : c.axisSets) {
        Membership m = membership(comm, axes);
        const int64_t count = 5;
        for (ReduceOp op : kOps) {
          // all_reduce: every member gets the reduction of every element.
          std::vector<T> in(count), out(count, T(-1));
          for (int64_t k = 0; k < count; ++k)
            in[k] = valueOf<T>(comm.rank(), k);
          comm.allReduce(axes, in.data(), out.data(), count, dtypeOf<T>(), op);
          for (int64_t k = 0; k < count; ++k)
            EXPECT_EQ(out[k], reduceOver<T>(op, m.ranks, k))
                << "all_reduce rank " << comm.rank() << " op " << int(op)
                << " element " << k;

          // reduce_scatter: member i gets block i reduced.
          std::vector<T> blocks(count * m.size()), mine(count, T(-1));
          for (int64_t k = 0; k < count * m.size(); ++k)
            blocks[k] = valueOf<T>(comm.rank(), k);
          comm.reduceScatter(axes, blocks.data(), mine.data(), count,
                             dtypeOf<T>(), op);
          for (int64_t k = 0; k < count; ++k)
            EXPECT_EQ(mine[k], reduceOver<T>(op, m.ranks, m.self * count + k))
                << "reduce_scatter rank " << comm.rank() << " op " << int(op)
                << " element " << k;
        }
      }
    });
  }
}

TEST(ThreadCommunicatorTest, ReductionsF32) { checkReductions<float>(); }
TEST(ThreadCommunicatorTest, ReductionsI64) { checkReductions<int64_t>(); }
TEST(ThreadCommunicatorTest, ReductionsI32) { checkReductions<int32_t>(); }

TEST(ThreadCommunicatorTest, DataMovement) {
  for (const MeshCase &c : meshCases()) {
    ThreadWorld world(c.mesh);
    onEveryRank(world, [&](Communicator &comm) {
      for (const Axes &axes : c.axisSets) {
        Membership m = membership(comm, axes);
        const int64_t count = 3, n = m.size();
        std::vector<float> in(count * n);
        for (int64_t k = 0; k < count * n; ++k)
          in[k] = valueOf<float>(comm.rank(), k);

        // all_gather: block i is member i's input.
        std::vector<float> gathered(count * n, -1);
        comm.allGather(axes, in.data(), gathered.data(), count, DType::F32);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t k = 0; k < count; ++k)
            EXPECT_EQ(gathered[i * count + k], valueOf<float>(m.ranks[i], k));

        // all_to_all: block i comes from member i's block `self`.
        std::vector<float> exchanged(count * n, -1);
        comm.allToAll(axes, in.data(), exchanged.data(), count, DType::F32);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t k = 0; k < count; ++k)
            EXPECT_EQ(exchanged[i * count + k],
                      valueOf<float>(m.ranks[i], m.self * count + k));

        // permute: receives from member (self - shift) mod n.
        for (int64_t shift : {int64_t(1), int64_t(-1), n + 2}) {
          std::vector<float> shifted(count, -1);
          comm.permute(axes, in.data(), shifted.data(), count, DType::F32,
                       shift);
          int64_t from = ((m.self - shift) % n + n) % n;
          for (int64_t k = 0; k < count; ++k)
            EXPECT_EQ(shifted[k], valueOf<float>(m.ranks[from], k))
                << "permute by " << shift << " on rank " << comm.rank();
        }

        // broadcast: every member gets the root's buffer.
        for (int64_t root = 0; root < n; ++root) {
          std::vector<float> copy(count, -1);
          comm.broadcast(axes, in.data(), copy.data(), count, DType::F32, root);
          for (int64_t k = 0; k < count; ++k)
            EXPECT_EQ(copy[k], valueOf<float>(m.ranks[root], k));
        }
      }
    });
  }
}

TEST(ThreadCommunicatorTest, InPlaceAllReduce) {
  ThreadWorld world(MeshShape{{"x"}, {3}});
  onEveryRank(world, [](Communicator &comm) {
    std::vector<float> data = {float(comm.rank()), 1.5f};
    comm.allReduce({"x"}, data.data(), data.data(), 2, DType::F32,
                   ReduceOp::Sum);
    EXPECT_EQ(data, (std::vector<float>{3, 4.5f}));
  });
}

// Sum and Max are logical or, Min and Avg logical and.
TEST(ThreadCommunicatorTest, I1IsLogical) {
  ThreadWorld world(MeshShape{{"x"}, {3}});
  onEveryRank(world, [](Communicator &comm) {
    int64_t me = comm.rank();
    // Nobody, the first member, everybody, the last member.
    uint8_t in[4] = {0, uint8_t(me == 0), 1, uint8_t(me == 2)};
    for (ReduceOp op : kOps) {
      uint8_t out[4] = {9, 9, 9, 9};
      comm.allReduce({"x"}, in, out, 4, DType::I1, op);
      bool isOr = op == ReduceOp::Sum || op == ReduceOp::Max;
      std::vector<uint8_t> expected = isOr ? std::vector<uint8_t>{0, 1, 1, 1}
                                           : std::vector<uint8_t>{0, 0, 1, 0};
      EXPECT_EQ(std::vector<uint8_t>(out, out + 4), expected) << int(op);
    }
  });
}

TEST(ThreadCommunicatorTest, IntegerAvgTruncatesTowardZero) {
  ThreadWorld world(MeshShape{{"x"}, {2}});
  onEveryRank(world, [](Communicator &comm) {
    int32_t in[2] = {comm.rank() == 0 ? -4 : 1, 3}, out[2] = {};
    comm.allReduce({"x"}, in, out, 2, DType::I32, ReduceOp::Avg);
    EXPECT_EQ(out[0], -1); // -3 / 2
    EXPECT_EQ(out[1], 3);
  });
}

// Three members contribute 2048 (or 256 in bf16), 1 and 1. Rounding each
// partial sum gives 2048 + 1 -> 2048 (a tie, to even), then again 2048; the
// exact sum 2050 (258) would be representable, so this shows the pairwise
// rounding that an f16 device does.
TEST(ThreadCommunicatorTest, HalfPrecisionRoundsEachPartialSum) {
  struct Case {
    DType dtype;
    uint16_t big, one, pairwise, mean;
  };
  // f16: 2048 = 0x6800, 1 = 0x3c00, avg 2048/3 = 682.67 -> 682.5 (0x6155).
  // bf16: 256 = 0x4380, 1 = 0x3f80, avg 256/3 = 85.33 -> 85.5 (0x42ab).
  const Case cases[] = {{DType::F16, 0x6800, 0x3c00, 0x6800, 0x6155},
                        {DType::BF16, 0x4380, 0x3f80, 0x4380, 0x42ab}};
  ThreadWorld world(MeshShape{{"x"}, {3}});
  onEveryRank(world, [&](Communicator &comm) {
    for (const Case &c : cases) {
      uint16_t in = comm.rank() == 0 ? c.big : c.one, sum = 0, mean = 0;
      comm.allReduce({"x"}, &in, &sum, 1, c.dtype, ReduceOp::Sum);
      EXPECT_EQ(sum, c.pairwise) << toString(c.dtype);
      comm.allReduce({"x"}, &in, &mean, 1, c.dtype, ReduceOp::Avg);
      EXPECT_EQ(mean, c.mean) << toString(c.dtype);
    }
  });
}

// Two streams per rank: one issues all-reduces on its tp group, the other on
// its dp group, at the same time; calls are matched per group.
TEST(ThreadCommunicatorTest, ConcurrentCallsOnTwoGroups) {
  ThreadWorld world(MeshShape{{"dp", "tp"}, {2, 2}});
  onEveryRank(world, [](Communicator &comm) {
    auto stream = [&](const Axes &axes) {
      Membership m = membership(comm, axes);
      for (int64_t call = 0; call < 200; ++call) {
        int64_t in = comm.rank() * 1000 + call, out = -1;
        comm.allReduce(axes, &in, &out, 1, DType::I64, ReduceOp::Sum);
        int64_t expected = 0;
        for (int64_t r : m.ranks)
          expected += r * 1000 + call;
        EXPECT_EQ(out, expected) << "call " << call;
      }
    };
    std::thread other([&] { stream({"dp"}); });
    stream({"tp"});
    other.join();
  });
}

// Two streams of one rank on the same group, each through its own
// communicator (duplicate): gathers on one, reductions on the other, at the
// same time. On one communicator their calls would pair up differently on
// each rank and every member would throw (see DisagreeingMembersThrow).
TEST(ThreadCommunicatorTest, DuplicatesRunTheSameGroupConcurrently) {
  for (int64_t ranks : {2, 4}) {
    ThreadWorld world(MeshShape{{"dp"}, {ranks}});
    onEveryRank(world, [&](Communicator &comm) {
      std::unique_ptr<Communicator> second = comm.duplicate();
      EXPECT_EQ(second->rank(), comm.rank());
      EXPECT_EQ(second->timeout(), comm.timeout());
      std::thread gathers([&] {
        for (int64_t call = 0; call < 200; ++call) {
          int64_t in = comm.rank() * 1000 + call;
          std::vector<int64_t> out(ranks, -1);
          comm.allGather({"dp"}, &in, out.data(), 1, DType::I64);
          for (int64_t r = 0; r < ranks; ++r)
            ASSERT_EQ(out[r], r * 1000 + call) << "call " << call;
        }
      });
      for (int64_t call = 0; call < 200; ++call) {
        std::vector<float> in = {float(comm.rank()), float(call)}, out(2);
        second->allReduce({"dp"}, in.data(), out.data(), 2, DType::F32,
                          ReduceOp::Sum);
        ASSERT_EQ(out[0], float(ranks * (ranks - 1) / 2)) << "call " << call;
        ASSERT_EQ(out[1], float(ranks * call)) << "call " << call;
      }
      gathers.join();
    });
  }
}

// Members that issue different collectives at the same position all throw,
// naming both calls, instead of mixing up data.
TEST(ThreadCommunicatorTest, DisagreeingMembersThrow) {
  ThreadWorld world(MeshShape{{"x"}, {2}});
  onEveryRank(world, [](Communicator &comm) {
    float in[4] = {1, 2, 3, 4}, out[4] = {};
    try {
      if (comm.rank() == 0)
        comm.allReduce({"x"}, in, out, 2, DType::F32, ReduceOp::Sum);
      else
        comm.allGather({"x"}, in, out, 2, DType::F32);
      ADD_FAILURE() << "rank " << comm.rank() << " did not throw";
    } catch (const CollectiveError &error) {
      EXPECT_THAT(error.what(), HasSubstr("members disagree about call 0"));
      EXPECT_THAT(error.what(), HasSubstr("all_reduce of 2 f32 elements, sum"));
      EXPECT_THAT(error.what(), HasSubstr("all_gather of 2 f32 elements"));
    }
  });
}

TEST(ThreadCommunicatorTest, ArgumentErrorsLeaveTheWorldUsable) {
  ThreadWorld world(MeshShape{{"dp", "tp"}, {1, 2}});
  onEveryRank(world, [](Communicator &comm) {
    float in[2] = {1, 2}, out[2] = {};
    std::string me = "rank " + std::to_string(comm.rank()) + ": ";
    auto expectError = [](const std::function<void()> &call,
                          const std::string &text) {
      try {
        call();
        ADD_FAILURE() << "no error, expected: " << text;
      } catch (const CollectiveError &error) {
        EXPECT_THAT(error.what(), HasSubstr(text));
      }
    };
    expectError(
        [&] { comm.allReduce({"pp"}, in, out, 2, DType::F32, ReduceOp::Sum); },
        me + "all_reduce over axes [pp]: unknown mesh axis 'pp'; the mesh is "
             "[dp=1, tp=2]");
    expectError(
        [&] {
          comm.allGather({"tp", "tp"}, in, out, 1, DType::F32);
        },
        me + "all_gather over axes [tp, tp]: axis 'tp' is listed twice");
    expectError([&] { comm.permute({"tp"}, in, out, -1, DType::F32, 1); },
                me + "permute over axes [tp] (group of 2): count -1 is "
                     "outside [0, 2^31 - 1]");
    expectError([&] { comm.broadcast({"tp"}, in, out, 2, DType::F32, 2); },
                "root 2 is not a member index in [0, 2)");
    int64_t one = 1, total = 0;
    comm.allReduce({"dp", "tp"}, &one, &total, 1, DType::I64, ReduceOp::Sum);
    EXPECT_EQ(total, 2);
  });
}

// Rank 0 skips an all_reduce: rank 1 times out with an error naming rank,
// collective, axes and group, and the world refuses later calls.
TEST(ThreadCommunicatorTest, SkippedCollectiveTimesOut) {
  ThreadWorld world(MeshShape{{"x"}, {2}});
  std::unique_ptr<Communicator> comm = world.communicator(1);
  comm->setTimeout(std::chrono::milliseconds(50));
  float in[2] = {1, 2}, out[2] = {};
  try {
    comm->allReduce({"x"}, in, out, 2, DType::F32, ReduceOp::Sum);
    ADD_FAILURE() << "all_reduce finished without rank 0";
  } catch (const CollectiveError &error) {
    EXPECT_EQ(std::string(error.what()),
              "rank 1: all_reduce over axes [x] (group of 2) timed out after "
              "0.05 s; a peer may have failed or issued a different "
              "collective");
  }
  std::unique_ptr<Communicator> peer = world.communicator(0);
  try {
    peer->allGather({"x"}, in, out, 1, DType::F32);
    ADD_FAILURE() << "a call after the timeout went through";
  } catch (const CollectiveError &error) {
    EXPECT_THAT(error.what(),
                HasSubstr("rank 0: all_gather over axes [x] (group of 2) "
                          "refused: the world is unusable after an earlier "
                          "failure (rank 1: all_reduce"));
  }
}

// abort() frees a member waiting for a peer that will never come.
TEST(ThreadCommunicatorTest, AbortWakesWaitingMembers) {
  ThreadWorld world(MeshShape{{"x"}, {2}});
  std::string caught;
  std::thread waiter([&] {
    std::unique_ptr<Communicator> comm = world.communicator(1);
    float in = 1, out = 0;
    try {
      comm->allReduce({"x"}, &in, &out, 1, DType::F32, ReduceOp::Sum);
    } catch (const CollectiveError &error) {
      caught = error.what();
    }
  });
  world.abort("rank 0 failed: kernel error");
  waiter.join();
  EXPECT_THAT(caught, HasSubstr("rank 1: all_reduce over axes [x] (group of "
                                "2)"));
  EXPECT_THAT(caught, HasSubstr("rank 0 failed: kernel error"));
}

TEST(ThreadCommunicatorTest, RejectsBadMeshesAndRanks) {
  EXPECT_THROW(ThreadWorld(MeshShape{{"x", "x"}, {2, 2}}),
               std::invalid_argument);
  EXPECT_THROW(ThreadWorld(MeshShape{{"x"}, {0}}), std::invalid_argument);
  ThreadWorld world(MeshShape{{"x"}, {2}});
  EXPECT_THROW(world.communicator(2), std::invalid_argument);
}

} // namespace
