//===- SimCommandTest.cpp - braid-run --backend sim -----------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The flag handling on its own, then the braid-run executable end to end on
// a plan built in a temporary folder.
//
//===----------------------------------------------------------------------===//

#include "../plan/PlanBuilder.h"
#include "../exec/BraidRunProcess.h"

#include "runtime/sim/SimCommand.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

using namespace braid::rt;
using namespace braid::rt::test;
using testing::ElementsAre;
using testing::HasSubstr;

namespace {

/// Runs takeSimFlags on `args` (argv[0] is added) and returns the flags and
/// what is left of argv.
std::pair<SimFlags, std::vector<std::string>>
take(std::vector<std::string> args) {
  args.insert(args.begin(), "braid-run");
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  SimFlags flags = takeSimFlags(argc, argv.data());
  std::vector<std::string> rest(argv.begin() + 1, argv.begin() + argc);
  EXPECT_EQ(argv[argc], nullptr);
  return {flags, rest};
}

std::string takeError(std::vector<std::string> args) {
  try {
    take(std::move(args));
  } catch (const std::invalid_argument &error) {
    return error.what();
  }
  return "no error";
}

using Result = braid::rt::test::BraidRunResult;
using braid::rt::test::braidRun;

std::string readFile(const std::string &path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

} // namespace

// The simulator's flags come out of argv; the rest stays in order.
TEST(SimCommandTest, TakesItsFlags) {
  auto [flags, rest] =
      take({"plan.bplan", "--backend", "sim", "--hw=dgx-h100", "--trace",
            "t.json", "--nodes", "8", "--world=64", "--svg", "t.svg"});
  EXPECT_EQ(flags.backend, "sim");
  EXPECT_EQ(flags.hw, "dgx-h100");
  EXPECT_EQ(flags.nodes, 8);
  EXPECT_EQ(flags.world, 64);
  EXPECT_EQ(flags.svg, "t.svg");
  EXPECT_THAT(rest, ElementsAre("plan.bplan", "--trace", "t.json"));

  auto [cpu, cpuRest] = take({"plan.bplan", "--repeat", "2"});
  EXPECT_EQ(cpu.backend, "cpu");
  EXPECT_FALSE(cpu.anySimOnlyFlag());
  EXPECT_THAT(cpuRest, ElementsAre("plan.bplan", "--repeat", "2"));
  EXPECT_EQ(take({"p", "--backend=cpu"}).first.backend, "cpu");
}

TEST(SimCommandTest, RejectsBadFlags) {
  EXPECT_THAT(takeError({"p", "--backend", "gpu"}),
              HasSubstr("--backend must be cpu, cuda or sim, got 'gpu'"));
  EXPECT_THAT(takeError({"p", "--hw", "dgx-h100"}),
              HasSubstr("need --backend sim"));
  EXPECT_THAT(takeError({"p", "--backend", "sim"}),
              HasSubstr("--backend sim needs --hw PROFILE"));
  EXPECT_THAT(takeError({"p", "--backend", "sim", "--hw", "x", "--nodes", "0"}),
              HasSubstr("--nodes needs a whole number from 1"));
  EXPECT_THAT(
      takeError({"p", "--backend", "sim", "--hw", "x", "--world", "4x"}),
      HasSubstr("--world needs a whole number"));
  EXPECT_THAT(takeError({"p", "--backend", "sim", "--hw"}),
              HasSubstr("--hw needs a value"));
  EXPECT_THAT(takeError({"p", "--backend", "sim", "--hw", "x", "--rank-speeds",
                         "1,0"}),
              HasSubstr("--rank-speeds needs positive numbers separated by "
                        "commas"));
  EXPECT_THAT(takeError({"p", "--backend", "sim", "--hw", "x", "--rank-speeds",
                         "1,,2"}),
              HasSubstr("--rank-speeds needs positive numbers"));
  EXPECT_THAT(takeError({"p", "--rank-speeds", "1,2"}),
              HasSubstr("need --backend sim"));
  auto [speeds, rest] = take({"p", "--backend", "sim", "--hw", "x",
                              "--rank-speeds=1,1.5,2"});
  EXPECT_THAT(speeds.rankSpeeds, ElementsAre(1, 1.5, 2));
}

// braid-run simulates a two-stream plan over a 64-rank mesh on DGX-H100
// nodes and writes the summary, the Chrome trace and the SVG.
TEST(SimCommandTest, BraidRunSimulates) {
  char folder[] = "/tmp/braid-sim-test-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  std::string dir = folder;

  PlanBuilder builder({"dp", "tp"}, {8, 8});
  uint32_t x = builder.buffer(DType::BF16, {1024, 1024});
  uint32_t w = builder.buffer(DType::BF16, {1024, 1024});
  uint32_t y = builder.buffer(DType::BF16, {1024, 1024});
  uint32_t r = builder.buffer(DType::BF16, {1024, 1024});
  uint32_t g = builder.buffer(DType::BF16, {1024, 1024});
  builder.weight("w", w, {1024, 1024});
  builder.input("x", x);
  uint32_t done = builder.event();
  builder.kernel("compute", "matmul", {x, w}, {y}, "loc(\"m.mlir\":1:1)")
      .set_flops(2ll * 1024 * 1024 * 1024);
  builder.record("compute", done);
  builder.wait("tp_comm", done);
  builder.collective("tp_comm", "all_reduce", {"tp"}, y, r)
      .set_reduction("sum");
  builder.collective("dp_comm", "all_reduce", {"dp"}, w, g)
      .set_reduction("sum");
  builder.output("r", r);
  std::ofstream(dir + "/plan.bplan", std::ios::binary) << builder.serialize();

  Result result =
      braidRun(dir + "/plan.bplan --backend sim --hw dgx-h100 --trace " + dir +
               "/trace.json --svg " + dir + "/timeline.svg");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("simulated on dgx-h100: 8 node(s) x 8 GPUs; mesh "
                        "dp=8 x tp=8 = 64 ranks"));
  EXPECT_THAT(result.output, HasSubstr("makespan"));
  EXPECT_THAT(result.output, HasSubstr("peak memory per rank (arena)"));
  EXPECT_THAT(result.output, HasSubstr("of a GPU's 80 GB)"));
  EXPECT_THAT(result.output, HasSubstr("all_reduce over [dp] (8 ranks, "
                                       "across nodes)"));
  EXPECT_THAT(result.output, HasSubstr("all_reduce over [tp] (8 ranks, in a "
                                       "node)"));
  EXPECT_THAT(result.output, HasSubstr("of wall time"));
  nlohmann::json trace = nlohmann::json::parse(readFile(dir + "/trace.json"));
  EXPECT_GE(trace["traceEvents"].size(), 5u);
  std::string svg = readFile(dir + "/timeline.svg");
  EXPECT_THAT(svg, HasSubstr("plan.bplan on dgx-h100"));
  EXPECT_THAT(svg, HasSubstr(">dp_comm</text>"));

