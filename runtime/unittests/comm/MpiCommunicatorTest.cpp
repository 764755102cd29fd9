//===- MpiCommunicatorTest.cpp - MpiCommunicator under mpirun -------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Runs under `mpirun -n N` (N = 1, 2, 4; ctest registers each). The mesh is
// dp=2 x tp=2 at four ranks and dp=1 x tp=N otherwise, so the row groups
// [tp], the column groups [dp], the whole world and the one-rank groups are
// all exercised. Every expected value is computed from rank numbers, and the
// 16-bit float reductions are checked against bit patterns worked out by
// hand.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/MpiCommunicator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace braid::rt {
namespace {

using namespace std::chrono_literals;

/// The communicator every test shares, made in main; MPI is finalized when it
/// is destroyed, after the last test.
Communicator *sharedComm = nullptr;

Communicator &comm() { return *sharedComm; }
int64_t myRank() { return comm().rank(); }
int64_t worldSize() { return comm().mesh().numRanks(); }

using Axes = std::vector<std::string>;

/// Every way to name a group on the test mesh, including the same group with
/// its axes listed in the other order.
const std::vector<Axes> kAxisSets = {
    {}, {"tp"}, {"dp"}, {"dp", "tp"}, {"tp", "dp"}};

std::vector<int64_t> groupOf(const Axes &axes) {
  return comm().mesh().group(myRank(), axes);
}

int64_t indexIn(const std::vector<int64_t> &group) {
  for (size_t i = 0; i < group.size(); ++i)
    if (group[i] == myRank())
      return int64_t(i);
  ADD_FAILURE() << "rank " << myRank() << " is not in its own group";
  return 0;
}

std::string axesText(const Axes &axes) {
  std::string text = "[";
  for (const std::string &axis : axes)
    text += (text.size() > 1 ? "," : "") + axis;
  return text + "]";
}

//===----------------------------------------------------------------------===//
// Per-dtype element patterns
//===----------------------------------------------------------------------===//

/// The C++ storage type of each DType and a value unique to (rank, index).
template <DType D> struct Pattern;
template <> struct Pattern<DType::F32> {
  using T = float;
  static T value(int64_t rank, int64_t k) {
    return 0.25f * float(rank + 1) + float(k);
  }
};
template <> struct Pattern<DType::F16> {
  using T = uint16_t; // Moved as blobs: any bits will do.
  static T value(int64_t rank, int64_t k) { return T(0x3c00 + rank * 64 + k); }
};
template <> struct Pattern<DType::BF16> {
  using T = uint16_t;
  static T value(int64_t rank, int64_t k) { return T(0x3f80 + rank * 32 + k); }
};
template <> struct Pattern<DType::I64> {
  using T = int64_t;
  static T value(int64_t rank, int64_t k) {
    return (k % 2 ? -1 : 1) * (7 * rank + k + 1) + (rank << 40);
  }
};
template <> struct Pattern<DType::I32> {
  using T = int32_t;
  static T value(int64_t rank, int64_t k) {
    return T((k % 2 ? -1 : 1) * (7 * rank + k + 1));
  }
};
template <> struct Pattern<DType::I1> {
  using T = uint8_t; // Bit k % 3 of rank + 1: differs between ranks.
  static T value(int64_t rank, int64_t k) {
    return T(((rank + 1) >> (k % 3)) & 1);
  }
};

template <DType D>
std::vector<typename Pattern<D>::T> patternOf(int64_t rank, int64_t count,
                                              int64_t offset = 0) {
  std::vector<typename Pattern<D>::T> values(count);
  for (int64_t k = 0; k < count; ++k)
    values[k] = Pattern<D>::value(rank, offset + k);
  return values;
}

/// Something no pattern produces, so an element the collective forgot to
/// write shows up.
template <typename T> T sentinel() { return T(0x5a); }
template <> float sentinel<float>() { return -999.0f; }

template <DType D> struct DTypeTag : std::integral_constant<DType, D> {};
using AllDTypes = ::testing::Types<DTypeTag<DType::F32>, DTypeTag<DType::F16>,
                                   DTypeTag<DType::BF16>, DTypeTag<DType::I64>,
                                   DTypeTag<DType::I32>, DTypeTag<DType::I1>>;

template <typename Tag> class MpiDataMovement : public ::testing::Test {};
TYPED_TEST_SUITE(MpiDataMovement, AllDTypes);

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

// The communicator's world is MPI's: ranks are distinct and cover the mesh.
TEST(MpiGroups, RanksCoverTheMesh) {
  ASSERT_GE(myRank(), 0);
  ASSERT_LT(myRank(), worldSize());
  std::vector<int64_t> ranks(worldSize(), -1);
  int64_t mine = myRank();
  comm().allGather({"dp", "tp"}, &mine, ranks.data(), 1, DType::I64);
  for (int64_t r = 0; r < worldSize(); ++r)
    EXPECT_EQ(ranks[r], r);
}

// Two threads of a rank on the same group, each through its own
// communicator (duplicate): gathers on one, reductions on the other, at the
// same time, as two streams of a plan run them. MPI would mismatch (or
// hang on) interleaved calls on one communicator.
TEST(MpiGroups, DuplicateRunsTheSameGroupConcurrently) {
  std::unique_ptr<Communicator> second = comm().duplicate();
  EXPECT_EQ(second->rank(), myRank());
  EXPECT_EQ(second->timeout(), comm().timeout());
  int64_t n = worldSize();
  std::thread gathers([&] {
    for (int64_t call = 0; call < 100; ++call) {
      int64_t in = myRank() * 1000 + call;
      std::vector<int64_t> out(n, -1);
      comm().allGather({"dp", "tp"}, &in, out.data(), 1, DType::I64);
      for (int64_t r = 0; r < n; ++r)
        ASSERT_EQ(out[r], r * 1000 + call) << "call " << call;
    }
  });
  for (int64_t call = 0; call < 100; ++call) {
    std::vector<float> in = {float(myRank()), float(call)}, out(2);
    second->allReduce({"dp", "tp"}, in.data(), out.data(), 2, DType::F32,
                      ReduceOp::Sum);
    ASSERT_EQ(out[0], float(n * (n - 1) / 2)) << "call " << call;
    ASSERT_EQ(out[1], float(n * call)) << "call " << call;
  }
  gathers.join();
}

// Row and column groups of the 2x2 mesh, written out by hand rather than
// taken from MeshShape::group: gathering rank numbers shows who is in each
// group and in which order.
TEST(MpiGroups, RowsAndColumnsOfTwoByTwo) {
  if (worldSize() != 4)
    GTEST_SKIP() << "the 2x2 mesh needs 4 ranks";
  int64_t r = myRank(), mine = myRank();
  const std::vector<std::pair<Axes, std::vector<int64_t>>> expected = {
      {{"tp"}, {r - r % 2, r - r % 2 + 1}},
      {{"dp"}, {r % 2, r % 2 + 2}},
      {{"dp", "tp"}, {0, 1, 2, 3}},
      {{"tp", "dp"}, {0, 1, 2, 3}},
      {{}, {r}}};
  for (const auto &[axes, members] : expected) {
    std::vector<int64_t> gathered(members.size(), -1);
    comm().allGather(axes, &mine, gathered.data(), 1, DType::I64);
    EXPECT_EQ(gathered, members) << "axes " << axesText(axes);
  }
}

//===----------------------------------------------------------------------===//
// Data movement, every dtype
//===----------------------------------------------------------------------===//

TYPED_TEST(MpiDataMovement, AllGatherInGroupOrder) {
  constexpr DType D = TypeParam::value;
  using T = typename Pattern<D>::T;
  const int64_t count = 5;
  for (const Axes &axes : kAxisSets) {
    std::vector<int64_t> group = groupOf(axes);
    std::vector<T> in = patternOf<D>(myRank(), count);
    std::vector<T> out(count * group.size(), sentinel<T>());
    comm().allGather(axes, in.data(), out.data(), count, D);
    for (size_t i = 0; i < group.size(); ++i)
      for (int64_t k = 0; k < count; ++k)
        EXPECT_EQ(out[i * count + k], Pattern<D>::value(group[i], k))
            << "axes " << axesText(axes) << " block " << i << " element " << k;
  }
}

TYPED_TEST(MpiDataMovement, AllToAllSwapsBlocks) {
  constexpr DType D = TypeParam::value;
  using T = typename Pattern<D>::T;
  const int64_t count = 3;
  for (const Axes &axes : kAxisSets) {
    std::vector<int64_t> group = groupOf(axes);
    int64_t me = indexIn(group), n = int64_t(group.size());
    // Block j of rank r holds pattern elements [j * count, (j + 1) * count).
    std::vector<T> in = patternOf<D>(myRank(), n * count);
    std::vector<T> out(n * count, sentinel<T>());
    comm().allToAll(axes, in.data(), out.data(), count, D);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < count; ++k)
        EXPECT_EQ(out[i * count + k],
                  Pattern<D>::value(group[i], me * count + k))
            << "axes " << axesText(axes) << " block " << i << " element " << k;
  }
}

