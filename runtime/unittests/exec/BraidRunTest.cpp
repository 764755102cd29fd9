//===- BraidRunTest.cpp - braid-run end to end ----------------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Builds a plan, its weights, inputs and reference outputs in a temporary
// folder, then runs the braid-run executable on them.
//
//===----------------------------------------------------------------------===//

#include "../plan/PlanBuilder.h"
#include "BraidRunProcess.h"

#include "runtime/kernels/ElementIO.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/tools/TensorFiles.h"
#include "runtime/weights/Safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace braid::rt;
namespace plan = braid::plan;
using namespace braid::rt::test;
using testing::HasSubstr;
using testing::Not;

namespace {

using Result = braid::rt::test::BraidRunResult;
using braid::rt::test::braidRun;

bool exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
}

HostTensor hostOf(const ref::Tensor &tensor, const std::string &name) {
  HostTensor host;
  host.name = name;
  host.dtype = tensor.dtype;
  host.shape = tensor.shape;
  host.data.resize(tensor.numElements() * byteSize(tensor.dtype));
  writeTensor(tensor, tensor.dtype, tensor.shape, host.data.data());
  return host;
}

ref::Tensor randomTensor(std::vector<int64_t> shape, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  std::vector<double> values(count);
  for (double &value : values)
    value = uniform(random);
  return ref::Tensor::ofFloats(DType::F32, std::move(shape), values);
}

/// probs = softmax(x * w + bias) on two streams, with w from the weights
/// file beside the plan.
class BraidRunTest : public testing::Test {
protected:
  void SetUp() override {
    dir = testing::TempDir() + "/braid-run-test-" + std::to_string(::getpid()) +
          "-" + testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(
        std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "/inputs' '" +
                     dir + "/expected' '" + dir + "/outputs'")
                        .c_str()),
        0);
    PlanBuilder p({"x"}, {1});
    uint32_t x = p.buffer(DType::F32, {2, 4});
    uint32_t w = p.buffer(DType::F32, {4, 3});
    uint32_t bias = p.buffer(DType::F32, {3});
    uint32_t y = p.buffer(DType::F32, {2, 3});
    uint32_t z = p.buffer(DType::F32, {2, 3});
    uint32_t r = p.buffer(DType::F32, {2, 3});
    uint32_t probs = p.buffer(DType::F32, {2, 3});
    p.input("x", x);
    p.input("bias", bias);
    p.weight("w", w, {4, 3});
    p.output("probs", probs);
    p.kernel("compute", "matmul", {x, w}, {y});
    p.kernel("compute", "add", {y, bias}, {z});
    uint32_t ready = p.event(), reduced = p.event();
    p.record("compute", ready);
    p.wait("comm", ready);
    p.collective("comm", "all_reduce", {"x"}, z, r).set_reduction("sum");
    p.record("comm", reduced);
    p.wait("compute", reduced);
    setInt(p.kernel("compute", "softmax", {r}, {probs}), "dim", 1);
    plan = dir + "/model.bplan";
    writeBytes(plan, p.serialize());

    ref::Tensor xValue = randomTensor({2, 4}, 1);
    ref::Tensor wValue = randomTensor({4, 3}, 2);
    ref::Tensor biasValue = randomTensor({3}, 3);
    std::vector<uint8_t> weightBytes(48);
    writeTensor(wValue, DType::F32, {4, 3}, weightBytes.data());
    std::vector<uint8_t> file =
        encodeSafetensors({{"w", DType::F32, {4, 3}, weightBytes}});
    writeBytes(dir + "/model.safetensors",
               std::string(file.begin(), file.end()));
    writeTensorProto(dir + "/inputs/input_0.pb", hostOf(xValue, "x"));
    writeTensorProto(dir + "/inputs/input_1.pb", hostOf(biasValue, "bias"));
    writeNpy(dir + "/bias.npy", hostOf(biasValue, "bias"));
    expected = ref::softmax(
        ref::binary(ref::BinaryKind::Add,
                    ref::matmul(xValue, wValue, false, false), biasValue),
        1);
    writeTensorProto(dir + "/expected/output_0.pb", hostOf(expected, "probs"));
  }

  void TearDown() override {
    (void)std::system(("rm -rf '" + dir + "'").c_str());
  }

  std::string dir, plan;
  ref::Tensor expected;
};

