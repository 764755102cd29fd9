//===- CollectiveCostTest.cpp - Tests for the collective cost model -------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Expected values are worked out by hand in the comments, never recomputed
// with the formula under test. Unless a test says otherwise the link is
//   alpha = 5 us = 5e-6 s,  bandwidth = 1e9 B/s (beta = 1e-9 s/B)
// and the buffer is S = 8e6 bytes, so S*beta = 8e-3 s.
//
//===----------------------------------------------------------------------===//

#include "runtime/cost/CollectiveCost.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

using braid::rt::busBandwidth;
using braid::rt::busBandwidthFactor;
using braid::rt::chunkedCollectiveTime;
using braid::rt::CollectiveAlgorithm;
using braid::rt::CollectiveKind;
using braid::rt::collectiveTime;
using braid::rt::LinkParams;
using braid::rt::parseCollectiveKind;
using braid::rt::toString;
using ::testing::HasSubstr;

namespace {

constexpr LinkParams kLink{5e-6, 1e9};
constexpr double kBytes = 8e6;

constexpr CollectiveKind kAllKinds[] = {
    CollectiveKind::AllReduce,     CollectiveKind::AllGather,
    CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
    CollectiveKind::Broadcast,     CollectiveKind::CollectivePermute,
};

/// Relative tolerance: a few ulps of double; any formula mistake is many
/// orders of magnitude larger.
constexpr double kRelTol = 1e-12;

/// Expects `actual` within kRelTol of `expected`, relative to `expected`.
void expectClose(double actual, double expected) {
  EXPECT_NEAR(actual, expected, std::abs(expected) * kRelTol);
}

/// Runs `fn` and returns the message of the std::invalid_argument it throws,
/// or "<no exception>" so that message checks fail when nothing is thrown.
template <typename Fn> std::string invalidArgumentMessage(Fn fn) {
  try {
    fn();
  } catch (const std::invalid_argument &error) {
    return error.what();
  }
  return "<no exception>";
}

TEST(CollectiveCostTest, AllReduceRing) {
  // P = 4: 2*3*5e-6 = 3e-5;  2*3/4 = 1.5;  1.5 * 8e6 * 1e-9 = 1.2e-2.
  expectClose(collectiveTime(CollectiveKind::AllReduce, 4, kBytes, kLink),
              0.01203);
  // P = 8: 2*7*5e-6 = 7e-5;  2*7/8 = 1.75;  1.75 * 8e-3 = 1.4e-2.
  expectClose(collectiveTime(CollectiveKind::AllReduce, 8, kBytes, kLink),
              0.01407);
  // P = 2: 2*1*5e-6 = 1e-5;  2*1/2 = 1;  1 * 8e-3 = 8e-3.
  expectClose(collectiveTime(CollectiveKind::AllReduce, 2, kBytes, kLink),
              0.00801);
}

TEST(CollectiveCostTest, AllGatherReduceScatterAllToAllRing) {
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::AllToAll}) {
    SCOPED_TRACE(std::string(toString(kind)));
    // P = 4: 3*5e-6 = 1.5e-5;  3/4 * 8e-3 = 6e-3.
    expectClose(collectiveTime(kind, 4, kBytes, kLink), 0.006015);
    // P = 8: 7*5e-6 = 3.5e-5;  7/8 * 8e-3 = 7e-3.
    expectClose(collectiveTime(kind, 8, kBytes, kLink), 0.007035);
    // P = 2: 1*5e-6 = 5e-6;  1/2 * 8e-3 = 4e-3.
    expectClose(collectiveTime(kind, 2, kBytes, kLink), 0.004005);
  }
}