TYPED_TEST(MpiDataMovement, PermuteBothDirections) {
  constexpr DType D = TypeParam::value;
  using T = typename Pattern<D>::T;
  const int64_t count = 4;
  for (const Axes &axes : kAxisSets) {
    std::vector<int64_t> group = groupOf(axes);
    int64_t me = indexIn(group), n = int64_t(group.size());
    for (int64_t shift : {int64_t(1), int64_t(-1), int64_t(0), n + 1, -n - 1}) {
      std::vector<T> in = patternOf<D>(myRank(), count);
      std::vector<T> out(count, sentinel<T>());
      comm().permute(axes, in.data(), out.data(), count, D, shift);
      int64_t source = group[(((me - shift) % n) + n) % n];
      for (int64_t k = 0; k < count; ++k)
        EXPECT_EQ(out[k], Pattern<D>::value(source, k))
            << "axes " << axesText(axes) << " shift " << shift << " element "
            << k;
    }
  }
}

TYPED_TEST(MpiDataMovement, BroadcastFromEveryRoot) {
  constexpr DType D = TypeParam::value;
  using T = typename Pattern<D>::T;
  const int64_t count = 6;
  for (const Axes &axes : kAxisSets) {
    std::vector<int64_t> group = groupOf(axes);
    for (int64_t root = 0; root < int64_t(group.size()); ++root) {
      std::vector<T> in = patternOf<D>(myRank(), count);
      std::vector<T> out(count, sentinel<T>());
      comm().broadcast(axes, in.data(), out.data(), count, D, root);
      for (int64_t k = 0; k < count; ++k)
        EXPECT_EQ(out[k], Pattern<D>::value(group[root], k))
            << "axes " << axesText(axes) << " root " << root << " element "
            << k;
    }
  }
}

