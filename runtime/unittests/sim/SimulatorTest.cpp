//===- SimulatorTest.cpp - plans in virtual time --------------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Small hand-built schedules whose simulated times are worked out by hand.
// With the round-number profile (cost/TestProfile.h) a memory-bound kernel
// that moves B bytes takes B / 1e9 s, a matmul of F FLOPs on f32 F / 1e12 s,
// and an all-reduce of S bytes over 2 ranks 2*(1/2)*S / 1e9 = S / 1e9 s (the
// ring wins over the tree, 2*S / 1e9), all with no latency. So 1e6 bytes or
// 1e9 FLOPs are 1 ms.
//
//===----------------------------------------------------------------------===//

#include "../cost/TestProfile.h"
#include "../plan/PlanBuilder.h"

#include "runtime/sim/Simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

using namespace braid::rt;
using namespace braid::rt::test;
namespace plan = braid::plan;
using testing::HasSubstr;

namespace {

constexpr double kMs = 1e-3;

void expectMs(double seconds, double milliseconds) {
  EXPECT_NEAR(seconds, milliseconds * kMs, 1e-9 * milliseconds * kMs + 1e-15)
      << "expected " << milliseconds << " ms";
}

/// A plan over `mesh` with one f32 [250000] buffer pair per call of
/// `buffers()`, kernels whose time is set through their bytes or FLOPs, and
/// collectives over one buffer of 1e6 bytes.
class Schedule {
public:
  explicit Schedule(std::vector<std::string> axes = {"x"},
                    std::vector<int64_t> sizes = {2})
      : builder(std::move(axes), std::move(sizes)) {
    a = builder.buffer(DType::F32, {250000});
    b = builder.buffer(DType::F32, {250000});
    c = builder.buffer(DType::F32, {250000});
    m = builder.buffer(DType::F32, {2, 2});
    n = builder.buffer(DType::F32, {2, 2});
  }

  /// A memory-bound kernel on `stream` taking `ms` milliseconds.
  void memoryKernel(const std::string &stream, double ms,
                    const std::string &location = "") {
    plan::Kernel &kernel = builder.kernel(stream, "add", {a, a}, {b}, location);
    kernel.set_bytes(static_cast<int64_t>(ms * 1e6));
  }

  /// A matmul on `stream` taking `ms` milliseconds.
  void matmul(const std::string &stream, double ms) {
    plan::Kernel &kernel = builder.kernel(stream, "matmul", {m, m}, {n});
    kernel.set_flops(static_cast<int64_t>(ms * 1e9));
  }

  /// An all-reduce of 1e6 bytes over `axes` (1 ms over 2 ranks).
  void allReduce(const std::string &stream,
                 std::vector<std::string> axes = {"x"}) {
    builder.collective(stream, "all_reduce", std::move(axes), a, c)
        .set_reduction("sum");
  }

  SimResult run(const SimConfig &config) {
    return simulate(validatePlanForSimulation(builder.plan), config);
  }

  SimResult run() {
    SimConfig config;
    config.profile = roundNumberProfile();
    return run(config);
  }

  PlanBuilder builder;
  uint32_t a, b, c, m, n;
};

const SimOp &busyOp(const SimResult &result, size_t stream, size_t index) {
  size_t seen = 0;
  for (const SimOp &op : result.streams.at(stream).ops)
    if (op.busy() && seen++ == index)
      return op;
  throw std::out_of_range("no such busy op");
}

} // namespace

// Kernels on one stream run one after another: 1 + 2 + 3 ms.
TEST(SimulatorTest, OneStreamIsSequential) {
  Schedule schedule;
  schedule.memoryKernel("compute", 1);
  schedule.matmul("compute", 2);
  schedule.memoryKernel("compute", 3);
  SimResult result = schedule.run();
  expectMs(result.metrics.makespanSec, 6);
  expectMs(busyOp(result, 0, 1).startSec, 1);
  expectMs(busyOp(result, 0, 1).endSec, 3);
  expectMs(result.streams[0].busySec(), 6);
  expectMs(result.metrics.totalComputeSec, 6);
  EXPECT_EQ(result.metrics.totalCommunicationSec, 0);
  EXPECT_EQ(result.metrics.kernels, 3);
  EXPECT_DOUBLE_EQ(result.metrics.overlapEfficiency, 1);
  EXPECT_EQ(result.metrics.exposedCommunicationSec, 0);
}