TEST(CollectiveCostTest, BroadcastTreeDepthRoundsUp) {
  // alpha * ceil(log2 P) + 8e-3.
  // P = 2: depth 1 -> 5e-6 + 8e-3.
  expectClose(collectiveTime(CollectiveKind::Broadcast, 2, kBytes, kLink),
              0.008005);
  // P = 4: depth 2 -> 1e-5 + 8e-3.
  expectClose(collectiveTime(CollectiveKind::Broadcast, 4, kBytes, kLink),
              0.00801);
  // P = 5: depth 3 (2^2 = 4 < 5) -> 1.5e-5 + 8e-3.
  expectClose(collectiveTime(CollectiveKind::Broadcast, 5, kBytes, kLink),
              0.008015);
  // P = 8: depth 3 exactly -> 1.5e-5 + 8e-3.
  expectClose(collectiveTime(CollectiveKind::Broadcast, 8, kBytes, kLink),
              0.008015);
  // P = 9: depth 4 -> 2e-5 + 8e-3.
  expectClose(collectiveTime(CollectiveKind::Broadcast, 9, kBytes, kLink),
              0.00802);
}

TEST(CollectiveCostTest, CollectivePermuteIsOneShift) {
  // alpha + S*beta = 5e-6 + 8e-3, whatever P > 1 is.
  expectClose(
      collectiveTime(CollectiveKind::CollectivePermute, 2, kBytes, kLink),
      0.008005);
  expectClose(
      collectiveTime(CollectiveKind::CollectivePermute, 64, kBytes, kLink),
      0.008005);
}

TEST(CollectiveCostTest, LatencyOnlyForEmptyBuffer) {
  // S = 0 leaves only the alpha terms: all-reduce at P = 8 is 14 * 5e-6.
  expectClose(collectiveTime(CollectiveKind::AllReduce, 8, 0, kLink), 7e-5);
  // All-to-all at P = 8 is 7 * 5e-6.
  expectClose(collectiveTime(CollectiveKind::AllToAll, 8, 0, kLink), 3.5e-5);
}

TEST(CollectiveCostTest, OneRankCostsNothing) {
  for (CollectiveKind kind : kAllKinds) {
    SCOPED_TRACE(std::string(toString(kind)));
    EXPECT_EQ(collectiveTime(kind, 1, kBytes, kLink), 0.0);
    EXPECT_EQ(chunkedCollectiveTime(kind, 1, kBytes, 4, kLink), 0.0);
  }
}

TEST(CollectiveCostTest, OneChunkEqualsUnchunked) {
  for (CollectiveKind kind : kAllKinds) {
    SCOPED_TRACE(std::string(toString(kind)));
    expectClose(chunkedCollectiveTime(kind, 4, kBytes, 1, kLink),
                collectiveTime(kind, 4, kBytes, kLink));
  }
}

TEST(CollectiveCostTest, ChunkingPaysLatencyPerPiece) {
  // All-reduce, P = 4, k = 4 pieces of 2e6 bytes:
  //   one piece = 2*3*5e-6 + 1.5 * 2e6 * 1e-9 = 3e-5 + 3e-3 = 3.03e-3;
  //   four pieces = 1.212e-2, i.e. 0.01203 + (4-1) * 6 * 5e-6 = + 9e-5.
  expectClose(
      chunkedCollectiveTime(CollectiveKind::AllReduce, 4, kBytes, 4, kLink),
      0.01212);
  // All-gather, P = 8, k = 2: 0.007035 + (2-1) * 7 * 5e-6 = 0.00707.
  expectClose(
      chunkedCollectiveTime(CollectiveKind::AllGather, 8, kBytes, 2, kLink),
      0.00707);
  // Broadcast, P = 8 (depth 3), k = 2: 2 * (1.5e-5 + 4e-3) = 8.03e-3.
  expectClose(
      chunkedCollectiveTime(CollectiveKind::Broadcast, 8, kBytes, 2, kLink),
      0.00803);
  // Permute, k = 3 pieces of 8e6/3 bytes: 3 * 5e-6 + 8e-3 = 8.015e-3.
  expectClose(chunkedCollectiveTime(CollectiveKind::CollectivePermute, 4,
                                    kBytes, 3, kLink),
              0.008015);
}

TEST(CollectiveCostTest, ChunkingIsFreeWithoutLatency) {
  // With alpha = 0 only the bandwidth term is left, and it does not depend on
  // how the buffer is split: reduce-scatter, P = 4: 3/4 * 8e6 / 2e9 = 3e-3.
  constexpr LinkParams noLatency{0, 2e9};
  expectClose(chunkedCollectiveTime(CollectiveKind::ReduceScatter, 4, kBytes,
                                    16, noLatency),
              0.003);
}