//===----------------------------------------------------------------------===//
// Reductions: f32, i64, i32
//===----------------------------------------------------------------------===//

const ReduceOp kAllOps[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min,
                            ReduceOp::Avg};

const char *opName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::Avg:
    return "avg";
  }
  return "?";
}

/// The reduction of `values` as the header specifies it: Avg is the sum
/// divided by the count, truncating toward zero for integers.
template <typename T>
T reduceByHand(const std::vector<T> &values, ReduceOp op) {
  T result = values[0];
  for (size_t i = 1; i < values.size(); ++i) {
    if (op == ReduceOp::Max)
      result = std::max(result, values[i]);
    else if (op == ReduceOp::Min)
      result = std::min(result, values[i]);
    else
      result = T(result + values[i]);
  }
  if (op == ReduceOp::Avg)
    result = T(result / T(values.size()));
  return result;
}

template <DType D> void checkAllReduce(bool inPlace) {
  using T = typename Pattern<D>::T;
  const int64_t count = 7;
  for (const Axes &axes : kAxisSets) {
    std::vector<int64_t> group = groupOf(axes);
    for (ReduceOp op : kAllOps) {
      std::vector<T> in = patternOf<D>(myRank(), count);
      std::vector<T> out(count, sentinel<T>());
      T *target = inPlace ? in.data() : out.data();
      comm().allReduce(axes, in.data(), target, count, D, op);
      for (int64_t k = 0; k < count; ++k) {
        std::vector<T> contributions;
        for (int64_t member : group)
          contributions.push_back(Pattern<D>::value(member, k));
        EXPECT_EQ(target[k], reduceByHand(contributions, op))
            << toString(D) << " " << opName(op) << " axes " << axesText(axes)
            << " element " << k << (inPlace ? " in place" : "");
      }
    }
  }
}

