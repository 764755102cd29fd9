//===- PlanStepsTest.cpp - decoding a plan's steps, their issue order ----===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "../plan/PlanBuilder.h"

#include "runtime/exec/PlanSteps.h"
#include "runtime/kernels/CpuKernels.h"

#include <gtest/gtest.h>

using namespace braid::rt;
using namespace braid::rt::test;
namespace plan = braid::plan;

namespace {

PlanStep kernel() { return PlanStep(); }
PlanStep record(uint32_t event) {
  PlanStep step;
  step.kind = StepKind::Record;
  step.event = event;
  return step;
}
PlanStep wait(uint32_t event) {
  PlanStep step;
  step.kind = StepKind::Wait;
  step.event = event;
  return step;
}

using Order = std::vector<std::pair<size_t, size_t>>;

TEST(PlanStepsTest, IssueOrderPutsEveryWaitAfterItsRecord) {
  // compute: k, record 0, wait 1, k     comm: wait 0, k, record 1
  std::vector<std::vector<PlanStep>> steps = {
      {kernel(), record(0), wait(1), kernel()},
      {wait(0), kernel(), record(1)}};
  IssueOrder order = issueOrder(steps, 2);
  EXPECT_FALSE(order.blocked);
  EXPECT_EQ(order.steps,
            (Order{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {1, 2}, {0, 2}, {0, 3}}));
}

TEST(PlanStepsTest, IssueOrderKeepsStreamOrderAndVisitsEveryStep) {
  // A wait on the other stream's later record forces several round trips.
  std::vector<std::vector<PlanStep>> steps = {
      {record(0), wait(1), record(2), wait(3), kernel()},
      {wait(0), record(1), wait(2), record(3)},
      {kernel(), kernel()}};
  IssueOrder order = issueOrder(steps, 4);
  ASSERT_FALSE(order.blocked);
  ASSERT_EQ(order.steps.size(), 11u);
  std::vector<size_t> next(3, 0);
  std::vector<bool> recorded(4, false);
  for (auto [stream, index] : order.steps) {
    EXPECT_EQ(index, next[stream]++) << "stream " << stream;
    const PlanStep &step = steps[stream][index];
    if (step.kind == StepKind::Wait) {
      EXPECT_TRUE(recorded[step.event]) << "event " << step.event;
    }
    if (step.kind == StepKind::Record)
      recorded[step.event] = true;
  }
}

TEST(PlanStepsTest, IssueOrderReportsTheFirstStepOfADeadlock) {
  // Each stream waits for what the other records only after its wait.
  std::vector<std::vector<PlanStep>> steps = {{kernel(), wait(0), record(1)},
                                              {wait(1), record(0)}};
  IssueOrder order = issueOrder(steps, 2);
  ASSERT_TRUE(order.blocked);
  EXPECT_EQ(*order.blocked, std::make_pair(size_t(0), size_t(1)));
  EXPECT_EQ(order.steps, (Order{{0, 0}}));
  // An event number the plan does not declare never becomes ready.
  std::vector<std::vector<PlanStep>> unknown = {{wait(7)}};
  EXPECT_TRUE(issueOrder(unknown, 2).blocked);
}

TEST(PlanStepsTest, DecodesEveryKindWithoutMemory) {
  // What the simulator reads: kinds, names, locations, cost estimates,
  // views without memory, collectives with their group, events.
  PlanBuilder builder({"dp", "tp"}, {2, 3});
  uint32_t x = builder.buffer(DType::BF16, {6, 4});
  uint32_t y = builder.buffer(DType::BF16, {6, 4});
  uint32_t z = builder.buffer(DType::BF16, {18, 4});
  plan::Kernel &add = builder.kernel("compute", "add", {x, x}, {y}, "loc(a)");
  add.set_flops(24);
  add.set_bytes(144);
  uint32_t event = builder.event();
  builder.record("compute", event);
  builder.wait("comm", event);
  builder.collective("comm", "all_gather", {"tp"}, y, z).set_dim(0);
  LoadOptions options;
  options.kernels = &cpuKernels();
  LoadedPlan plan = validatePlan(builder.plan, options);

  RunProfile profile;
  std::vector<std::vector<PlanStep>> steps = resolvePlanSteps(
      plan, plan.mesh, /*rank=*/4,
      [&plan](uint32_t id) { return bufferLayout(plan, id); }, profile);
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_EQ(steps[0].size(), 2u);
  ASSERT_EQ(steps[1].size(), 2u);
  EXPECT_EQ(profile.streams[0].name, "compute");
  EXPECT_EQ(profile.streams[1].name, "comm");

  const PlanStep &kernel = steps[0][0];
  EXPECT_EQ(kernel.kind, StepKind::Kernel);
  EXPECT_EQ(kernel.name, "add");
  EXPECT_EQ(*kernel.location, "loc(a)");
  EXPECT_EQ(kernel.flops, 24);
  EXPECT_EQ(kernel.bytes, 144);
  ASSERT_EQ(kernel.args.inputs.size(), 2u);
  EXPECT_EQ(kernel.args.inputs[0].dtype, DType::BF16);
  EXPECT_EQ(kernel.args.inputs[0].data, nullptr);
  EXPECT_EQ(kernel.args.outputs[0].shape, (std::vector<int64_t>{6, 4}));

  EXPECT_EQ(steps[0][1].kind, StepKind::Record);
  EXPECT_EQ(steps[0][1].event, event);
  EXPECT_EQ(steps[1][0].kind, StepKind::Wait);
  EXPECT_EQ(steps[1][0].event, event);

  const PlanStep &gather = steps[1][1];
  EXPECT_EQ(gather.kind, StepKind::Collective);
  EXPECT_EQ(gather.name, "all_gather");
  EXPECT_EQ(gather.collective, CollectiveKind::AllGather);
  EXPECT_EQ(gather.axes, (std::vector<std::string>{"tp"}));
  EXPECT_EQ(gather.groupSize, 3);
  EXPECT_EQ(gather.in.numBytes(), 48u);
  EXPECT_EQ(gather.out.numBytes(), 144u);
  EXPECT_EQ(gather.out.data, nullptr);
}

} // namespace
