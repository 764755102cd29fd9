//===- CommunicatorTest.cpp - mesh arithmetic and the one-rank world ------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/LocalCommunicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace braid::rt;

namespace {

TEST(MeshShapeTest, RowMajorCoordinatesAndGroups) {
  MeshShape mesh{{"dp", "tp", "sp"}, {2, 3, 2}};
  EXPECT_EQ(mesh.numRanks(), 12);
  // Rank 7 = dp 1, tp 0, sp 1.
  EXPECT_EQ(mesh.coordinate(7, "dp"), 1);
  EXPECT_EQ(mesh.coordinate(7, "tp"), 0);
  EXPECT_EQ(mesh.coordinate(7, "sp"), 1);
  EXPECT_EQ(mesh.group(7, {"tp"}), (std::vector<int64_t>{7, 9, 11}));
  EXPECT_EQ(mesh.group(7, {"dp"}), (std::vector<int64_t>{1, 7}));
  // Group order follows the mesh's axis order, not the listed order.
  EXPECT_EQ(mesh.group(7, {"sp", "dp"}), (std::vector<int64_t>{0, 1, 6, 7}));
  EXPECT_EQ(mesh.group(7, {}), (std::vector<int64_t>{7}));
  EXPECT_THROW(mesh.coordinate(12, "dp"), std::invalid_argument);
  EXPECT_THROW(mesh.coordinate(0, "pp"), std::invalid_argument);
  EXPECT_THROW(mesh.group(0, {"tp", "tp"}), std::invalid_argument);
  EXPECT_THROW((MeshShape{{"a"}, {0}}.numRanks()), std::invalid_argument);
}

TEST(LocalCommunicatorTest, CollectivesCopy) {
  LocalCommunicator comm(MeshShape{{"tp", "dp"}, {1, 1}});
  EXPECT_EQ(comm.rank(), 0);
  float in[3] = {1, 2, 3}, out[3] = {};
  comm.allReduce({"tp"}, in, out, 3, DType::F32, ReduceOp::Avg);
  EXPECT_EQ(out[2], 3);
  float gathered[3] = {};
  comm.allGather({"tp", "dp"}, in, gathered, 3, DType::F32);
  EXPECT_EQ(gathered[1], 2);
  float shifted[3] = {};
  comm.permute({"dp"}, in, shifted, 3, DType::F32, 5);
  EXPECT_EQ(shifted[0], 1);
  EXPECT_THROW(comm.broadcast({"tp"}, in, out, 3, DType::F32, 1),
               CollectiveError);
  EXPECT_THROW(comm.allToAll({"pp"}, in, out, 3, DType::F32), CollectiveError);
  EXPECT_THROW(LocalCommunicator(MeshShape{{"tp"}, {2}}),
               std::invalid_argument);
}

} // namespace