TEST(CollectiveCostTest, BusBandwidthFactors) {
  // nccl-tests' factors.
  expectClose(busBandwidthFactor(CollectiveKind::AllReduce, 8), 1.75);
  expectClose(busBandwidthFactor(CollectiveKind::AllReduce, 2), 1.0);
  expectClose(busBandwidthFactor(CollectiveKind::AllGather, 8), 0.875);
  expectClose(busBandwidthFactor(CollectiveKind::ReduceScatter, 4), 0.75);
  expectClose(busBandwidthFactor(CollectiveKind::AllToAll, 2), 0.5);
  EXPECT_EQ(busBandwidthFactor(CollectiveKind::Broadcast, 8), 1.0);
  EXPECT_EQ(busBandwidthFactor(CollectiveKind::CollectivePermute, 8), 1.0);
  EXPECT_EQ(busBandwidthFactor(CollectiveKind::AllReduce, 1), 0.0);
}

TEST(CollectiveCostTest, BusBandwidthFromMeasurement) {
  // 1e9 bytes in 0.01 s is an algorithm bandwidth of 1e11 B/s.
  // All-reduce, P = 8: 1e11 * 2*7/8 = 1.75e11.
  expectClose(busBandwidth(CollectiveKind::AllReduce, 8, 1e9, 0.01), 1.75e11);
  // All-gather / reduce-scatter / all-to-all, P = 8: 1e11 * 7/8 = 8.75e10.
  expectClose(busBandwidth(CollectiveKind::AllGather, 8, 1e9, 0.01), 8.75e10);
  expectClose(busBandwidth(CollectiveKind::ReduceScatter, 8, 1e9, 0.01),
              8.75e10);
  expectClose(busBandwidth(CollectiveKind::AllToAll, 8, 1e9, 0.01), 8.75e10);
  // Broadcast and permute: the algorithm bandwidth itself.
  expectClose(busBandwidth(CollectiveKind::Broadcast, 8, 1e9, 0.01), 1e11);
  expectClose(busBandwidth(CollectiveKind::CollectivePermute, 8, 1e9, 0.01),
              1e11);
}

TEST(CollectiveCostTest, BusBandwidthRecoversLinkBandwidth) {
  // Bus bandwidth is defined so that, on an ideal (alpha = 0) link, it equals
  // the link bandwidth for every kind and group size. This ties the time
  // formulas to the bus bandwidth factors.
  constexpr LinkParams noLatency{0, 2.5e10};
  for (CollectiveKind kind : kAllKinds) {
    for (std::int64_t p : {2, 3, 8, 64}) {
      SCOPED_TRACE(std::string(toString(kind)) + " P=" + std::to_string(p));
      double seconds = collectiveTime(kind, p, kBytes, noLatency);
      expectClose(busBandwidth(kind, p, kBytes, seconds), 2.5e10);
    }
  }
}

TEST(CollectiveCostTest, KindNames) {
  EXPECT_EQ(toString(CollectiveKind::AllReduce), "all_reduce");
  EXPECT_EQ(toString(CollectiveKind::AllGather), "all_gather");
  EXPECT_EQ(toString(CollectiveKind::ReduceScatter), "reduce_scatter");
  EXPECT_EQ(toString(CollectiveKind::AllToAll), "all_to_all");
  EXPECT_EQ(toString(CollectiveKind::Broadcast), "broadcast");
  EXPECT_EQ(toString(CollectiveKind::CollectivePermute), "collective_permute");
}