TEST(MpiAllReduce, F32EveryOp) { checkAllReduce<DType::F32>(false); }
TEST(MpiAllReduce, I64EveryOp) { checkAllReduce<DType::I64>(false); }
TEST(MpiAllReduce, I32EveryOp) { checkAllReduce<DType::I32>(false); }
TEST(MpiAllReduce, InPlace) {
  checkAllReduce<DType::F32>(true);
  checkAllReduce<DType::I32>(true);
}

// Integer Avg truncates toward zero: (-7 + -14 + ...)/n, worked out by hand
// for the world group.
TEST(MpiAllReduce, IntegerAvgTruncatesTowardZero) {
  const int64_t n = worldSize();
  int32_t in[2] = {int32_t(-7 * (myRank() + 1)), int32_t(3 * myRank() + 1)};
  int32_t out[2] = {0, 0};
  comm().allReduce({"dp", "tp"}, in, out, 2, DType::I32, ReduceOp::Avg);
  // Sums: -7 n (n + 1) / 2 and 3 n (n - 1) / 2 + n.
  const std::map<int64_t, std::pair<int32_t, int32_t>> expected = {
      {1, {-7, 1}},   // -7 / 1, 1 / 1
      {2, {-10, 2}},  // -21 / 2 = -10.5, 5 / 2 = 2.5
      {4, {-17, 5}}}; // -70 / 4 = -17.5, 22 / 4 = 5.5
  if (!expected.count(n))
    GTEST_SKIP() << "no hand-worked values for " << n << " ranks";
  EXPECT_EQ(out[0], expected.at(n).first);
  EXPECT_EQ(out[1], expected.at(n).second);
}

template <DType D> void checkReduceScatter() {
  using T = typename Pattern<D>::T;
  const int64_t count = 3;
  for (const Axes &axes : kAxisSets) {
    std::vector<int64_t> group = groupOf(axes);
    int64_t me = indexIn(group), n = int64_t(group.size());
    for (ReduceOp op : kAllOps) {
      std::vector<T> in = patternOf<D>(myRank(), n * count);
      std::vector<T> out(count, sentinel<T>());
      comm().reduceScatter(axes, in.data(), out.data(), count, D, op);
      for (int64_t k = 0; k < count; ++k) {
        std::vector<T> contributions;
        for (int64_t member : group)
          contributions.push_back(Pattern<D>::value(member, me * count + k));
        EXPECT_EQ(out[k], reduceByHand(contributions, op))
            << toString(D) << " " << opName(op) << " axes " << axesText(axes)
            << " element " << k;
      }
    }
  }
}

TEST(MpiReduceScatter, F32EveryOp) { checkReduceScatter<DType::F32>(); }
TEST(MpiReduceScatter, I64EveryOp) { checkReduceScatter<DType::I64>(); }
TEST(MpiReduceScatter, I32EveryOp) { checkReduceScatter<DType::I32>(); }

//===----------------------------------------------------------------------===//
// Reductions: i1
//===----------------------------------------------------------------------===//

// Sum and Max are logical or, Min and Avg logical and.
TEST(MpiAllReduce, I1IsLogical) {
  for (const Axes &axes : kAxisSets) {
    std::vector<int64_t> group = groupOf(axes);
    int64_t me = indexIn(group), n = int64_t(group.size());
    // Nobody, the first member, everybody, the last member.
    uint8_t in[4] = {0, uint8_t(me == 0), 1, uint8_t(me == n - 1)};
    uint8_t anyOf[4] = {0, 1, 1, 1};
    uint8_t allOf[4] = {0, uint8_t(n == 1), 1, uint8_t(n == 1)};
    for (ReduceOp op : kAllOps) {
      uint8_t out[4] = {9, 9, 9, 9};
      comm().allReduce(axes, in, out, 4, DType::I1, op);
      bool isOr = op == ReduceOp::Sum || op == ReduceOp::Max;
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(out[k], isOr ? anyOf[k] : allOf[k])
            << opName(op) << " axes " << axesText(axes) << " element " << k;
    }
  }
}