// A copy (a training step's state update) moves its 1e6 bytes twice,
// whatever the compiler estimated: 2 ms.
TEST(SimulatorTest, CopyMovesItsBytesTwice) {
  Schedule schedule;
  schedule.builder.kernel("compute", "copy", {schedule.a}, {schedule.b})
      .set_bytes(5);
  SimResult result = schedule.run();
  expectMs(result.metrics.makespanSec, 2);
}

// An all-reduce independent of the compute overlaps it: makespan is
// max(3 ms compute, 1 ms communication), nothing is exposed.
TEST(SimulatorTest, IndependentCollectiveOverlaps) {
  Schedule schedule;
  schedule.memoryKernel("compute", 3);
  schedule.allReduce("comm");
  SimResult result = schedule.run();
  expectMs(busyOp(result, 1, 0).isolatedSec, 1);
  expectMs(result.metrics.makespanSec, 3);
  expectMs(result.metrics.totalCommunicationSec, 1);
  expectMs(result.metrics.boundSec, 3);
  EXPECT_NEAR(result.metrics.overlapEfficiency, 1, 1e-12);
  EXPECT_NEAR(result.metrics.exposedCommunicationSec, 0, 1e-15);
  EXPECT_NEAR(result.metrics.hiddenCommunicationFraction, 1, 1e-12);
}

// A dependent chain kernel -> all-reduce -> kernel through events takes the
// sum, 1 + 1 + 1.5 ms, and the whole all-reduce is exposed.
/// A 1 ms kernel, an all-reduce of its result, and a 1.5 ms kernel that
/// waits for the all-reduce (events between the streams).
Schedule dependentChain() {
  Schedule schedule;
  uint32_t produced = schedule.builder.event();
  uint32_t reduced = schedule.builder.event();
  schedule.memoryKernel("compute", 1);
  schedule.builder.record("compute", produced);
  schedule.builder.wait("compute", reduced);
  schedule.memoryKernel("compute", 1.5);
  schedule.builder.wait("comm", produced);
  schedule.allReduce("comm");
  schedule.builder.record("comm", reduced);
  return schedule;
}

TEST(SimulatorTest, DependentCollectiveAddsUp) {
  SimResult result = dependentChain().run();
  expectMs(result.metrics.makespanSec, 3.5);
  expectMs(busyOp(result, 1, 0).startSec, 1);
  expectMs(busyOp(result, 1, 0).endSec, 2);
  expectMs(busyOp(result, 0, 1).startSec, 2);
  expectMs(result.metrics.exposedCommunicationSec, 1);
  EXPECT_NEAR(result.metrics.hiddenCommunicationFraction, 0, 1e-12);
  // bound = max(2.5, 1) ms; efficiency 2.5 / 3.5.
  EXPECT_NEAR(result.metrics.overlapEfficiency, 2.5 / 3.5, 1e-12);
  // The compute stream waited from 1 ms to 2 ms.
  const SimOp &wait = result.streams[0].ops[2];
  ASSERT_EQ(wait.kind, SimOpKind::WaitEvent);
  expectMs(wait.startSec, 1);
  expectMs(wait.endSec, 2);
  expectMs(result.streams[0].busySec(), 2.5);
  expectMs(result.streams[1].busySec(), 1);
}

