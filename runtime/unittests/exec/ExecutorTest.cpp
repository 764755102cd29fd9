//===- ExecutorTest.cpp - running plans on streams, events and ranks ------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "../plan/PlanBuilder.h"

#include "runtime/comm/LocalCommunicator.h"
#include "runtime/comm/ThreadCommunicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/kernels/ElementIO.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/weights/Safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>

using namespace braid::rt;
namespace plan = braid::plan;
using namespace braid::rt::test;
using ref::Tensor;
using testing::HasSubstr;

namespace {

std::vector<float> randomValues(size_t count, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> values(count);
  for (float &value : values)
    value = uniform(random);
  return values;
}

Tensor tensorOf(const std::vector<int64_t> &shape,
                const std::vector<float> &values) {
  return Tensor::ofFloats(DType::F32, shape,
                          std::vector<double>(values.begin(), values.end()));
}

Tensor read(const TensorView &view) {
  return readTensor(view.dtype, view.shape, view.data);
}

void fill(const TensorView &view, const std::vector<float> &values) {
  ASSERT_EQ(view.numBytes(), values.size() * sizeof(float));
  std::memcpy(view.data, values.data(), view.numBytes());
}

/// Max |a - b| over max |b|.
double relativeError(const Tensor &a, const Tensor &b) {
  EXPECT_EQ(a.shape, b.shape);
  double worst = 0, scale = 0;
  for (size_t k = 0; k < b.f.size(); ++k) {
    worst = std::max(worst, std::fabs(a.f[k] - b.f[k]));
    scale = std::max(scale, std::fabs(b.f[k]));
  }
  EXPECT_GT(scale, 0) << "a test must be able to fail";
  return worst / scale;
}

LoadedPlan load(const PlanBuilder &p, const SafetensorsFile *weights = nullptr,
                int64_t worldSize = 1) {
  LoadOptions options;
  options.kernels = &cpuKernels();
  options.worldSize = worldSize;
  options.weights = weights;
  std::string bytes = p.serialize();
  return parsePlan(bytes.data(), bytes.size(), options);
}

/// The two-stream plan: "compute" runs y = x * w, records; "comm" waits,
/// all-reduces y into r, records; "compute" waits and adds the bias.
PlanBuilder twoStreamPlan() {
  PlanBuilder p({"tp"}, {1});
  uint32_t x = p.buffer(DType::F32, {4, 8});
  uint32_t w = p.buffer(DType::F32, {8, 5});
  uint32_t y = p.buffer(DType::F32, {4, 5});
  uint32_t r = p.buffer(DType::F32, {4, 5});
  uint32_t b = p.buffer(DType::F32, {5});
  uint32_t out = p.buffer(DType::F32, {4, 5});
  p.input("x", x);
  p.weight("w", w, {8, 5});
  p.constantFloats(b, {0.5f, -1, 2, 0.25f, -0.75f});
  p.output("out", out);
  p.kernel("compute", "matmul", {x, w}, {y}, "loc(\"mlp\":1:1)");
  uint32_t produced = p.event(), reduced = p.event();
  p.record("compute", produced);
  p.wait("comm", produced);
  p.collective("comm", "all_reduce", {"tp"}, y, r).set_reduction("sum");
  p.record("comm", reduced);
  p.wait("compute", reduced);
  p.kernel("compute", "add", {r, b}, {out}, "loc(\"mlp\":2:1)");
  return p;
}

SafetensorsFile weightsOf(const std::string &name, std::vector<int64_t> shape,
                          const std::vector<float> &values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return SafetensorsFile::fromBytes(
      encodeSafetensors({{name, DType::F32, std::move(shape), bytes}}));
}

TEST(ExecutorTest, TwoStreamsWithEventsMatchTheReference) {
  std::vector<float> w = randomValues(40, 1), x = randomValues(32, 2);
  SafetensorsFile weights = weightsOf("w", {8, 5}, w);
  LoadedPlan plan = load(twoStreamPlan(), &weights);
  LocalCommunicator comm(plan.mesh);
  Executor executor(plan, comm, &weights);
  fill(executor.input("x"), x);
  executor.run();

  Tensor expected = ref::binary(
      ref::BinaryKind::Add,
      ref::matmul(tensorOf({4, 8}, x), tensorOf({8, 5}, w), false, false),
      tensorOf({5}, {0.5f, -1, 2, 0.25f, -0.75f}));
  EXPECT_LT(relativeError(read(executor.output("out")), expected), 1e-6);

  // Runs repeat with the same result; the profile has every instruction.
  executor.run();
  EXPECT_LT(relativeError(read(executor.output("out")), expected), 1e-6);
  const RunProfile &profile = executor.profile();
  ASSERT_EQ(profile.streams.size(), 2u);
  EXPECT_EQ(profile.streams[0].name, "compute");
  EXPECT_EQ(profile.streams[0].instructions.size(), 4u);
  for (const StreamTiming &stream : profile.streams)
    for (const InstructionTiming &timing : stream.instructions)
      EXPECT_LE(0, timing.startNs) << timing.name;
  EXPECT_THAT(profile.summary(), HasSubstr("stream 'comm': busy"));
  // A profile without instruction times says so instead of 0% busy streams.
  RunProfile untimed = profile;
  untimed.untimed = "the plan ran as one CUDA graph";
  EXPECT_THAT(untimed.summary(),
              HasSubstr("(no per-instruction times: the plan ran as one CUDA "
                        "graph)"));
  EXPECT_THAT(untimed.summary(), Not(HasSubstr("busy")));

  std::ostringstream trace;
  profile.writeChromeTrace(trace);
  nlohmann::json json = nlohmann::json::parse(trace.str());
  int matmuls = 0, threadNames = 0;
  for (const auto &event : json["traceEvents"]) {
    if (event["name"] == "matmul") {
      ++matmuls;
      EXPECT_EQ(event["ph"], "X");
      EXPECT_EQ(event["tid"], 0);
      EXPECT_EQ(event["args"]["location"], "loc(\"mlp\":1:1)");
    }
    if (event["name"] == "thread_name")
      ++threadNames;
  }
  EXPECT_EQ(matmuls, 1);
  EXPECT_EQ(threadNames, 2);

  EXPECT_THROW(executor.input("nope"), std::invalid_argument);
}

TEST(ExecutorTest, AFailureStopsEveryStreamAndSaysWhere) {
  PlanBuilder p({"x"}, {1});
  uint32_t table = p.buffer(DType::F32, {4, 2});
  uint32_t ids = p.buffer(DType::I64, {1});
  uint32_t rows = p.buffer(DType::F32, {1, 2});
  uint32_t other = p.buffer(DType::F32, {1, 2});
  p.constantFloats(table, std::vector<float>(8, 1));
  p.constant(ids, int64Bytes({42})); // out of range: fails at run time
  uint32_t done = p.event();
  plan::Kernel &gather =
      p.kernel("lookup", "gather", {table, ids}, {rows}, "loc(\"emb\":7:3)");
  setInt(gather, "axis", 0);
  p.record("lookup", done);
  // "consumer" would wait forever on the event the failing stream records.
  p.wait("consumer", done);
  p.kernel("consumer", "exp", {rows}, {other});
  LoadedPlan plan = load(p);
  LocalCommunicator comm(plan.mesh);
  Executor executor(plan, comm, nullptr);
  try {
    executor.run();
    FAIL() << "the run should fail";
  } catch (const ExecutionError &error) {
    EXPECT_THAT(error.what(),
                HasSubstr("rank 0, stream 'lookup', instruction 0 (gather at "
                          "loc(\"emb\":7:3)): gather: index 42"));
  }
  // The consumer never ran its kernel.
  EXPECT_EQ(executor.profile().streams[1].instructions[1].startNs, -1);
}

TEST(ExecutorTest, EventWaitsTimeOut) {
  // A slow producer and an impatient consumer.
  PlanBuilder p({"x"}, {1});
  uint32_t a = p.buffer(DType::F32, {256, 256});
  uint32_t b = p.buffer(DType::F32, {256, 256});
  uint32_t done = p.event();
  // The timeout stops the producer at its next kernel, so this stays short.
  for (int i = 0; i < 400; ++i)
    p.kernel("slow", "exp", {a}, {b});
  p.record("slow", done);
  p.wait("impatient", done);
  LoadedPlan plan = load(p);
  LocalCommunicator comm(plan.mesh);
  ExecutorOptions options;
  options.eventTimeout = std::chrono::milliseconds(1);
  Executor executor(plan, comm, nullptr, options);
  try {
    executor.run();
    FAIL() << "the wait should time out";
  } catch (const ExecutionError &error) {
    EXPECT_THAT(error.what(),
                HasSubstr("stream 'impatient', instruction 0 (wait_event): "
                          "timed out after"));
  }
}

TEST(ExecutorTest, RejectsACommunicatorOfAnotherMesh) {
  std::vector<float> w = randomValues(40, 1);
  SafetensorsFile weights = weightsOf("w", {8, 5}, w);
  LoadedPlan plan = load(twoStreamPlan(), &weights);
  LocalCommunicator comm(MeshShape{{"dp"}, {1}});
  EXPECT_THROW(Executor(plan, comm, &weights), PlanError);
}

/// Runs `plan` on every rank of `world` in its own thread; returns each
/// rank's outputs (by binding order) after `prepare` filled its inputs.
std::vector<std::vector<Tensor>>
runOnAllRanks(const LoadedPlan &plan, const SafetensorsFile *weights,
              std::function<void(int64_t, Executor &)> prepare) {
  ThreadWorld world(plan.mesh);
  int64_t ranks = plan.mesh.numRanks();
  std::vector<std::vector<Tensor>> outputs(ranks);
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < ranks; ++rank)
    threads.emplace_back([&, rank] {
      try {
        std::unique_ptr<Communicator> comm = world.communicator(rank);
        comm->setTimeout(std::chrono::seconds(20));
        Executor executor(plan, *comm, weights);
        prepare(rank, executor);
        executor.run();
        for (const auto &binding : plan.proto.outputs())
          outputs[rank].push_back(read(executor.output(binding.name())));
      } catch (const std::exception &error) {
        errors[rank] = error.what();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int64_t rank = 0; rank < ranks; ++rank)
    EXPECT_EQ(errors[rank], "") << "rank " << rank;
  return outputs;
}

TEST(ExecutorTest, CollectivesRearrangeAlongTensorDimensions) {
  // Two ranks on "tp"; each holds x_r [3, 4, 6] with distinct values. The
  // leading dimension (3) differs from the group size (2) so that a
  // transposed rearrangement cannot pass by symmetry.
  PlanBuilder p({"tp"}, {2});
  uint32_t x = p.buffer(DType::F32, {3, 4, 6});
  uint32_t gathered = p.buffer(DType::F32, {3, 8, 6});
  uint32_t scattered = p.buffer(DType::F32, {3, 2, 6});
  uint32_t exchanged = p.buffer(DType::F32, {3, 2, 12});
  uint32_t shifted = p.buffer(DType::F32, {3, 4, 6});
  uint32_t broadcast = p.buffer(DType::F32, {3, 4, 6});
  uint32_t averaged = p.buffer(DType::F32, {3, 4, 6});
  p.input("x", x);
  p.output("gathered", gathered);
  p.output("scattered", scattered);
  p.output("exchanged", exchanged);
  p.output("shifted", shifted);
  p.output("broadcast", broadcast);
  p.output("averaged", averaged);
  p.collective("comm", "all_gather", {"tp"}, x, gathered).set_dim(1);
  plan::Collective &rs =
      p.collective("comm", "reduce_scatter", {"tp"}, x, scattered);
  rs.set_dim(1);
  rs.set_reduction("sum");
  plan::Collective &a2a =
      p.collective("comm", "all_to_all", {"tp"}, x, exchanged);
  a2a.set_split_dim(1);
  a2a.set_concat_dim(2);
  p.collective("comm", "collective_permute", {"tp"}, x, shifted).set_shift(1);
  p.collective("comm", "broadcast", {"tp"}, x, broadcast).set_root(1);
  p.collective("comm", "all_reduce", {"tp"}, x, averaged).set_reduction("avg");
  LoadedPlan plan = load(p, nullptr, 2);

  std::vector<Tensor> inputs = {tensorOf({3, 4, 6}, randomValues(72, 10)),
                                tensorOf({3, 4, 6}, randomValues(72, 11))};
  auto outputs = runOnAllRanks(plan, nullptr, [&](int64_t rank, Executor &e) {
    writeTensor(inputs[rank], DType::F32, {3, 4, 6}, e.input("x").data);
  });
  auto slice1 = [](const Tensor &t, int64_t start, int64_t size) {
    return ref::slice(t, {0, start, 0}, {t.shape[0], size, t.shape[2]},
                      {1, 1, 1});
  };
  Tensor sum = ref::binary(ref::BinaryKind::Add, inputs[0], inputs[1]);
  for (int64_t rank = 0; rank < 2; ++rank) {
    const std::vector<Tensor> &out = outputs[rank];
    ASSERT_EQ(out.size(), 6u);
    EXPECT_EQ(out[0].f, ref::concat({inputs[0], inputs[1]}, 1).f);
    EXPECT_LT(relativeError(out[1], slice1(sum, 2 * rank, 2)), 1e-7);
    // all_to_all: block j of rank r is slice j along dim 1; received blocks
    // are concatenated along dim 2 in member order.
    EXPECT_EQ(out[2].f, ref::concat({slice1(inputs[0], 2 * rank, 2),
                                     slice1(inputs[1], 2 * rank, 2)},
                                    2)
                            .f);
    EXPECT_EQ(out[3].f, inputs[1 - rank].f);
    EXPECT_EQ(out[4].f, inputs[1].f);
    Tensor mean = ref::binary(ref::BinaryKind::Mul, sum,
                              Tensor::ofFloats(DType::F32, {}, {0.5}));
    EXPECT_LT(relativeError(out[5], mean), 1e-7);
  }
}

TEST(ExecutorTest, ShardedWeightsAndRankDependentIndices) {
  // Megatron-style: w [6, 4] split by columns over tp; each rank computes
  // its columns, an all_gather along dim 1 rebuilds x * w. A slice with a
  // rank-dependent offset picks row `2 * tp` of x.
  PlanBuilder p({"tp"}, {2});
  uint32_t x = p.buffer(DType::F32, {3, 6});
  uint32_t w = p.buffer(DType::F32, {6, 2});
  uint32_t partial = p.buffer(DType::F32, {3, 2});
  uint32_t full = p.buffer(DType::F32, {3, 4});
  uint32_t row = p.buffer(DType::F32, {1, 6});
  p.input("x", x);
  p.weight("w", w, {6, 4}, {{}, {"tp"}});
  p.output("full", full);
  p.output("row", row);
  p.kernel("compute", "matmul", {x, w}, {partial});
  uint32_t ready = p.event();
  p.record("compute", ready);
  p.wait("comm", ready);
  p.collective("comm", "all_gather", {"tp"}, partial, full).set_dim(1);
  plan::Kernel &slice = p.kernel("compute", "slice", {x}, {row});
  setInts(slice, "static_offsets", {INT64_MIN, 0});
  setInts(slice, "static_sizes", {1, 6});
  setInts(slice, "static_strides", {1, 1});
  plan::IndexExpr *offset = slice.add_indices();
  offset->add_rank_axes("tp");
  offset->add_rank_coefficients(2);

  std::vector<float> wValues = randomValues(24, 20),
                     xValues = randomValues(18, 21);
  SafetensorsFile weights = weightsOf("w", {6, 4}, wValues);
  LoadedPlan plan = load(p, &weights, 2);
  auto outputs = runOnAllRanks(plan, &weights, [&](int64_t, Executor &e) {
    fill(e.input("x"), xValues);
  });
  Tensor xTensor = tensorOf({3, 6}, xValues);
  Tensor expected =
      ref::matmul(xTensor, tensorOf({6, 4}, wValues), false, false);
  for (int64_t rank = 0; rank < 2; ++rank) {
    EXPECT_LT(relativeError(outputs[rank][0], expected), 1e-6) << rank;
    EXPECT_EQ(outputs[rank][1].f,
              ref::slice(xTensor, {2 * rank, 0}, {1, 6}, {1, 1}).f);
  }
}

TEST(ExecutorTest, ShardedWeightBlocks) {
  // Columns 4..7 of a fused [6, 8] weight, split over tp: rank r holds
  // columns 4 + 2r and 5 + 2r; an all_gather rebuilds x * qkv[:, 4:8].
  PlanBuilder p({"tp"}, {2});
  uint32_t x = p.buffer(DType::F32, {3, 6});
  uint32_t w = p.buffer(DType::F32, {6, 2});
  uint32_t partial = p.buffer(DType::F32, {3, 2});
  uint32_t full = p.buffer(DType::F32, {3, 4});
  p.input("x", x);
  plan::Weight &weight = p.weight("qkv", w, {6, 8}, {{}, {"tp"}});
  for (int64_t offset : {0, 4})
    weight.add_block_offsets(offset);
  for (int64_t size : {6, 4})
    weight.add_block_shape(size);
  p.output("full", full);
  p.kernel("compute", "matmul", {x, w}, {partial});
  p.collective("compute", "all_gather", {"tp"}, partial, full).set_dim(1);

  std::vector<float> wValues = randomValues(48, 30),
                     xValues = randomValues(18, 31);
  SafetensorsFile weights = weightsOf("qkv", {6, 8}, wValues);
  LoadedPlan plan = load(p, &weights, 2);
  auto outputs = runOnAllRanks(plan, &weights, [&](int64_t, Executor &e) {
    fill(e.input("x"), xValues);
  });
  Tensor block = ref::slice(tensorOf({6, 8}, wValues), {0, 4}, {6, 4}, {1, 1});
  Tensor expected = ref::matmul(tensorOf({3, 6}, xValues), block, false, false);
  for (int64_t rank = 0; rank < 2; ++rank)
    EXPECT_LT(relativeError(outputs[rank][0], expected), 1e-6) << rank;
}

TEST(ExecutorTest, PreparedMatmulsMatchAndReleaseOnlyWeightsNothingElseReads) {
  // big [4096, 600] (about 9.8 MB: packed in slices) has one reader; tied
  // [40, 4096], read transposed by two matmuls, shares one packed copy;
  // shared [600, 40] is also read by an add, so it stays; written [40, 600]
  // is overwritten by a kernel before its matmul reads it, so it is not
  // constant and must be read as the kernel left it. 48 rows: every product
  // is above the 4 MFLOP packing threshold.
  PlanBuilder p({"tp"}, {1});
  uint32_t x = p.buffer(DType::F32, {2, 24, 4096});
  uint32_t big = p.buffer(DType::F32, {4096, 600});
  uint32_t tied = p.buffer(DType::F32, {40, 4096});
  uint32_t shared = p.buffer(DType::F32, {600, 40});
  uint32_t written = p.buffer(DType::F32, {40, 600});
  uint32_t h = p.buffer(DType::F32, {2, 24, 600});
  uint32_t a = p.buffer(DType::F32, {2, 24, 40});
  uint32_t b = p.buffer(DType::F32, {2, 24, 40});
  uint32_t c = p.buffer(DType::F32, {2, 24, 40});
  uint32_t sum = p.buffer(DType::F32, {600, 40});
  uint32_t d = p.buffer(DType::F32, {2, 24, 600});
  p.input("x", x);
  p.weight("big", big, {4096, 600});
  p.weight("tied", tied, {40, 4096});
  p.weight("shared", shared, {600, 40});
  p.weight("written", written, {40, 600});
  for (uint32_t out : {h, a, b, c, sum, d})
    p.output("out" + std::to_string(out), out);
  p.kernel("compute", "matmul", {x, big}, {h});
  setBool(p.kernel("compute", "matmul", {x, tied}, {a}), "transpose_rhs", true);
  setBool(p.kernel("compute", "matmul", {x, tied}, {b}), "transpose_rhs", true);
  p.kernel("compute", "matmul", {h, shared}, {c});
  p.kernel("compute", "add", {shared, shared}, {sum});
  p.kernel("compute", "mul", {written, written}, {written});
  p.kernel("compute", "matmul", {a, written}, {d});

  std::vector<float> bigValues = randomValues(4096 * 600, 40),
                     tiedValues = randomValues(40 * 4096, 41),
                     sharedValues = randomValues(600 * 40, 42),
                     writtenValues = randomValues(40 * 600, 43),
                     xValues = randomValues(2 * 24 * 4096, 44);
  auto bytesOf = [](const std::vector<float> &values) {
    std::vector<uint8_t> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  };
  SafetensorsFile weights = SafetensorsFile::fromBytes(encodeSafetensors(
      {{"big", DType::F32, {4096, 600}, bytesOf(bigValues)},
       {"tied", DType::F32, {40, 4096}, bytesOf(tiedValues)},
       {"shared", DType::F32, {600, 40}, bytesOf(sharedValues)},
       {"written", DType::F32, {40, 600}, bytesOf(writtenValues)}}));
  LoadedPlan plan = load(p, &weights);
  LocalCommunicator comm(plan.mesh);
  auto runWith = [&](bool prepare) {
    ExecutorOptions options;
    options.prepareKernels = prepare;
    auto executor =
        std::make_unique<Executor>(plan, comm, &weights, options);
    fill(executor->input("x"), xValues);
    executor->run();
    executor->run();
    return executor;
  };
  std::unique_ptr<Executor> plain = runWith(false), prepared = runWith(true);
  for (const auto &binding : plan.proto.outputs())
    EXPECT_LT(relativeError(read(prepared->output(binding.name())),
                            read(plain->output(binding.name()))),
              1e-5)
        << binding.name();
  // The unprepared run against the reference, so that both can fail (two
  // runs: `written` was squared twice).
  Tensor squared = ref::binary(ref::BinaryKind::Mul,
                               tensorOf({40, 600}, writtenValues),
                               tensorOf({40, 600}, writtenValues));
  squared = ref::binary(ref::BinaryKind::Mul, squared, squared);
  Tensor expectedB = ref::matmul(tensorOf({2, 24, 4096}, xValues),
                                 tensorOf({40, 4096}, tiedValues), false, true);
  EXPECT_LT(relativeError(read(plain->output("out" + std::to_string(d))),
                          ref::matmul(expectedB, squared, false, false)),
            1e-5);

  // What was released reads as zeros; what something else reads is whole.
  bool packs = cpuGemmLibrary().rfind("oneDNN", 0) == 0 &&
               !std::getenv("BRAID_CPU_PACK");
  auto allZero = [](const TensorView &view) {
    const float *data = view.as<float>();
    return std::all_of(data, data + view.numElements(),
                       [](float value) { return value == 0; });
  };
  EXPECT_EQ(allZero(prepared->buffer(big)), packs);
  EXPECT_EQ(allZero(prepared->buffer(tied)), packs);
  EXPECT_EQ(read(prepared->buffer(shared)).f,
            read(plain->buffer(shared)).f);
  EXPECT_EQ(read(prepared->buffer(written)).f, squared.f);
}

} // namespace