//===----------------------------------------------------------------------===//
// Reductions: f16 and bf16, against bit patterns worked out by hand
//===----------------------------------------------------------------------===//

/// One element: group member 0 contributes `first`, member 1 `second`, the
/// rest +0 (adding zeros is exact, so the result does not depend on MPI's
/// reduction order); a group of one keeps `first`.
struct SumCase {
  uint16_t first, second, sum;
  const char *what;
};

const SumCase kF16Sums[] = {
    {0x6800, 0x3c00, 0x6800, "2048 + 1 = 2049 ties to even 2048"},
    {0x6800, 0x4200, 0x6802, "2048 + 3 = 2051 ties to even 2052"},
    {0x2e66, 0x3266, 0x34cc, "f16(0.1) + f16(0.2) = 1228.5 ulp, tie to 1228"},
    {0x7bff, 0x4c00, 0x7c00, "65504 + 16 = 65520 ties to even: +inf"},
    {0x0001, 0x0001, 0x0002, "2^-24 + 2^-24 = 2^-23, subnormal"},
    {0xbe00, 0x3400, 0xbd00, "-1.5 + 0.25 = -1.25"},
};

const SumCase kBf16Sums[] = {
    {0x4380, 0x3f80, 0x4380, "256 + 1 = 257 ties to even 256"},
    {0x4380, 0x4040, 0x4382, "256 + 3 = 259 ties to even 260"},
    {0x3f80, 0x3b80, 0x3f80, "1 + 2^-8 ties to even 1"},
    {0x3f81, 0x3b80, 0x3f82, "(1 + 2^-7) + 2^-8 ties to even 1 + 2^-6"},
    {0x7f7f, 0x7f7f, 0x7f80, "max + max overflows to +inf"},
    {0xc000, 0x3f00, 0xbfc0, "-2 + 0.5 = -1.5"},
};

void checkHalfSums(DType dtype, const SumCase (&cases)[6]) {
  for (const Axes &axes : kAxisSets) {
    std::vector<int64_t> group = groupOf(axes);
    int64_t me = indexIn(group), n = int64_t(group.size());
    std::vector<uint16_t> in, expected;
    for (const SumCase &c : cases) {
      in.push_back(me == 0 ? c.first : me == 1 ? c.second : 0);
      expected.push_back(n == 1 ? c.first : c.sum);
    }
    std::vector<uint16_t> out(in.size(), 0xffff);
    comm().allReduce(axes, in.data(), out.data(), int64_t(in.size()), dtype,
                     ReduceOp::Sum);
    for (size_t k = 0; k < in.size(); ++k)
      EXPECT_EQ(out[k], expected[k]) << toString(dtype) << " axes "
                                     << axesText(axes) << ": " << cases[k].what;
  }
}

TEST(MpiHalfPrecision, F16SumRoundsToNearestEven) {
  checkHalfSums(DType::F16, kF16Sums);
}
TEST(MpiHalfPrecision, Bf16SumRoundsToNearestEven) {
  checkHalfSums(DType::BF16, kBf16Sums);
}

/// Bit patterns of +-(i + 0.5) for i = 0..3 and of the results for groups of
/// 1, 2 and 4, in one 16-bit float format.
struct HalfTable {
  DType dtype;
  uint16_t pointFive[4]; ///< 0.5, 1.5, 2.5, 3.5
  uint16_t half[3];      ///< n / 2 for n = 1, 2, 4: 0.5, 1, 2
  uint16_t sign;
  uint16_t tiny[2];    ///< member 0, member 1 (others 0) of the Avg case
  uint16_t tinyAvg[3]; ///< its average for n = 1, 2, 4
};

const HalfTable kF16Table = {DType::F16,
                             {0x3800, 0x3e00, 0x4100, 0x4300},
                             {0x3800, 0x3c00, 0x4000},
                             0x8000,
                             // f16(0.1) + f16(0.2) rounds to 0x34cc (0.2998),
                             // halved and quartered exactly.
                             {0x2e66, 0x3266},
                             {0x2e66, 0x30cc, 0x2ccc}};