TEST_F(BraidRunTest, RunsAndMatchesExpectedOutputs) {
  Result result = braidRun(plan + " --inputs " + dir + "/inputs --expected " +
                           dir + "/expected --outputs " + dir +
                           "/outputs --trace " + dir + "/trace.json");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("output 0 'probs' f32 [2, 3]: max abs err"));
  EXPECT_THAT(result.output, HasSubstr("PASS"));
  EXPECT_THAT(result.output, HasSubstr("stream 'compute': busy"));
  EXPECT_THAT(result.output, HasSubstr("stream 'comm': busy"));

  HostTensor written = readTensorProto(dir + "/outputs/output_0.pb");
  EXPECT_EQ(written.name, "probs");
  ref::Tensor actual =
      readTensor(written.dtype, written.shape, written.data.data());
  for (size_t k = 0; k < expected.f.size(); ++k)
    EXPECT_NEAR(actual.f[k], expected.f[k], 1e-6);

  std::ifstream trace(dir + "/trace.json");
  nlohmann::json json = nlohmann::json::parse(trace);
  EXPECT_GT(json["traceEvents"].size(), 8u);
}

TEST_F(BraidRunTest, NamedNpyInputsAndRepeats) {
  Result result =
      braidRun(plan + " --inputs " + dir + "/inputs --input bias=" + dir +
               "/bias.npy --expected=" + dir + "/expected --repeat 3");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("totals over 3 runs"));
}

TEST_F(BraidRunTest, DifferentExpectedOutputsFail) {
  ref::Tensor wrong =
      ref::binary(ref::BinaryKind::Add, expected,
                  ref::Tensor::ofFloats(DType::F32, {}, {1e-3}));
  writeTensorProto(dir + "/expected/output_0.pb", hostOf(wrong, "probs"));
  Result result = braidRun(plan + " --inputs " + dir + "/inputs --expected " +
                           dir + "/expected");
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("6 of 6 elements outside"));
  EXPECT_THAT(result.output, HasSubstr("FAIL"));
  // A looser tolerance accepts it.
  result = braidRun(plan + " --inputs " + dir + "/inputs --expected " + dir +
                    "/expected --atol 2e-3");
  EXPECT_EQ(result.status, 0) << result.output;
}