// Heterogeneous workers: rank 1's kernels take 1.5x as long. Every
// collective waits for it, so the dependent chain kernel -> all-reduce ->
// kernel takes 1.5 + 1 + 2.25 ms, and an all-reduce beside a long kernel
// stays hidden.
TEST(SimulatorTest, SlowestRankSetsTheCollectives) {
  Schedule chain = dependentChain();
  SimConfig config;
  config.profile = roundNumberProfile();
  config.rankSpeeds = {1, 1.5};
  SimResult result = chain.run(config);
  EXPECT_EQ(result.slowestRank, 1);
  EXPECT_DOUBLE_EQ(result.slowestFactor, 1.5);
  expectMs(result.metrics.makespanSec, 4.75);
  expectMs(result.metrics.totalCommunicationSec, 1);
  EXPECT_THAT(result.summary(),
              HasSubstr("heterogeneous ranks: rank 1's kernels take 1.5x as "
                        "long"));

  Schedule overlap;
  overlap.memoryKernel("compute", 3);
  overlap.allReduce("comm");
  result = overlap.run(config);
  expectMs(result.metrics.makespanSec, 4.5);
  EXPECT_NEAR(result.metrics.exposedCommunicationSec, 0, 1e-15);

  // All factors 1: the plain timeline, no line about heterogeneous ranks.
  config.rankSpeeds = {1, 1};
  result = overlap.run(config);
  expectMs(result.metrics.makespanSec, 3);
  EXPECT_EQ(result.slowestRank, -1);
  EXPECT_THAT(result.summary(), testing::Not(HasSubstr("heterogeneous")));

  config.rankSpeeds = {1};
  EXPECT_THROW(
      {
        try {
          overlap.run(config);
        } catch (const std::invalid_argument &error) {
          EXPECT_THAT(error.what(), HasSubstr("--rank-speeds gives 1 factors "
                                              "for a mesh of 2 ranks"));
          throw;
        }
      },
      std::invalid_argument);
}

// With contention both sides slow while they overlap: a 10 ms matmul and a
// 10 ms all-reduce (1e7 bytes) with matrix_slowdown 1.25 and comm_slowdown
// 1.1. The all-reduce runs at 1/1.1 throughout and ends at 11 ms; by then the
// matmul has done 11/1.25 = 8.8 ms of its work, and does the last 1.2 ms
// alone: it ends at 12.2 ms.
TEST(SimulatorTest, ContentionSlowsBothSides) {
  Schedule schedule;
  uint32_t big = schedule.builder.buffer(DType::F32, {2500000});
  uint32_t bigOut = schedule.builder.buffer(DType::F32, {2500000});
  schedule.matmul("compute", 10);
  schedule.builder.collective("comm", "all_reduce", {"x"}, big, bigOut)
      .set_reduction("sum");
  SimConfig config;
  config.profile = roundNumberProfile();
  config.profile.contention = {10, 1.25, 1.5, 1.1};
  SimResult result = schedule.run(config);
  const SimOp &matmul = busyOp(result, 0, 0);
  const SimOp &allReduce = busyOp(result, 1, 0);
  expectMs(allReduce.isolatedSec, 10);
  expectMs(allReduce.endSec, 11);
  expectMs(matmul.endSec, 12.2);
  EXPECT_TRUE(matmul.slowed());
  EXPECT_TRUE(allReduce.slowed());
  expectMs(result.metrics.makespanSec, 12.2);
  // The bound uses isolated times: max(10, 10) ms.
  EXPECT_NEAR(result.metrics.overlapEfficiency, 10 / 12.2, 1e-12);

  // A memory-bound kernel slows by memory_slowdown instead: 10 ms at 1/1.5
  // until 11 ms (7.333 ms done), then 2.667 ms alone: 13.667 ms.
  Schedule memory;
  uint32_t big2 = memory.builder.buffer(DType::F32, {2500000});
  uint32_t big2Out = memory.builder.buffer(DType::F32, {2500000});
  memory.memoryKernel("compute", 10);
  memory.builder.collective("comm", "all_reduce", {"x"}, big2, big2Out)
      .set_reduction("sum");
  SimResult memoryResult = memory.run(config);
  expectMs(busyOp(memoryResult, 0, 0).endSec, 11 + (10 - 11 / 1.5));

  // Switched off, the same schedule overlaps perfectly.
  config.contention = false;
  SimResult free = schedule.run(config);
  expectMs(free.metrics.makespanSec, 10);
  EXPECT_FALSE(busyOp(free, 0, 0).slowed());
}