const HalfTable kBf16Table = {DType::BF16,
                              {0x3f00, 0x3fc0, 0x4020, 0x4060},
                              {0x3f00, 0x3f80, 0x4000},
                              0x8000,
                              // 1 + 2^-8 rounds to 1; halved, quartered.
                              {0x3f80, 0x3b80},
                              {0x3f80, 0x3f00, 0x3e80}};

int sizeSlot(int64_t n) { return n == 1 ? 0 : n == 2 ? 1 : 2; }

void checkHalfMaxMinAvg(const HalfTable &table) {
  for (const Axes &axes : kAxisSets) {
    std::vector<int64_t> group = groupOf(axes);
    int64_t me = indexIn(group), n = int64_t(group.size());
    ASSERT_TRUE(n == 1 || n == 2 || n == 4) << "no table for groups of " << n;
    uint16_t plus = table.pointFive[me];
    uint16_t in[3] = {plus, uint16_t(plus | table.sign),
                      me < 2 ? table.tiny[me] : uint16_t(0)};
    uint16_t largest = table.pointFive[n - 1], smallest = table.pointFive[0];
    uint16_t mean = table.half[sizeSlot(n)];
    const std::pair<ReduceOp, std::array<uint16_t, 3>> expected[] = {
        {ReduceOp::Max, {largest, uint16_t(smallest | table.sign), 0}},
        {ReduceOp::Min, {smallest, uint16_t(largest | table.sign), 0}},
        {ReduceOp::Avg,
         {mean, uint16_t(mean | table.sign), table.tinyAvg[sizeSlot(n)]}}};
    for (const auto &[op, values] : expected) {
      uint16_t out[3] = {0xffff, 0xffff, 0xffff};
      comm().allReduce(axes, in, out, op == ReduceOp::Avg ? 3 : 2, table.dtype,
                       op);
      for (int k = 0; k < (op == ReduceOp::Avg ? 3 : 2); ++k)
        EXPECT_EQ(out[k], values[k])
            << toString(table.dtype) << " " << opName(op) << " axes "
            << axesText(axes) << " element " << k;
    }
  }
}

TEST(MpiHalfPrecision, F16MaxMinAvg) { checkHalfMaxMinAvg(kF16Table); }
TEST(MpiHalfPrecision, Bf16MaxMinAvg) { checkHalfMaxMinAvg(kBf16Table); }