TEST_F(BraidRunTest, ErrorsAreOneMessageAndWriteNothing) {
  Result missing = braidRun(plan + " --outputs " + dir + "/outputs");
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.output,
              HasSubstr("braid-run: error: input 0 'x' (f32 [2, 4]) has no "
                        "data: give --inputs DIR or --input x=FILE"));

  Result shape = braidRun(plan + " --inputs " + dir +
                          "/inputs --input x=" + dir + "/bias.npy");
  EXPECT_EQ(shape.status, 2);
  EXPECT_THAT(shape.output, HasSubstr("must be f32 [2, 4], but"));

  std::string bytes;
  {
    std::ifstream in(plan, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  writeBytes(plan, bytes.substr(0, bytes.size() / 2));
  Result truncated = braidRun(plan + " --inputs " + dir + "/inputs --outputs " +
                              dir + "/outputs");
  EXPECT_EQ(truncated.status, 2);
  EXPECT_THAT(truncated.output, HasSubstr("braid-run: error: plan file '"));
  EXPECT_FALSE(exists(dir + "/outputs/output_0.pb"));

  Result usage = braidRun("--frobnicate");
  EXPECT_EQ(usage.status, 2);
  EXPECT_THAT(usage.output, HasSubstr("unknown option '--frobnicate'"));

  Result help = braidRun("--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.output, HasSubstr("usage: braid-run"));
}

} // namespace

#ifdef BRAID_MPIEXEC
namespace {

/// Tensor parallelism over two processes: a column-parallel matmul whose
/// shards are all-gathered, and a row-parallel one (rank-dependent slice of
/// the input, row-sharded weight) whose partial sums are all-reduced.
TEST(BraidRunMpiTest, TwoRanksUnderMpirun) {
  std::string dir =
      testing::TempDir() + "/braid-run-mpi-" + std::to_string(::getpid());
  ASSERT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir +
                         "/inputs' '" + dir + "/expected'")
                            .c_str()),
            0);
  PlanBuilder p({"tp"}, {2});
  uint32_t x = p.buffer(DType::F32, {4, 6});
  uint32_t w = p.buffer(DType::F32, {6, 4});
  uint32_t v = p.buffer(DType::F32, {3, 5});
  uint32_t columns = p.buffer(DType::F32, {4, 4});
  uint32_t gathered = p.buffer(DType::F32, {4, 8});
  uint32_t half = p.buffer(DType::F32, {4, 3});
  uint32_t partial = p.buffer(DType::F32, {4, 5});
  uint32_t reduced = p.buffer(DType::F32, {4, 5});
  p.input("x", x);
  p.weight("w", w, {6, 8}, {{}, {"tp"}});
  p.weight("v", v, {6, 5}, {{"tp"}, {}});
  p.output("xw", gathered);
  p.output("xv", reduced);
  p.kernel("compute", "matmul", {x, w}, {columns});
  uint32_t first = p.event(), second = p.event();
  p.record("compute", first);
  p.wait("comm", first);
  p.collective("comm", "all_gather", {"tp"}, columns, gathered).set_dim(1);
  plan::Kernel &slice = p.kernel("compute", "slice", {x}, {half});
  setInts(slice, "static_offsets", {0, INT64_MIN});
  setInts(slice, "static_sizes", {4, 3});
  setInts(slice, "static_strides", {1, 1});
  plan::IndexExpr *offset = slice.add_indices();
  offset->add_rank_axes("tp");
  offset->add_rank_coefficients(3);
  p.kernel("compute", "matmul", {half, v}, {partial});
  p.record("compute", second);
  p.wait("comm", second);
  p.collective("comm", "all_reduce", {"tp"}, partial, reduced)
      .set_reduction("sum");
  writeBytes(dir + "/model.bplan", p.serialize());

  ref::Tensor xValue = randomTensor({4, 6}, 5);
  ref::Tensor wValue = randomTensor({6, 8}, 6);
  ref::Tensor vValue = randomTensor({6, 5}, 7);
  std::vector<uint8_t> wBytes(6 * 8 * 4), vBytes(6 * 5 * 4);
  writeTensor(wValue, DType::F32, {6, 8}, wBytes.data());
  writeTensor(vValue, DType::F32, {6, 5}, vBytes.data());
  std::vector<uint8_t> file = encodeSafetensors(
      {{"w", DType::F32, {6, 8}, wBytes}, {"v", DType::F32, {6, 5}, vBytes}});
  writeBytes(dir + "/model.safetensors", std::string(file.begin(), file.end()));
  writeTensorProto(dir + "/inputs/input_0.pb", hostOf(xValue, "x"));
  writeTensorProto(dir + "/expected/output_0.pb",
                   hostOf(ref::matmul(xValue, wValue, false, false), "xw"));
  writeTensorProto(dir + "/expected/output_1.pb",
                   hostOf(ref::matmul(xValue, vValue, false, false), "xv"));

  std::string command =
      "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
      std::string(BRAID_MPIEXEC) + " -n 2 --oversubscribe " BRAID_RUN_PATH " " +
      dir + "/model.bplan --inputs " + dir + "/inputs --expected " + dir +
      "/expected --timeout-s 60 2>&1";
  FILE *pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  size_t read;
  while ((read = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    output.append(buffer, read);
  int status = ::pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_THAT(output, HasSubstr("[rank 0] PASS"));
  EXPECT_THAT(output, HasSubstr("[rank 1] PASS"));
  EXPECT_THAT(output, HasSubstr("[rank 1] output 1 'xv'"));
  (void)std::system(("rm -rf '" + dir + "'").c_str());
}

} // namespace
#endif