// Two kernels on two compute streams share the GPU (each at half rate):
// 2 ms and 3 ms of work end at 4 ms and 5 ms. Two collectives on the same
// link share it the same way.
TEST(SimulatorTest, ConcurrentWorkSharesTheGpuAndTheLink) {
  Schedule schedule;
  schedule.memoryKernel("s1", 2);
  schedule.memoryKernel("s2", 3);
  SimResult result = schedule.run();
  expectMs(busyOp(result, 0, 0).endSec, 4);
  expectMs(busyOp(result, 1, 0).endSec, 5);
  expectMs(result.metrics.makespanSec, 5);

  Schedule links;
  links.allReduce("c1");
  links.allReduce("c2");
  SimResult linkResult = links.run();
  expectMs(busyOp(linkResult, 0, 0).endSec, 2);
  expectMs(busyOp(linkResult, 1, 0).endSec, 2);
}

// Mesh (dp = 2, tp = 2) on nodes of 2 GPUs: "tp" stays in a node, "dp"
// spans two. With a slower inter-node link (0.25 GB/s, 10 us) the dp
// all-reduce takes 2*1*10us + 1e6 / 0.25e9 = 4.02 ms; the tp one 1 ms. The
// two use different links, so on two streams they do not share.
TEST(SimulatorTest, GroupsAcrossNodesUseTheSlowerLink) {
  Schedule schedule({"dp", "tp"}, {2, 2});
  schedule.allReduce("tp_comm", {"tp"});
  schedule.allReduce("dp_comm", {"dp"});
  SimConfig config;
  config.profile = roundNumberProfile();
  config.profile.node.inter = {"infiniband", 0.25e9, 10e-6, 1};
  SimResult result = schedule.run(config);
  EXPECT_EQ(result.nodes, 2);
  EXPECT_EQ(result.worldSize, 4);
  const SimOp &tp = busyOp(result, 0, 0);
  const SimOp &dp = busyOp(result, 1, 0);
  EXPECT_FALSE(tp.interNode);
  EXPECT_TRUE(dp.interNode);
  EXPECT_EQ(tp.axes, "tp");
  EXPECT_EQ(dp.groupSize, 2);
  expectMs(tp.endSec, 1);
  expectMs(dp.endSec, 4.02);

  // The cluster must hold the mesh.
  config.nodes = 1;
  try {
    schedule.run(config);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument &error) {
    EXPECT_THAT(error.what(), HasSubstr("4 ranks but 1 node(s)"));
  }
  // More nodes than needed is fine.
  config.nodes = 3;
  EXPECT_EQ(schedule.run(config).nodes, 3);
}

// Views (no FLOPs, no bytes) take no time; events recorded before a wait is
// reached let it pass at once.
TEST(SimulatorTest, FreeKernelsAndEarlyEvents) {
  Schedule schedule;
  uint32_t event = schedule.builder.event();
  schedule.builder.kernel("compute", "add", {schedule.a, schedule.a},
                          {schedule.b});
  schedule.builder.record("compute", event);
  schedule.memoryKernel("other", 2);
  schedule.builder.wait("other", event);
  schedule.memoryKernel("other", 1);
  SimResult result = schedule.run();
  EXPECT_EQ(busyOp(result, 0, 0).durationSec(), 0);
  expectMs(result.metrics.makespanSec, 3);
  const SimOp &wait = result.streams[1].ops[1];
  EXPECT_EQ(wait.durationSec(), 0);
}

// The Chrome trace (the executor's writer) holds one complete event per
// instruction at the simulated times, in microseconds.
TEST(SimulatorTest, ChromeTrace) {
  Schedule schedule;
  schedule.memoryKernel("compute", 2, "loc(\"x.mlir\":3:1)");
  schedule.allReduce("comm");
  SimResult result = schedule.run();
  std::ostringstream trace;
  result.writeChromeTrace(trace);
  nlohmann::json json = nlohmann::json::parse(trace.str());
  int complete = 0;
  for (const auto &event : json["traceEvents"]) {
    if (event["ph"] != "X")
      continue;
    ++complete;
    if (event["name"] == "add") {
      EXPECT_DOUBLE_EQ(event["ts"].get<double>(), 0);
      EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 2000);
      EXPECT_EQ(event["args"]["location"], "loc(\"x.mlir\":3:1)");
    } else {
      EXPECT_EQ(event["name"], "all_reduce");
      EXPECT_DOUBLE_EQ(event["dur"].get<double>(), 1000);
    }
  }
  EXPECT_EQ(complete, 2);
  RunProfile profile = result.toRunProfile();
  EXPECT_EQ(profile.totalNs, 2000000);
  EXPECT_EQ(profile.streams[1].busyNs(), 1000000);
}