// Member m's block j is (m + 0.5) for every j; each block sums to n^2 / 2.
TEST(MpiHalfPrecision, ReduceScatterSumAndAvg) {
  // n^2 / 2 for n = 1, 2, 4: 0.5, 2, 8.
  const std::pair<const HalfTable *, std::array<uint16_t, 3>> formats[] = {
      {&kF16Table, {0x3800, 0x4000, 0x4800}},
      {&kBf16Table, {0x3f00, 0x4000, 0x4100}}};
  for (const auto &[table, sums] : formats) {
    for (const Axes &axes : kAxisSets) {
      std::vector<int64_t> group = groupOf(axes);
      int64_t me = indexIn(group), n = int64_t(group.size());
      std::vector<uint16_t> in(2 * n);
      for (int64_t j = 0; j < n; ++j) {
        in[2 * j] = table->pointFive[me];
        in[2 * j + 1] = uint16_t(table->pointFive[me] | table->sign);
      }
      uint16_t sum = sums[sizeSlot(n)], mean = table->half[sizeSlot(n)];
      for (auto [op, expected] :
           {std::pair{ReduceOp::Sum, sum}, std::pair{ReduceOp::Avg, mean}}) {
        uint16_t out[2] = {0xffff, 0xffff};
        comm().reduceScatter(axes, in.data(), out, 2, table->dtype, op);
        EXPECT_EQ(out[0], expected) << toString(table->dtype) << " "
                                    << opName(op) << " axes " << axesText(axes);
        EXPECT_EQ(out[1], uint16_t(expected | table->sign))
            << toString(table->dtype) << " " << opName(op) << " axes "
            << axesText(axes);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Threads, errors, setup
//===----------------------------------------------------------------------===//

// Three threads at once: row groups and column groups of the shared
// communicator, and the world group of a second communicator.
TEST(MpiThreads, CollectivesOnDifferentGroupsRunConcurrently) {
  std::unique_ptr<Communicator> other =
      makeMpiCommunicator(MeshShape{{"x"}, {worldSize()}}, nullptr, nullptr);
  other->setTimeout(60s);
  const int iterations = 100;
  std::atomic<int> mismatches{0};
  std::atomic<int> errors{0};
  auto guarded = [&](auto body) {
    return [&, body] {
      try {
        body();
      } catch (const std::exception &error) {
        std::fprintf(stderr, "rank %lld: %s\n", (long long)myRank(),
                     error.what());
        ++errors;
      }
    };
  };
  std::thread rows(guarded([&] {
    std::vector<int64_t> group = groupOf({"tp"});
    for (int it = 0; it < iterations; ++it) {
      float in[4], out[4];
      for (int k = 0; k < 4; ++k)
        in[k] = float(myRank() * 10 + it + k);
      comm().allReduce({"tp"}, in, out, 4, DType::F32, ReduceOp::Sum);
      for (int k = 0; k < 4; ++k) {
        float expected = 0;
        for (int64_t member : group)
          expected += float(member * 10 + it + k);
        mismatches += out[k] != expected;
      }
    }
  }));
  std::thread columns(guarded([&] {
    std::vector<int64_t> group = groupOf({"dp"});
    for (int it = 0; it < iterations; ++it) {
      int64_t in = myRank() * 1000 + it;
      std::vector<int64_t> out(group.size());
      comm().allGather({"dp"}, &in, out.data(), 1, DType::I64);
      for (size_t i = 0; i < group.size(); ++i)
        mismatches += out[i] != group[i] * 1000 + it;
    }
  }));
  std::thread world(guarded([&] {
    for (int it = 0; it < iterations; ++it) {
      int32_t in = int32_t(myRank() + it), out = -1;
      other->allReduce({"x"}, &in, &out, 1, DType::I32, ReduceOp::Max);
      mismatches += out != int32_t(worldSize() - 1 + it);
    }
  }));
  rows.join();
  columns.join();
  world.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

/// Runs `call`, expecting a CollectiveError whose message contains `part`.
template <typename Call>
void expectCollectiveError(Call call, const std::string &part) {
  try {
    call();
    ADD_FAILURE() << "no CollectiveError; expected one mentioning '" << part
                  << "'";
  } catch (const CollectiveError &error) {
    EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
        << "message: " << error.what();
  }
}

// Argument errors are the same on every rank, so each throws before any
// message is sent and the communicator stays usable.
TEST(MpiErrors, BadArgumentsThrowAndLeaveTheCommunicatorUsable) {
  float in[2] = {1, 2}, out[2] = {0, 0};
  std::string me = "rank " + std::to_string(myRank()) + ": ";
  expectCollectiveError(
      [&] { comm().allReduce({"pp"}, in, out, 2, DType::F32, ReduceOp::Sum); },
      me + "all_reduce over axes [pp]: unknown mesh axis 'pp'");
  expectCollectiveError(
      [&] {
        comm().allGather({"tp", "tp"}, in, out, 1, DType::F32);
      },
      me + "all_gather over axes [tp, tp]: axis 'tp' is listed twice");
  expectCollectiveError(
      [&] { comm().permute({"tp"}, in, out, -1, DType::F32, 1); },
      "count -1 is outside");
  int64_t n = int64_t(groupOf({"tp"}).size());
  expectCollectiveError(
      [&] { comm().broadcast({"tp"}, in, out, 2, DType::F32, n); },
      "root " + std::to_string(n) + " is not a member index in [0, " +
          std::to_string(n) + ")");
  int64_t one = 1, total = 0;
  comm().allReduce({"dp", "tp"}, &one, &total, 1, DType::I64, ReduceOp::Sum);
  EXPECT_EQ(total, worldSize());
}

// The world size and the mesh disagree: the message names both.
TEST(MpiErrors, MeshOfTheWrongSize) {
  MeshShape wrong{{"x", "y"}, {worldSize() + 1, 1}};
  try {
    makeMpiCommunicator(wrong, nullptr, nullptr);
    ADD_FAILURE() << "no error for a mesh of " << worldSize() + 1 << " ranks";
  } catch (const std::runtime_error &error) {
    std::string n = std::to_string(worldSize()),
                m = std::to_string(worldSize() + 1);
    EXPECT_EQ(std::string(error.what()),
              "makeMpiCommunicator: MPI_COMM_WORLD has " + n +
                  " processes but the mesh [x=" + m + ", y=1] has " + m +
                  " ranks; launch with mpirun -n " + m);
  }
}

// Rank 0 skips an all_reduce: the others time out with a CollectiveError
// naming rank, collective, axes and group, and their communicator refuses
// further calls. Runs last in this binary; it has its own communicator, so
// the shared one is unaffected.
TEST(MpiTimeout, SkippedCollectiveTimesOut) {
  const int64_t n = worldSize();
  if (n < 2)
    GTEST_SKIP() << "needs a peer to skip";
  std::unique_ptr<Communicator> victim =
      makeMpiCommunicator(MeshShape{{"x"}, {n}}, nullptr, nullptr);
  victim->setTimeout(2s);
  // MPI cannot cancel the abandoned all_reduce, which owns these buffers
  // until the process exits (see MpiCommunicator.h).
  static float in[8], out[8];
  if (victim->rank() != 0) {
    auto start = std::chrono::steady_clock::now();
    try {
      victim->allReduce({"x"}, in, out, 8, DType::F32, ReduceOp::Sum);
      ADD_FAILURE() << "all_reduce finished without rank 0";
    } catch (const CollectiveError &error) {
      EXPECT_EQ(std::string(error.what()),
                "rank " + std::to_string(victim->rank()) +
                    ": all_reduce over axes [x] (group of " +
                    std::to_string(n) +
                    ") timed out after 2 s; a peer may have failed or issued "
                    "a different collective");
    }
    // Not a timing assertion: a timeout must not fire before it is due.
    EXPECT_GE(std::chrono::steady_clock::now() - start, 2s);
    expectCollectiveError(
        [&] { victim->allGather({"x"}, in, out, 1, DType::F32); },
        "all_gather over axes [x] (group of " + std::to_string(n) +
            ") refused: the communicator is unusable after an earlier "
            "failure");
  }
  victim.reset();
  // The shared communicator still works.
  int64_t one = 1, total = 0;
  comm().allReduce({"dp", "tp"}, &one, &total, 1, DType::I64, ReduceOp::Sum);
  EXPECT_EQ(total, n);
}

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

/// On ranks other than 0, replaces gtest's printer: only failures are shown,
/// marked with the rank.
class FailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit FailurePrinter(int64_t rank) : rank(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %lld] %s:%d: Failure\n%s\n", (long long)rank,
                   result.file_name() ? result.file_name() : "?",
                   result.line_number(), result.message());
  }
  void OnTestEnd(const ::testing::TestInfo &info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %lld] FAILED %s.%s\n", (long long)rank,
                   info.test_suite_name(), info.name());
  }

private:
  int64_t rank;
};

/// The number of processes mpirun started, read before MPI is initialized
/// (the mesh must be known to make the communicator). Open MPI and MPICH's
/// Hydra export it; a plain run is a world of one.
int64_t launchedWorldSize() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *value = std::getenv(name))
      return std::atoll(value);
  return 1;
}

} // namespace
} // namespace braid::rt

int main(int argc, char **argv) {
  using namespace braid::rt;
  ::testing::InitGoogleTest(&argc, argv);
  int64_t n = launchedWorldSize();
  MeshShape mesh = n == 4 ? MeshShape{{"dp", "tp"}, {2, 2}}
                          : MeshShape{{"dp", "tp"}, {1, n}};
  std::unique_ptr<Communicator> communicator;
  try {
    communicator = makeMpiCommunicator(mesh, &argc, &argv);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  // Long enough for a loaded machine; short enough that a test that leaves
  // its peers waiting fails instead of hanging.
  communicator->setTimeout(std::chrono::seconds(60));
  sharedComm = communicator.get();
  if (communicator->rank() != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(communicator->rank()));
  }
  int result = RUN_ALL_TESTS();
  sharedComm = nullptr;
  communicator.reset(); // Finalizes MPI.
  return result;
}
