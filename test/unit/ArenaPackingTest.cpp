//===- ArenaPackingTest.cpp - packArena against a direct placement -------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// packArena indexes buffers by program position and merges the arena taken
// by buffers live throughout; these tests place random programs' buffers
// the direct way (each at the smallest offset, among 0 and the ends of the
// buffers it overlaps in time, that overlaps none of them in memory) in
// both orders the header documents, and require the same offsets.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/ArenaPacking.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

using namespace mlir::braid;

namespace {
constexpr int64_t kAlign = 64;

int64_t rounded(int64_t bytes) {
  return (std::max<int64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
}

bool liveTogether(const ArenaBuffer &a, const ArenaBuffer &b) {
  return a.start <= b.end && b.start <= a.end;
}

/// Places buffers in `order`, each at the smallest candidate offset free of
/// every buffer already placed that it is live together with.
ArenaLayout direct(const std::vector<ArenaBuffer> &buffers,
                   const std::vector<size_t> &order) {
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<size_t> done;
  for (size_t i : order) {
    int64_t size = rounded(buffers[i].bytes);
    std::vector<int64_t> candidates = {0};
    for (size_t j : done)
      if (liveTogether(buffers[i], buffers[j]))
        candidates.push_back(layout.offsets[j] + rounded(buffers[j].bytes));
    std::sort(candidates.begin(), candidates.end());
    for (int64_t at : candidates) {
      bool free = std::none_of(done.begin(), done.end(), [&](size_t j) {
        return liveTogether(buffers[i], buffers[j]) &&
               at < layout.offsets[j] + rounded(buffers[j].bytes) &&
               layout.offsets[j] < at + size;
      });
      if (free) {
        layout.offsets[i] = at;
        break;
      }
    }
    layout.peak = std::max(layout.peak, layout.offsets[i] + size);
    done.push_back(i);
  }
  return layout;
}

ArenaLayout reference(const std::vector<ArenaBuffer> &buffers) {
  auto byStart = [&](size_t a, size_t b) {
    const ArenaBuffer &x = buffers[a], &y = buffers[b];
    return std::make_tuple(!x.persistent, x.start, x.rank) <
           std::make_tuple(!y.persistent, y.start, y.rank);
  };
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), byStart);
  ArenaLayout first = direct(buffers, order);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ArenaBuffer &x = buffers[a], &y = buffers[b];
    if (x.persistent != y.persistent)
      return x.persistent;
    if (rounded(x.bytes) != rounded(y.bytes))
      return rounded(x.bytes) > rounded(y.bytes);
    return byStart(a, b);
  });
  ArenaLayout bySize = direct(buffers, order);
  return bySize.peak < first.peak ? bySize : first;
}

/// A program of `positions` positions: weights live throughout, a few
/// long-lived buffers (prefetched parameters, saved activations), many
/// short ones; sizes from a few classes so that ties are common.
std::vector<ArenaBuffer> randomProgram(std::mt19937 &rng, int positions,
                                       int count) {
  std::vector<ArenaBuffer> buffers;
  const int64_t sizes[] = {0, 1, 64, 100, 4096, 4096 * 3, 65536, 1 << 20};
  auto size = [&] { return sizes[rng() % 8] + int64_t(rng() % 3) * 64; };
  for (int i = 0; i < count; ++i) {
    ArenaBuffer b;
    int kind = rng() % 10;
    if (kind == 0) {
      b.start = 0;
      b.end = positions;
      b.persistent = true;
    } else {
      b.start = rng() % positions;
      int64_t span = kind == 1 ? rng() % positions : rng() % 40;
      b.end = std::min<int64_t>(positions - 1, b.start + span);
    }
    b.bytes = size();
    b.rank = i;
    buffers.push_back(b);
  }
  return buffers;
}

TEST(ArenaPackingTest, SameOffsetsAsTheDirectPlacement) {
  std::mt19937 rng(20261206);
  for (int trial = 0; trial < 300; ++trial) {
    int positions = 1 + rng() % 500;
    std::vector<ArenaBuffer> buffers =
        randomProgram(rng, positions, rng() % 400);
    ArenaLayout got = packArena(buffers, kAlign);
    ArenaLayout want = reference(buffers);
    ASSERT_EQ(got.peak, want.peak) << "trial " << trial;
    ASSERT_EQ(std::vector<int64_t>(got.offsets.begin(), got.offsets.end()),
              std::vector<int64_t>(want.offsets.begin(), want.offsets.end()))
        << "trial " << trial;
    // And the layout is one: buffers live together never share bytes.
    for (size_t i = 0; i < buffers.size(); ++i)
      for (size_t j = i + 1; j < buffers.size(); ++j) {
        if (!liveTogether(buffers[i], buffers[j]))
          continue;
        ASSERT_TRUE(got.offsets[i] + rounded(buffers[i].bytes) <=
                          got.offsets[j] ||
                      got.offsets[j] + rounded(buffers[j].bytes) <=
                          got.offsets[i])
            << "trial " << trial << ": buffers " << i << " and " << j;
      }
  }
}

TEST(ArenaPackingTest, NonPersistentBuffersLiveThroughout) {
  // Buffers that are not persistent but span the whole program (an output
  // computed at the first position) are placed by size among the others
  // and take the arena of the whole program from then on.
  std::vector<ArenaBuffer> buffers = {
      {0, 9, 4096, false, 0}, {2, 3, 8192, false, 1}, {0, 9, 64, true, 2},
      {4, 9, 8192, false, 3}, {0, 9, 100000, false, 4}, {5, 5, 0, false, 5}};
  ArenaLayout got = packArena(buffers, kAlign);
  ArenaLayout want = reference(buffers);
  EXPECT_EQ(got.peak, want.peak);
  EXPECT_EQ(std::vector<int64_t>(got.offsets.begin(), got.offsets.end()),
            std::vector<int64_t>(want.offsets.begin(), want.offsets.end()));
}

TEST(ArenaPackingTest, Empty) {
  ArenaLayout layout = packArena({}, kAlign);
  EXPECT_EQ(layout.peak, 0);
  EXPECT_TRUE(layout.offsets.empty());
}
} // namespace