  // --world must match the mesh; the cluster must hold it.
  result =
      braidRun(dir + "/plan.bplan --backend sim --hw dgx-h100 --world 128");
  EXPECT_EQ(result.status, 2);
  EXPECT_THAT(result.output, HasSubstr("--world 128 differs from the plan's "
                                       "mesh of 64 ranks"));
  result = braidRun(dir + "/plan.bplan --backend sim --hw dgx-h100 --world 64 "
                          "--nodes 4");
  EXPECT_EQ(result.status, 2);
  EXPECT_THAT(result.output, HasSubstr("hold only 32 GPUs"));
  result = braidRun(dir + "/plan.bplan --backend sim --hw no-such-node");
  EXPECT_EQ(result.status, 2);
  EXPECT_THAT(result.output, HasSubstr("unknown hardware profile "
                                       "'no-such-node' (known: a800-node"));
  result = braidRun(dir + "/plan.bplan --hw dgx-h100");
  EXPECT_EQ(result.status, 2);
  EXPECT_THAT(result.output, HasSubstr("need --backend sim"));
  result = braidRun("--help");
  EXPECT_EQ(result.status, 0);
  EXPECT_THAT(result.output, HasSubstr("--backend B"));

  for (const char *file : {"/plan.bplan", "/trace.json", "/timeline.svg"})
    std::remove((dir + file).c_str());
  ::rmdir(folder);
}

// A training plan simulates one step and says so.
TEST(SimCommandTest, TrainingPlanIsOneStep) {
  char folder[] = "/tmp/braid-sim-train-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  std::string dir = folder;
  PlanBuilder builder({"dp"}, {2});
  uint32_t tokens = builder.buffer(DType::I32, {2, 3});
  uint32_t labels = builder.buffer(DType::I32, {2, 3});
  uint32_t loss = builder.buffer(DType::F32, {});
  uint32_t copied = builder.buffer(DType::F32, {});
  builder.input("tokens", tokens);
  builder.input("labels", labels);
  builder.output("loss", loss);
  builder.kernel("compute", "copy", {copied}, {loss});
  braid::plan::Training *training = builder.plan.mutable_training();
  training->set_tokens_input("tokens");
  training->set_labels_input("labels");
  training->set_loss_output("loss");
  training->set_batch(2);
  training->set_sequence(3);
  std::ofstream(dir + "/train.bplan", std::ios::binary)
      << builder.serialize();
  Result result = braidRun(dir + "/train.bplan --backend sim --hw dgx-h100");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("training plan: one training step simulated (batch "
                        "2 x sequence 3 = 6 tokens)"));
  std::remove((dir + "/train.bplan").c_str());
  ::rmdir(dir.c_str());
}