// The summary reports the numbers and the collectives per group.
TEST(SimulatorTest, Summary) {
  Schedule schedule;
  schedule.memoryKernel("compute", 3);
  schedule.allReduce("comm");
  std::string summary = schedule.run().summary();
  EXPECT_THAT(summary, HasSubstr("simulated on round-numbers: 1 node(s) x 2 "
                                 "GPUs; mesh x=2 = 2 ranks"));
  EXPECT_THAT(summary, HasSubstr("makespan"));
  EXPECT_THAT(summary, HasSubstr("3.000 ms"));
  EXPECT_THAT(summary, HasSubstr("overlap efficiency (bound/makespan) 100.0%"));
  EXPECT_THAT(summary, HasSubstr("all_reduce over [x] (2 ranks, in a node)"));
  EXPECT_THAT(summary, HasSubstr("stream 'comm' busy"));
}

// Simulation needs no weights file: weights only fill buffers at load.
TEST(SimulatorTest, ValidatesWithoutWeights) {
  Schedule schedule;
  uint32_t weight = schedule.builder.buffer(DType::F32, {4});
  schedule.builder.weight("w", weight, {4});
  schedule.memoryKernel("compute", 1);
  EXPECT_NO_THROW(validatePlanForSimulation(schedule.builder.plan));
  // Still a validated plan: a bad collective axis is an error.
  schedule.allReduce("comm", {"nope"});
  EXPECT_THROW(validatePlanForSimulation(schedule.builder.plan), PlanError);
  EXPECT_THROW(loadPlanForSimulation("/nonexistent/plan.bplan"), PlanError);
}

namespace {

/// ACCO's round in small: the compute stream runs a mandatory 0.6 ms
/// kernel, then three optional groups of one 0.6 ms kernel each, skipped
/// once the round's all-reduce (1 ms, issued after the first kernel) is
/// done. `zeroFirst`: the first group's kernel zero-fills its output (1e6
/// bytes, 1 ms) when skipped.
Schedule optionalRound(bool zeroFirst = false) {
  Schedule schedule;
  PlanBuilder &builder = schedule.builder;
  uint32_t produced = builder.event();
  uint32_t reduced = builder.event();
  schedule.memoryKernel("compute", 0.6);
  builder.record("compute", produced);
  for (uint32_t group = 1; group <= 3; ++group) {
    schedule.memoryKernel("compute", 0.6);
    plan::Instruction &last = *builder.plan.mutable_streams(0)
                                   ->mutable_instructions()
                                   ->rbegin();
    last.set_optional_group(group);
    last.set_zero_when_skipped(zeroFirst && group == 1);
    builder.plan.add_optional_groups()->add_until_events(reduced);
  }
  builder.wait("comm", produced);
  schedule.allReduce("comm");
  builder.record("comm", reduced);
  return schedule;
}

SimConfig noContention() {
  SimConfig config;
  config.profile = roundNumberProfile();
  config.contention = false;
  return config;
}

} // namespace

// Dynamic: a group runs when its stream reaches it while the round is in
// flight. The all-reduce runs 0.6-1.6 ms; the groups are reached at 0.6
// and 1.2 ms (run) and at 1.8 ms (skipped). One rank stands for both.
TEST(SimulatorTest, OptionalGroupsRunWhileTheRoundIsInFlight) {
  SimResult result = optionalRound().run(noContention());
  EXPECT_FALSE(result.everyRank);
  EXPECT_EQ(result.optionalGroups, 3);
  ASSERT_EQ(result.ranks.size(), 1u);
  EXPECT_EQ(result.ranks[0].groupsRun, 2);
  expectMs(result.metrics.makespanSec, 1.8);
  // The skipped kernel neither runs nor counts.
  EXPECT_EQ(result.metrics.kernels, 3);
  expectMs(result.metrics.totalComputeSec, 1.8);
  EXPECT_THAT(result.summary(),
              HasSubstr("optional groups run                2 of 3 on every "
                        "rank (dynamic)"));

  // Fixed policies: all three, or none.
  SimConfig config = noContention();
  config.optionalPolicies = {OptionalPolicy::All};
  result = optionalRound().run(config);
  EXPECT_EQ(result.ranks[0].groupsRun, 3);
  expectMs(result.metrics.makespanSec, 2.4);
  config.optionalPolicies = {OptionalPolicy::None};
  result = optionalRound().run(config);
  EXPECT_EQ(result.ranks[0].groupsRun, 0);
  expectMs(result.metrics.makespanSec, 1.6);
}