TEST(CollectiveCostTest, RejectsGroupSmallerThanOne) {
  EXPECT_THAT(invalidArgumentMessage([] {
                collectiveTime(CollectiveKind::AllReduce, 0, kBytes, kLink);
              }),
              HasSubstr("collectiveTime: group size must be >= 1, got 0"));
  EXPECT_THAT(invalidArgumentMessage([] {
                chunkedCollectiveTime(CollectiveKind::AllGather, -3, kBytes, 2,
                                      kLink);
              }),
              HasSubstr("group size must be >= 1, got -3"));
  EXPECT_THAT(invalidArgumentMessage([] {
                busBandwidth(CollectiveKind::AllReduce, 0, kBytes, 1.0);
              }),
              HasSubstr("busBandwidth: group size must be >= 1, got 0"));
  EXPECT_THAT(invalidArgumentMessage(
                  [] { busBandwidthFactor(CollectiveKind::Broadcast, -1); }),
              HasSubstr("group size must be >= 1, got -1"));
}

TEST(CollectiveCostTest, RejectsNegativeOrNonFiniteBytes) {
  EXPECT_THAT(invalidArgumentMessage([] {
                collectiveTime(CollectiveKind::AllReduce, 4, -1, kLink);
              }),
              HasSubstr("byte count must be finite and >= 0, got -1"));
  EXPECT_THAT(invalidArgumentMessage([] {
                chunkedCollectiveTime(CollectiveKind::AllToAll, 4, -2.5, 2,
                                      kLink);
              }),
              HasSubstr("byte count must be finite and >= 0, got -2.5"));
  EXPECT_THAT(invalidArgumentMessage(
                  [] { busBandwidth(CollectiveKind::AllReduce, 4, -8, 1.0); }),
              HasSubstr("byte count must be finite and >= 0, got -8"));
  EXPECT_THAT(invalidArgumentMessage([] {
                collectiveTime(CollectiveKind::AllReduce, 4,
                               std::numeric_limits<double>::quiet_NaN(), kLink);
              }),
              HasSubstr("byte count must be finite and >= 0, got nan"));
}

TEST(CollectiveCostTest, RejectsNonPositiveBandwidth) {
  EXPECT_THAT(invalidArgumentMessage([] {
                collectiveTime(CollectiveKind::AllReduce, 4, kBytes,
                               LinkParams{5e-6, 0});
              }),
              HasSubstr("link bandwidth (bytes/s) must be finite and > 0, "
                        "got 0"));
  EXPECT_THAT(invalidArgumentMessage([] {
                chunkedCollectiveTime(CollectiveKind::Broadcast, 4, kBytes, 2,
                                      LinkParams{5e-6, -1e9});
              }),
              HasSubstr("link bandwidth (bytes/s) must be finite and > 0, "
                        "got -1e+09"));
}

TEST(CollectiveCostTest, RejectsNegativeLatency) {
  EXPECT_THAT(invalidArgumentMessage([] {
                collectiveTime(CollectiveKind::AllGather, 4, kBytes,
                               LinkParams{-1e-6, 1e9});
              }),
              HasSubstr("link latency (seconds) must be finite and >= 0, "
                        "got -1e-06"));
}

TEST(CollectiveCostTest, RejectsChunkCountBelowOne) {
  EXPECT_THAT(invalidArgumentMessage([] {
                chunkedCollectiveTime(CollectiveKind::AllReduce, 4, kBytes, 0,
                                      kLink);
              }),
              HasSubstr("chunkedCollectiveTime: chunk count must be >= 1, "
                        "got 0"));
  EXPECT_THAT(invalidArgumentMessage([] {
                chunkedCollectiveTime(CollectiveKind::AllReduce, 4, kBytes, -2,
                                      kLink);
              }),
              HasSubstr("chunk count must be >= 1, got -2"));
}

TEST(CollectiveCostTest, RejectsNonPositiveElapsedTime) {
  EXPECT_THAT(invalidArgumentMessage([] {
                busBandwidth(CollectiveKind::AllReduce, 4, kBytes, 0);
              }),
              HasSubstr("busBandwidth: elapsed time (seconds) must be finite "
                        "and > 0, got 0"));
  EXPECT_THAT(invalidArgumentMessage([] {
                busBandwidth(CollectiveKind::AllReduce, 4, kBytes, -0.5);
              }),
              HasSubstr("got -0.5"));
}

