//===- RunProfileTest.cpp - profiles across ranks --------------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/RunProfile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <stdexcept>

using namespace braid::rt;
using testing::HasSubstr;

namespace {

RunProfile profileOf(int64_t rank, int64_t totalNs, int64_t matmulNs,
                     int64_t reduceStart) {
  RunProfile profile;
  profile.rank = rank;
  profile.totalNs = totalNs;
  profile.streams.push_back(
      {"compute", {{"matmul", "m.onnx: node 'a'", true, 0, matmulNs}}});
  profile.streams.push_back(
      {"comm",
       {{"wait_event", "", false, 0, reduceStart},
        {"all_reduce", "m.onnx: node 'a'", true, reduceStart, totalNs}}});
  return profile;
}

TEST(RunProfileTest, JsonRoundTrip) {
  RunProfile profile = profileOf(3, 1000, 400, 500);
  profile.offsetNs = 77;
  RunProfile back = RunProfile::fromJson(profile.toJson());
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.totalNs, 1000);
  EXPECT_EQ(back.offsetNs, 77);
  ASSERT_EQ(back.streams.size(), 2u);
  EXPECT_EQ(back.streams[1].name, "comm");
  ASSERT_EQ(back.streams[1].instructions.size(), 2u);
  const InstructionTiming &reduce = back.streams[1].instructions[1];
  EXPECT_EQ(reduce.name, "all_reduce");
  EXPECT_EQ(reduce.location, "m.onnx: node 'a'");
  EXPECT_TRUE(reduce.busy);
  EXPECT_EQ(reduce.startNs, 500);
  EXPECT_EQ(reduce.endNs, 1000);
  EXPECT_THROW(RunProfile::fromJson("{\"rank\": 1}"), std::invalid_argument);
  EXPECT_THROW(RunProfile::fromJson("not json"), std::invalid_argument);
}

TEST(RunProfileTest, MergedTraceShiftsEachRankByItsOffset) {
  MergedProfile merged;
  merged.ranks = {profileOf(0, 2000, 1000, 1000),
                  profileOf(1, 3000, 1500, 1500)};
  merged.ranks[1].offsetNs = 4000;
  std::ostringstream text;
  merged.writeChromeTrace(text);
  nlohmann::json trace = nlohmann::json::parse(text.str());
  double reduceStart[2] = {-1, -1};
  int processes = 0;
  for (const nlohmann::json &event : trace["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "process_name")
      ++processes;
    if (event["ph"] == "X" && event["name"] == "all_reduce")
      reduceStart[event["pid"].get<int>()] = event["ts"].get<double>();
  }
  EXPECT_EQ(processes, 2);
  EXPECT_DOUBLE_EQ(reduceStart[0], 1.0);       // 1000 ns
  EXPECT_DOUBLE_EQ(reduceStart[1], 4.0 + 1.5); // offset 4000 + 1500 ns
}

TEST(RunProfileTest, SummaryAcrossRanks) {
  MergedProfile merged;
  merged.ranks = {profileOf(0, 2000000, 1000000, 1000000),
                  profileOf(1, 3000000, 1500000, 1500000)};
  std::string summary = merged.summary();
  EXPECT_THAT(summary, HasSubstr("2 ranks: total 3.000 ms (slowest, rank 1; "
                                 "fastest 2.000 ms, rank 0)"));
  // compute busy: (1 + 1.5) / 2 ms per rank, of 5 ms of rank time.
  EXPECT_THAT(summary, HasSubstr("stream 'compute': busy 1.250 ms per rank "
                                 "(50.0%), 1 instructions per rank"));
  EXPECT_THAT(summary, HasSubstr("matmul: 2.500 ms in 2 calls"));
  EXPECT_THAT(summary, HasSubstr("all_reduce: 2.500 ms in 2 calls"));
  // One rank: its own summary.
  MergedProfile one;
  one.ranks = {profileOf(0, 2000000, 1000000, 1000000)};
  EXPECT_EQ(one.summary(), one.ranks[0].summary());
  merged.ranks[1].untimed = "the plan ran as one CUDA graph";
  EXPECT_THAT(merged.summary(), HasSubstr("no per-instruction times"));
}

} // namespace
