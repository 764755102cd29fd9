//===- PlanStepsTest.cpp - issue order of a plan's streams ----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/PlanSteps.h"

#include <gtest/gtest.h>

using namespace braid::rt;

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

} // namespace