// Rank 1's kernels take 1.5x as long (0.9 ms): every rank is simulated.
// The all-reduce starts when rank 1 reaches it (0.9 ms) and ends at 1.9 ms
// on both. Rank 0 reaches its groups at 0.6, 1.2 and 1.8 ms, all before
// that, and runs three (ends at 2.4 ms); rank 1 at 0.9 and 1.8 ms (run)
// and 2.7 ms (skipped). The fast rank does more work in the slow one's time.
TEST(SimulatorTest, FastRanksRunMoreOptionalGroups) {
  SimConfig config = noContention();
  config.rankSpeeds = {1, 1.5};
  SimResult result = optionalRound().run(config);
  EXPECT_TRUE(result.everyRank);
  EXPECT_EQ(result.shownRank, 1);
  ASSERT_EQ(result.ranks.size(), 2u);
  EXPECT_EQ(result.ranks[0].groupsRun, 3);
  EXPECT_EQ(result.ranks[1].groupsRun, 2);
  expectMs(result.ranks[0].finishSec, 2.4);
  expectMs(result.ranks[1].finishSec, 2.7);
  expectMs(result.ranks[0].kernelSec, 2.4);
  expectMs(result.ranks[1].kernelSec, 2.7);
  expectMs(result.metrics.makespanSec, 2.7);
  // The timeline shown is rank 1's: its all-reduce 0.9-1.9 ms.
  expectMs(busyOp(result, 1, 0).startSec, 0.9);
  expectMs(busyOp(result, 1, 0).endSec, 1.9);
  std::string summary = result.summary();
  EXPECT_THAT(summary, HasSubstr("every rank simulated (the plan has optional "
                                 "groups), the timeline below is rank 1's"));
  EXPECT_THAT(summary, HasSubstr("3 of 3 on rank 0; 2 of 3 on rank 1 "
                                 "(dynamic)"));
  EXPECT_THAT(summary, HasSubstr("ranks finish between               2.400 ms "
                                 "and 2.700 ms"));

  // Without optional groups the slowest rank stands for all, as before.
  Schedule plain;
  plain.memoryKernel("compute", 2);
  plain.allReduce("comm");
  result = plain.run(config);
  EXPECT_FALSE(result.everyRank);
  EXPECT_EQ(result.ranks.size(), 1u);
  expectMs(result.metrics.makespanSec, 3);
}

// Policies per rank (braid-run --optional-groups all,none) differ at equal
// speeds: every rank is simulated. Rank 1 skips every group; its first
// group's kernel still zero-fills its output (1e6 bytes: 1 ms), the others
// cost nothing. The all-reduce still waits for both and ends at 1.6 ms.
TEST(SimulatorTest, PoliciesPerRankAndZeroFills) {
  SimConfig config = noContention();
  config.optionalPolicies = {OptionalPolicy::All, OptionalPolicy::None};
  SimResult result = optionalRound(/*zeroFirst=*/true).run(config);
  EXPECT_TRUE(result.everyRank);
  ASSERT_EQ(result.ranks.size(), 2u);
  EXPECT_EQ(result.ranks[0].groupsRun, 3);
  EXPECT_EQ(result.ranks[1].groupsRun, 0);
  EXPECT_EQ(result.ranks[1].policy, OptionalPolicy::None);
  expectMs(result.ranks[0].finishSec, 2.4);
  expectMs(result.ranks[1].kernelSec, 1.6);
  expectMs(result.ranks[1].finishSec, 1.6);
  expectMs(result.metrics.makespanSec, 2.4);
  EXPECT_THAT(result.summary(),
              HasSubstr("3 of 3 on rank 0; 0 of 3 on rank 1 (policies per "
                        "rank)"));
}