TEST(CollectiveCostTest, RejectsKindsOutsideTheEnum) {
  auto bogus = static_cast<CollectiveKind>(42);
  EXPECT_THROW(collectiveTime(bogus, 4, kBytes, kLink), std::invalid_argument);
  // Also for a one-rank group, where the result would otherwise be 0.
  EXPECT_THROW(collectiveTime(bogus, 1, kBytes, kLink), std::invalid_argument);
  EXPECT_THROW(busBandwidthFactor(bogus, 4), std::invalid_argument);
  EXPECT_THROW(toString(bogus), std::invalid_argument);
}

// Double binary tree all-reduce: 2*ceil(log2 P)*alpha + 2*S*beta. P = 8:
// 6 * 5e-6 + 2 * 8e-3 = 0.01603. P = 5 (ceil(log2 5) = 3): the same.
TEST(CollectiveCostTest, TreeAllReduce) {
  expectClose(collectiveTime(CollectiveKind::AllReduce,
                             CollectiveAlgorithm::Tree, 8, kBytes, kLink),
              0.01603);
  expectClose(collectiveTime(CollectiveKind::AllReduce,
                             CollectiveAlgorithm::Tree, 5, kBytes, kLink),
              0.01603);
  EXPECT_EQ(collectiveTime(CollectiveKind::AllReduce, CollectiveAlgorithm::Tree,
                           1, kBytes, kLink),
            0);
}

// Ring is the ring formula for all-reduce (2*7*5e-6 + 1.75 * 8e-3 = 0.01407
// for P = 8) and a pipelined chain for broadcast ((P-1)*alpha + S*beta =
// 35e-6 + 8e-3); Tree is the tree broadcast (3 * 5e-6 + 8e-3).
TEST(CollectiveCostTest, RingAndTreeBroadcast) {
  expectClose(collectiveTime(CollectiveKind::AllReduce,
                             CollectiveAlgorithm::Ring, 8, kBytes, kLink),
              0.01407);
  expectClose(collectiveTime(CollectiveKind::Broadcast,
                             CollectiveAlgorithm::Ring, 8, kBytes, kLink),
              0.008035);
  expectClose(collectiveTime(CollectiveKind::Broadcast,
                             CollectiveAlgorithm::Tree, 8, kBytes, kLink),
              0.008015);
  // Kinds with one algorithm ignore the choice: (P-1)*alpha + 7/8 * 8e-3.
  for (CollectiveAlgorithm algorithm :
       {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree,
        CollectiveAlgorithm::Auto})
    expectClose(
        collectiveTime(CollectiveKind::AllGather, algorithm, 8, kBytes, kLink),
        0.007035);
}

// Auto takes the faster: the ring for 8 MB (0.01407 < 0.01603), the tree for
// 8 kB (ring 70e-6 + 1.4e-5 = 8.4e-5; tree 30e-6 + 1.6e-5 = 4.6e-5).
TEST(CollectiveCostTest, AutoPicksTheFasterAlgorithm) {
  expectClose(collectiveTime(CollectiveKind::AllReduce,
                             CollectiveAlgorithm::Auto, 8, kBytes, kLink),
              0.01407);
  expectClose(collectiveTime(CollectiveKind::AllReduce,
                             CollectiveAlgorithm::Auto, 8, 8e3, kLink),
              4.6e-5);
  EXPECT_EQ(toString(CollectiveAlgorithm::Auto), "auto");
  EXPECT_THROW(collectiveTime(CollectiveKind::AllReduce,
                              static_cast<CollectiveAlgorithm>(9), 8, kBytes,
                              kLink),
               std::invalid_argument);
  EXPECT_THROW(collectiveTime(CollectiveKind::AllReduce,
                              CollectiveAlgorithm::Tree, 0, kBytes, kLink),
               std::invalid_argument);
}

// Kind names round-trip (the simulator reads plans' and the passes read ops'
// collective names with it).
TEST(CollectiveCostTest, KindNamesRoundTrip) {
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
        CollectiveKind::Broadcast, CollectiveKind::CollectivePermute})
    EXPECT_EQ(parseCollectiveKind(toString(kind)), kind);
  EXPECT_EQ(parseCollectiveKind("all_reduce_scatter"), std::nullopt);
}

} // namespace
