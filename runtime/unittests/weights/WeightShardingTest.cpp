//===- WeightShardingTest.cpp - the slice of a weight each rank holds -----===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/weights/WeightSharding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

using namespace braid::rt;
using testing::HasSubstr;

namespace {

const MeshShape kMesh{{"dp", "tp"}, {2, 3}};

std::string errorOf(const std::vector<int64_t> &shape, const DimAxes &axes) {
  try {
    shardShape(shape, axes, kMesh);
  } catch (const std::invalid_argument &error) {
    return error.what();
  }
  return "";
}

TEST(WeightShardingTest, ShapesAndRegions) {
  EXPECT_EQ(shardShape({4, 6}, {}, kMesh), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(shardShape({4, 6}, {{"dp"}, {"tp"}}, kMesh),
            (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(shardShape({12, 5}, {{"dp", "tp"}, {}}, kMesh),
            (std::vector<int64_t>{2, 5}));
  // Rank 5 is (dp 1, tp 2).
  ShardRegion region = shardRegion({4, 6}, {{"dp"}, {"tp"}}, kMesh, 5);
  EXPECT_EQ(region.offsets, (std::vector<int64_t>{2, 4}));
  // Two axes on one dimension: slice index is dp * 3 + tp.
  region = shardRegion({12, 5}, {{"dp", "tp"}, {}}, kMesh, 4);
  EXPECT_EQ(region.offsets, (std::vector<int64_t>{8, 0}));
  EXPECT_EQ(region.sizes, (std::vector<int64_t>{2, 5}));
}

// ZeRO under tensor parallelism: dp cuts each tp rank's block, so the
// listed order, not the mesh's, is the major one.
TEST(WeightShardingTest, AxesOutOfMeshOrderCutTheFirstAxisBlocks) {
  // Rank 4 is (dp 1, tp 1): tp block 1 of 3 (rows 4..7), its dp half 1.
  ShardRegion region = shardRegion({12, 5}, {{"tp", "dp"}, {}}, kMesh, 4);
  EXPECT_EQ(region.offsets, (std::vector<int64_t>{6, 0}));
  EXPECT_EQ(region.sizes, (std::vector<int64_t>{2, 5}));
  // Every row is held by exactly one rank.
  std::vector<int> holders(12, 0);
  for (int64_t rank = 0; rank < 6; ++rank) {
    ShardRegion r = shardRegion({12, 5}, {{"tp", "dp"}, {}}, kMesh, rank);
    for (int64_t row = r.offsets[0]; row < r.offsets[0] + r.sizes[0]; ++row)
      ++holders[row];
  }
  EXPECT_EQ(holders, std::vector<int>(12, 1));
}

TEST(WeightShardingTest, BlockRegions) {
  // A block of a [5, 8] weight: rows 1..4, columns 2..7.
  ShardRegion block{{1, 2}, {4, 6}};
  // Columns over tp (3): each rank holds 2 of the block's 6 columns. Rank 5
  // is (dp 1, tp 2).
  ShardRegion region = shardRegion(block, {{}, {"tp"}}, kMesh, 5);
  EXPECT_EQ(region.offsets, (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(region.sizes, (std::vector<int64_t>{4, 2}));
  region = shardRegion(block, {{}, {"tp"}}, kMesh, 0);
  EXPECT_EQ(region.offsets, (std::vector<int64_t>{1, 2}));
  // Rows over dp (2), columns over tp (3). Rank 1 is (dp 0, tp 1).
  region = shardRegion(block, {{"dp"}, {"tp"}}, kMesh, 5);
  EXPECT_EQ(region.offsets, (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(region.sizes, (std::vector<int64_t>{2, 2}));
  region = shardRegion(block, {{"dp"}, {"tp"}}, kMesh, 1);
  EXPECT_EQ(region.offsets, (std::vector<int64_t>{1, 4}));
  // Unsharded: the block itself.
  region = shardRegion(block, {}, kMesh, 3);
  EXPECT_EQ(region.offsets, block.offsets);
  EXPECT_EQ(region.sizes, block.sizes);
  // Two axes on one dimension: slice dp * 3 + tp = 4 of a block of 6 rows.
  region =
      shardRegion(ShardRegion{{2, 1}, {6, 2}}, {{"dp", "tp"}, {}}, kMesh, 4);
  EXPECT_EQ(region.offsets, (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(region.sizes, (std::vector<int64_t>{1, 2}));

  // The values rank 5 copies: rows 3..4, columns 6..7 of the [5, 8] iota.
  std::vector<float> values(40);
  std::iota(values.begin(), values.end(), 0.0f);
  std::vector<float> shard(4);
  copyRegion(values.data(), {5, 8}, sizeof(float),
             shardRegion(block, {{"dp"}, {"tp"}}, kMesh, 5), shard.data());
  EXPECT_EQ(shard, (std::vector<float>{30, 31, 38, 39}));

  // The sharding must divide the block, not the weight.
  EXPECT_THROW(shardRegion(ShardRegion{{0, 0}, {4, 4}}, {{}, {"tp"}}, kMesh, 0),
               std::invalid_argument);
}

TEST(WeightShardingTest, Errors) {
  EXPECT_THAT(errorOf({4, 6}, {{"dp"}}),
              HasSubstr("sharding has 1 entries for a tensor of rank 2"));
  EXPECT_THAT(errorOf({4, 6}, {{"pp"}, {}}),
              HasSubstr("split over axis 'pp', which the mesh does not have"));
  EXPECT_THAT(errorOf({6, 6}, {{"tp"}, {"tp"}}),
              HasSubstr("axis 'tp' splits more than one dimension"));
  EXPECT_THAT(errorOf({4, 7}, {{}, {"tp"}}),
              HasSubstr("dimension 1 of size 7 does not split evenly into 3"));
}

TEST(WeightShardingTest, ShardsReassembleTheFullTensor) {
  std::vector<int64_t> full = {4, 3, 6};
  std::vector<float> values(72);
  std::iota(values.begin(), values.end(), 0.0f);
  DimAxes axes = {{"dp"}, {}, {"tp"}};
  std::vector<float> rebuilt(72, -1);
  for (int64_t rank = 0; rank < kMesh.numRanks(); ++rank) {
    ShardRegion region = shardRegion(full, axes, kMesh, rank);
    std::vector<float> shard(2 * 3 * 2);
    copyRegion(values.data(), full, sizeof(float), region, shard.data());
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 2; ++k)
          rebuilt[((region.offsets[0] + i) * 3 + j) * 6 + region.offsets[2] +
                  k] = shard[(i * 3 + j) * 2 + k];
  }
  EXPECT_EQ(rebuilt, values);
}

TEST(WeightShardingTest, ScalarAndEmptyRegions) {
  float scalar = 3.5f, out = 0;
  copyRegion(&scalar, {}, sizeof(float), ShardRegion{}, &out);
  EXPECT_EQ(out, 3.5f);
  ShardRegion empty{{0, 0}, {0, 2}};
  copyRegion(nullptr, {0, 2}, sizeof(float), empty, nullptr);
}

} // namespace
