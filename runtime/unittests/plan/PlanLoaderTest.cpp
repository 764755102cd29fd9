//===- PlanLoaderTest.cpp - the loader rejects every kind of bad plan -----===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Each test starts from one valid plan, breaks one thing, serializes and
// loads it, and checks that the PlanError names the field and the value.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "runtime/kernels/CpuKernels.h"
#include "runtime/plan/PlanLoader.h"
#include "runtime/weights/Safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>

using namespace braid::rt;
namespace plan = braid::plan;
using braid::rt::test::PlanBuilder;
using braid::rt::test::setInt;
using braid::rt::test::setInts;
using testing::AllOf;
using testing::HasSubstr;

namespace {

/// The weights file every test plan is checked against.
const SafetensorsFile &testWeights() {
  static const SafetensorsFile file = [] {
    std::vector<SafetensorsEntry> entries(3);
    entries[0] = {"w", DType::F32, {4, 6}, std::vector<uint8_t>(96, 0)};
    entries[1] = {"scale", DType::F16, {6}, std::vector<uint8_t>(12, 0)};
    entries[2] = {"table", DType::F32, {5, 4}, std::vector<uint8_t>(80, 0)};
    return SafetensorsFile::fromBytes(encodeSafetensors(entries), "test.st");
  }();
  return file;
}

/// Buffer ids of the valid plan.
enum : uint32_t { X, W, Y, B, Z, G };

/// A valid plan over a mesh tp=2: y = x * w (w's columns split over tp),
/// z = y + b on "compute"; "comm" all-gathers z along dim 1 after an event.
PlanBuilder validPlan() {
  PlanBuilder p({"tp"}, {2});
  p.buffer(DType::F32, {2, 4}); // X
  p.buffer(DType::F32, {4, 3}); // W
  p.buffer(DType::F32, {2, 3}); // Y
  p.buffer(DType::F32, {3});    // B
  p.buffer(DType::F32, {2, 3}); // Z
  p.buffer(DType::F32, {2, 6}); // G
  p.input("x", X);
  p.weight("w", W, {4, 6}, {{}, {"tp"}});
  p.constantFloats(B, {1, 2, 3});
  p.output("g", G);
  p.kernel("compute", "matmul", {X, W}, {Y}, "loc(\"m.mlir\":3:5)");
  p.kernel("compute", "add", {Y, B}, {Z});
  uint32_t ready = p.event();
  p.record("compute", ready);
  p.wait("comm", ready);
  p.collective("comm", "all_gather", {"tp"}, Z, G).set_dim(1);
  return p;
}

LoadOptions options(int64_t worldSize = 2) {
  LoadOptions result;
  result.kernels = &cpuKernels();
  result.worldSize = worldSize;
  result.weights = &testWeights();
  return result;
}

LoadedPlan load(const PlanBuilder &p, int64_t worldSize = 2) {
  std::string bytes = p.serialize();
  return parsePlan(bytes.data(), bytes.size(), options(worldSize));
}

/// The message of the PlanError that loading `p` throws ("" if none).
std::string loadError(const PlanBuilder &p, int64_t worldSize = 2) {
  try {
    load(p, worldSize);
  } catch (const PlanError &error) {
    return error.what();
  }
  return "";
}

plan::Kernel &kernelAt(PlanBuilder &p, int stream, int index) {
  return *p.plan.mutable_streams(stream)
              ->mutable_instructions(index)
              ->mutable_kernel();
}

TEST(PlanLoaderTest, ValidPlanLoads) {
  LoadedPlan plan = load(validPlan());
  EXPECT_EQ(plan.mesh.numRanks(), 2);
  ASSERT_EQ(plan.buffers.size(), 6u);
  EXPECT_EQ(plan.buffers[G].shape, (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(plan.buffers[W].bytes, 48u);
  ASSERT_EQ(plan.kernels.size(), 2u);
  ASSERT_NE(plan.kernels[0][0], nullptr);
  EXPECT_EQ(plan.kernels[0][0]->op, "matmul");
  EXPECT_EQ(plan.kernels[1][0], nullptr);
  // worldSize 0 accepts the plan's mesh.
  EXPECT_NO_THROW(load(validPlan(), 0));
}

TEST(PlanLoaderTest, FormatVersion) {
  // Only version 3 loads: 2 has no state weights or training, and a later
  // one may mean something this runtime would misread.
  for (uint32_t version : {1u, 2u, 4u}) {
    PlanBuilder p = validPlan();
    p.plan.set_format_version(version);
    EXPECT_THAT(loadError(p),
                AllOf(HasSubstr("format_version: " + std::to_string(version)),
                      HasSubstr("is not the supported version 3")));
  }
}

/// validPlan with its add kernel in optional group 1, skipped once the
/// compute stream's record (event 0) is done; `change` spoils it.
std::string optionalGroupError(
    const std::function<void(PlanBuilder &)> &change) {
  PlanBuilder p = validPlan();
  p.plan.add_optional_groups()->add_until_events(0);
  plan::Instruction *add =
      p.plan.mutable_streams(0)->mutable_instructions(1);
  add->set_optional_group(1);
  add->set_zero_when_skipped(true);
  change(p);
  return loadError(p);
}

TEST(PlanLoaderTest, OptionalGroups) {
  EXPECT_EQ(optionalGroupError([](PlanBuilder &) {}), "");
  EXPECT_THAT(optionalGroupError([](PlanBuilder &p) {
                p.plan.mutable_streams(1)->mutable_instructions(1)
                    ->set_optional_group(1);
              }),
              HasSubstr("a collective cannot be in an optional group"));
  EXPECT_THAT(optionalGroupError([](PlanBuilder &p) {
                p.plan.mutable_streams(1)->mutable_instructions(0)
                    ->set_optional_group(1);
              }),
              HasSubstr("optional group 1 is also on 'compute'"));
  EXPECT_THAT(optionalGroupError([](PlanBuilder &p) {
                p.plan.mutable_streams(0)->mutable_instructions(0)
                    ->set_optional_group(2);
              }),
              HasSubstr("optional_group 2 is not one of the plan's 1"));
  EXPECT_THAT(optionalGroupError([](PlanBuilder &p) {
                p.plan.mutable_optional_groups(0)->clear_until_events();
              }),
              HasSubstr("optional_groups[0].until_events: is empty"));
  EXPECT_THAT(optionalGroupError([](PlanBuilder &p) {
                p.plan.mutable_optional_groups(0)->set_until_events(0, 7);
              }),
              HasSubstr("event 7 is not below num_events"));
  EXPECT_THAT(optionalGroupError([](PlanBuilder &p) {
                p.plan.add_optional_groups()->add_until_events(0);
              }),
              HasSubstr("optional_groups[1]: has no instruction"));
  EXPECT_THAT(optionalGroupError([](PlanBuilder &p) {
                p.plan.mutable_streams(0)->mutable_instructions(0)
                    ->set_zero_when_skipped(true);
              }),
              HasSubstr("is zero_when_skipped but in no optional group"));
}

/// Buffer ids of the training plan.
enum : uint32_t { Tokens, Labels, Table, Moment, Rows, Loss };

/// A valid training plan (tp=2): loss = reduce_mean(table[tokens]) with the
/// table (read from the file, state, columns split over tp) and a ZEROS
/// state moment of the table's shape.
PlanBuilder trainingPlan() {
  PlanBuilder p({"tp"}, {2});
  p.buffer(DType::I64, {2, 3}); // Tokens
  p.buffer(DType::I32, {2, 3}); // Labels
  p.buffer(DType::F32, {5, 2}); // Table
  p.buffer(DType::F32, {5, 2}); // Moment
  p.buffer(DType::F32, {2, 3, 2}); // Rows
  p.buffer(DType::F32, {});     // Loss
  p.input("tokens", Tokens);
  p.input("labels", Labels);
  p.weight("table", Table, {5, 4}, {{}, {"tp"}}).set_state(true);
  plan::Weight &moment = p.weight("table.moment", Moment, {5, 4}, {{}, {"tp"}});
  moment.set_init(plan::ZEROS);
  moment.set_state(true);
  p.output("loss", Loss);
  setInt(p.kernel("compute", "gather", {Table, Tokens}, {Rows}), "axis", 0);
  setInts(p.kernel("compute", "reduce_mean", {Rows}, {Loss}), "dims",
          {0, 1, 2});
  p.kernel("compute", "copy", {Moment}, {Table});
  plan::Training *training = p.plan.mutable_training();
  training->set_tokens_input("tokens");
  training->set_labels_input("labels");
  training->set_loss_output("loss");
  training->set_batch(2);
  training->set_sequence(3);
  return p;
}

TEST(PlanLoaderTest, TrainingFieldsRoundTrip) {
  PlanBuilder p = trainingPlan();
  std::string bytes = p.serialize();
  plan::Plan parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_TRUE(parsed.has_training());
  EXPECT_EQ(parsed.training().tokens_input(), "tokens");
  EXPECT_EQ(parsed.training().labels_input(), "labels");
  EXPECT_EQ(parsed.training().loss_output(), "loss");
  EXPECT_EQ(parsed.training().batch(), 2);
  EXPECT_EQ(parsed.training().sequence(), 3);
  EXPECT_EQ(parsed.weights(0).init(), plan::FILE);
  EXPECT_TRUE(parsed.weights(0).state());
  EXPECT_EQ(parsed.weights(1).init(), plan::ZEROS);
  EXPECT_TRUE(parsed.weights(1).state());
  LoadedPlan loaded = load(p);
  EXPECT_TRUE(loaded.proto.has_training());
  // A plan without training has neither field.
  EXPECT_FALSE(load(validPlan()).proto.has_training());
  EXPECT_FALSE(load(validPlan()).proto.weights(0).state());
}

TEST(PlanLoaderTest, ZerosWeightsNeedNoWeightsFile) {
  PlanBuilder p = trainingPlan();
  // Only the ZEROS moment left: the weights file is not needed.
  p.plan.mutable_weights()->erase(p.plan.mutable_weights()->begin());
  p.plan.mutable_streams(0)->mutable_instructions()->RemoveLast();
  LoadOptions noFile = options();
  noFile.weights = nullptr;
  std::string bytes = p.serialize();
  EXPECT_NO_THROW(parsePlan(bytes.data(), bytes.size(), noFile));
  // A FILE weight still needs one.
  bytes = trainingPlan().serialize();
  try {
    parsePlan(bytes.data(), bytes.size(), noFile);
    ADD_FAILURE() << "a FILE weight without a weights file loaded";
  } catch (const PlanError &error) {
    EXPECT_THAT(error.what(), AllOf(HasSubstr("'table'"),
                                    HasSubstr("no weights file was given")));
  }
}

TEST(PlanLoaderTest, WeightInitAndState) {
  PlanBuilder unknown = trainingPlan();
  unknown.plan.mutable_weights(1)->set_init(static_cast<plan::WeightInit>(7));
  EXPECT_THAT(loadError(unknown),
              AllOf(HasSubstr("weights[1].init: 7"),
                    HasSubstr("not a known weight init")));

  PlanBuilder negative = trainingPlan();
  negative.plan.mutable_weights(1)->set_full_shape(0, -5);
  EXPECT_THAT(loadError(negative),
              HasSubstr("weights[1].full_shape[0]: -5 is negative"));

  PlanBuilder huge = trainingPlan();
  huge.plan.mutable_weights(1)->set_full_shape(0, int64_t(1) << 62);
  EXPECT_THAT(loadError(huge), AllOf(HasSubstr("weights[1].full_shape"),
                                     HasSubstr("2^63 bytes or more")));

  // Two weights of one name that disagree.
  PlanBuilder mixed = trainingPlan();
  uint32_t again = mixed.buffer(DType::F32, {5, 2});
  mixed.weight("table", again, {5, 4}, {{}, {"tp"}});
  EXPECT_THAT(loadError(mixed),
              AllOf(HasSubstr("weights[2].state"),
                    HasSubstr("'table' is state here but not in weights[0]")));

  PlanBuilder inits = trainingPlan();
  uint32_t zeros = inits.buffer(DType::F32, {5, 2});
  plan::Weight &zeroTable = inits.weight("table", zeros, {5, 4}, {{}, {"tp"}});
  zeroTable.set_init(plan::ZEROS);
  zeroTable.set_state(true);
  EXPECT_THAT(loadError(inits), HasSubstr("weights[2].init: differs from the "
                                          "init of 'table' in weights[0]"));

  // Blocks of one state weight must not overlap; disjoint ones are fine.
  PlanBuilder blocks = trainingPlan();
  plan::Weight *first = blocks.plan.mutable_weights(1);
  for (int64_t v : {0, 0})
    first->add_block_offsets(v);
  for (int64_t v : {5, 2})
    first->add_block_shape(v);
  first->set_full_shape(1, 4);
  first->mutable_sharding(1)->clear_axes();
  uint32_t second = blocks.buffer(DType::F32, {5, 2});
  plan::Weight &other =
      blocks.weight("table.moment", second, {5, 4}, {{}, {}});
  other.set_init(plan::ZEROS);
  other.set_state(true);
  for (int64_t v : {0, 2})
    other.add_block_offsets(v);
  for (int64_t v : {5, 2})
    other.add_block_shape(v);
  EXPECT_EQ(loadError(blocks), "");
  other.set_block_offsets(1, 1);
  EXPECT_THAT(loadError(blocks),
              AllOf(HasSubstr("weights[2]"),
                    HasSubstr("'table.moment' overlaps its block in "
                              "weights[1]")));
}

TEST(PlanLoaderTest, Training) {
  EXPECT_EQ(loadError(trainingPlan()), "");

  PlanBuilder batch = trainingPlan();
  batch.plan.mutable_training()->set_batch(0);
  EXPECT_THAT(loadError(batch), HasSubstr("training.batch: 0 is not positive"));

  PlanBuilder missing = trainingPlan();
  missing.plan.mutable_training()->set_tokens_input("ids");
  EXPECT_THAT(loadError(missing),
              HasSubstr("training.tokens_input: 'ids' is not an input"));

  PlanBuilder shape = trainingPlan();
  shape.plan.mutable_training()->set_sequence(4);
  EXPECT_THAT(loadError(shape),
              AllOf(HasSubstr("training.tokens_input: input 'tokens' is "
                              "buffer 0 (i64 [2, 3])"),
                    HasSubstr("not [batch, sequence] = [2, 4]")));

  PlanBuilder floats = trainingPlan();
  floats.plan.mutable_buffers(Labels)->set_dtype(plan::F32);
  EXPECT_THAT(loadError(floats),
              AllOf(HasSubstr("training.labels_input"),
                    HasSubstr("token ids need i64 or i32")));

  PlanBuilder same = trainingPlan();
  same.plan.mutable_training()->set_labels_input("tokens");
  EXPECT_THAT(loadError(same), HasSubstr("training.labels_input: 'tokens' is "
                                         "also the tokens input"));

  PlanBuilder lossOutput = trainingPlan();
  lossOutput.plan.mutable_training()->set_loss_output("tokens");
  EXPECT_THAT(loadError(lossOutput),
              HasSubstr("training.loss_output: 'tokens' is not an output"));

  PlanBuilder vector = trainingPlan();
  vector.plan.mutable_buffers(Loss)->add_shape(1);
  vector.plan.mutable_streams(0)->mutable_instructions()->DeleteSubrange(1, 1);
  EXPECT_THAT(loadError(vector),
              AllOf(HasSubstr("training.loss_output: output 'loss'"),
                    HasSubstr("the loss must be a scalar f32")));

  // Several steps per call: the inputs hold steps * batch rows and the
  // loss one entry per step.
  PlanBuilder steps = trainingPlan();
  steps.plan.mutable_training()->set_steps(2);
  EXPECT_THAT(loadError(steps),
              HasSubstr("not [steps * batch, sequence] = [4, 3]"));
  PlanBuilder negative = trainingPlan();
  negative.plan.mutable_training()->set_steps(-1);
  EXPECT_THAT(loadError(negative),
              HasSubstr("training.steps: -1 is negative"));
  PlanBuilder algorithm = trainingPlan();
  algorithm.plan.mutable_training()->set_algorithm("diloco");
  EXPECT_THAT(loadError(algorithm),
              HasSubstr("training.algorithm: 'diloco' is not a training "
                        "algorithm braid-run knows (cocod-sgd, acco)"));
  PlanBuilder period = trainingPlan();
  period.plan.mutable_training()->set_steps(2);
  period.plan.mutable_training()->set_batch(1);
  period.plan.mutable_training()->set_algorithm("cocod-sgd");
  EXPECT_THAT(loadError(period),
              AllOf(HasSubstr("training.loss_output: output 'loss'"),
                    HasSubstr("the loss must be f32 [steps] = [2]")));
}

TEST(PlanLoaderTest, Mesh) {
  PlanBuilder empty = validPlan();
  empty.plan.clear_mesh();
  EXPECT_THAT(loadError(empty), HasSubstr("mesh: has no axes"));

  PlanBuilder unpaired = validPlan();
  unpaired.plan.mutable_mesh()->add_axis_sizes(3);
  EXPECT_THAT(loadError(unpaired), HasSubstr("1 axis names but 2 sizes"));

  PlanBuilder zero = validPlan();
  zero.plan.mutable_mesh()->set_axis_sizes(0, 0);
  EXPECT_THAT(loadError(zero), AllOf(HasSubstr("mesh.axis_sizes[0]"),
                                     HasSubstr("not positive")));

  PlanBuilder twice = validPlan();
  twice.plan.mutable_mesh()->add_axis_names("tp");
  twice.plan.mutable_mesh()->add_axis_sizes(1);
  EXPECT_THAT(loadError(twice), AllOf(HasSubstr("mesh.axis_names[1]"),
                                      HasSubstr("'tp' appears twice")));

  EXPECT_THAT(loadError(validPlan(), 4),
              HasSubstr("the plan needs 2 ranks but this run has 4"));
}

TEST(PlanLoaderTest, BufferIdsAreDense) {
  PlanBuilder gap = validPlan();
  gap.plan.mutable_buffers(5)->set_id(9);
  EXPECT_THAT(loadError(gap), AllOf(HasSubstr("buffers[5].id"), HasSubstr("9"),
                                    HasSubstr("0..n-1")));

  PlanBuilder twice = validPlan();
  twice.plan.mutable_buffers(5)->set_id(4);
  EXPECT_THAT(loadError(twice),
              AllOf(HasSubstr("buffers[5].id"), HasSubstr("4 appears twice")));
}

TEST(PlanLoaderTest, BufferFields) {
  PlanBuilder dtype = validPlan();
  dtype.plan.mutable_buffers(2)->set_dtype(static_cast<plan::DType>(17));
  EXPECT_THAT(loadError(dtype),
              AllOf(HasSubstr("buffers[2].dtype"), HasSubstr("17")));

  PlanBuilder negative = validPlan();
  negative.plan.mutable_buffers(2)->set_shape(1, -3);
  EXPECT_THAT(loadError(negative),
              AllOf(HasSubstr("buffers[2].shape[1]"), HasSubstr("-3")));

  PlanBuilder huge = validPlan();
  huge.plan.mutable_buffers(2)->set_shape(0, int64_t(1) << 62);
  EXPECT_THAT(loadError(huge), HasSubstr("buffers[2].shape"));

  // An empty buffer whose other sizes multiply past int64: the element
  // count of its first two sizes overflowed in the kernel checks (UBSan in
  // plan-loader-fuzzer; fuzz-regressions/plan-empty-buffer-int64-overflow).
  PlanBuilder emptyHuge = validPlan();
  uint32_t flags =
      emptyHuge.buffer(DType::I1, {int64_t(1) << 32, int64_t(1) << 31, 0});
  emptyHuge.kernel("compute", "copy", {flags}, {flags});
  EXPECT_THAT(loadError(emptyHuge),
              AllOf(HasSubstr("buffers[6].shape"), HasSubstr("2^63 bytes")));
  PlanBuilder emptyLarge = validPlan();
  emptyLarge.buffer(DType::I1, {int64_t(1) << 32, (int64_t(1) << 31) - 1, 0});
  EXPECT_EQ(loadError(emptyLarge), "");

  PlanBuilder past = validPlan();
  past.plan.mutable_buffers(5)->set_offset(past.plan.arena_bytes() - 8);
  EXPECT_THAT(loadError(past), AllOf(HasSubstr("buffers[5].offset"),
                                     HasSubstr("runs past arena_bytes")));

  // offset + bytes wraps around 2^64.
  PlanBuilder wraps = validPlan();
  wraps.plan.set_arena_bytes(UINT64_MAX);
  wraps.plan.mutable_buffers(5)->set_offset(UINT64_MAX - 8);
  EXPECT_THAT(loadError(wraps), AllOf(HasSubstr("buffers[5].offset"),
                                      HasSubstr("runs past arena_bytes")));

  PlanBuilder misaligned = validPlan();
  misaligned.plan.mutable_buffers(5)->set_offset(2);
  EXPECT_THAT(loadError(misaligned),
              AllOf(HasSubstr("buffers[5].offset"), HasSubstr("not aligned")));
}

TEST(PlanLoaderTest, Constants) {
  PlanBuilder size = validPlan();
  size.plan.mutable_constants(0)->mutable_data()->append("xx");
  EXPECT_THAT(loadError(size), AllOf(HasSubstr("constants[0].data"),
                                     HasSubstr("14 bytes"), HasSubstr("12")));

  PlanBuilder missing = validPlan();
  missing.plan.mutable_constants(0)->set_buffer(40);
  EXPECT_THAT(loadError(missing), AllOf(HasSubstr("constants[0].buffer"),
                                        HasSubstr("buffer 40 does not exist")));

  PlanBuilder boolean = validPlan();
  uint32_t mask = boolean.buffer(DType::I1, {3});
  boolean.constant(mask, {0, 1, 2});
  EXPECT_THAT(loadError(boolean), AllOf(HasSubstr("constants[1].data"),
                                        HasSubstr("i1 element 2 is 2")));

  PlanBuilder twice = validPlan();
  twice.constantFloats(B, {4, 5, 6});
  EXPECT_THAT(loadError(twice), AllOf(HasSubstr("constants[1].buffer"),
                                      HasSubstr("filled by both")));

  // Two filled buffers sharing bytes would clobber each other.
  PlanBuilder overlap = validPlan();
  uint32_t other = overlap.buffer(DType::F32, {3});
  overlap.plan.mutable_buffers(other)->set_offset(
      overlap.plan.buffers(B).offset() + 4);
  overlap.constantFloats(other, {7, 8, 9});
  EXPECT_THAT(loadError(overlap), AllOf(HasSubstr("overlaps constant 0"),
                                        HasSubstr("in the arena")));
}

/// validPlan plus a second read of "w": the block at `offsets` of `shape`,
/// its columns split over tp, into a buffer of `bufferShape`.
PlanBuilder blockPlan(std::vector<int64_t> offsets, std::vector<int64_t> shape,
                      std::vector<int64_t> bufferShape = {2, 2}) {
  PlanBuilder p = validPlan();
  uint32_t buffer = p.buffer(DType::F32, bufferShape);
  plan::Weight &weight = p.weight("w", buffer, {4, 6}, {{}, {"tp"}});
  for (int64_t offset : offsets)
    weight.add_block_offsets(offset);
  for (int64_t size : shape)
    weight.add_block_shape(size);
  return p;
}

TEST(PlanLoaderTest, WeightBlocks) {
  EXPECT_NO_THROW(load(blockPlan({1, 2}, {2, 4})));
  // The block reaches the last row and column.
  EXPECT_NO_THROW(load(blockPlan({2, 2}, {2, 4})));

  EXPECT_THAT(loadError(blockPlan({1, 2}, {4})),
              AllOf(HasSubstr("weights[1].block_shape"),
                    HasSubstr("has 1 entries for 'w' of rank 2")));
  EXPECT_THAT(loadError(blockPlan({1}, {2, 4})),
              AllOf(HasSubstr("weights[1].block_offsets"),
                    HasSubstr("has 1 entries for 'w' of rank 2")));
  EXPECT_THAT(loadError(blockPlan({-1, 2}, {2, 4})),
              AllOf(HasSubstr("weights[1].block_offsets"),
                    HasSubstr("offset -1 of dimension 0 lies outside size 4 "
                              "of 'w'")));
  EXPECT_THAT(loadError(blockPlan({1, 4}, {2, 4})),
              AllOf(HasSubstr("weights[1].block_shape"),
                    HasSubstr("size 4 of dimension 1 at offset 4 runs past "
                              "size 6 of 'w'")));
  EXPECT_THAT(loadError(blockPlan({3, 0}, {2, 4})),
              AllOf(HasSubstr("weights[1].block_shape"),
                    HasSubstr("size 2 of dimension 0 at offset 3")));
  // An offset + size that overflows is out of bounds, not a crash.
  EXPECT_THAT(loadError(blockPlan({1, 2}, {2, INT64_MAX})),
              HasSubstr("weights[1].block_shape"));
  // The sharding splits the block: 3 columns do not split over tp = 2.
  EXPECT_THAT(loadError(blockPlan({1, 2}, {2, 3})),
              AllOf(HasSubstr("weights[1].sharding"),
                    HasSubstr("dimension 1 of size 3 does not split evenly")));
  // The buffer holds this rank's slice of the block, not of the weight.
  EXPECT_THAT(loadError(blockPlan({0, 0}, {4, 4})),
              AllOf(HasSubstr("weights[1].buffer"),
                    HasSubstr("the shard of 'w' is [4, 2]")));
}

TEST(PlanLoaderTest, Weights) {
  PlanBuilder absent = validPlan();
  absent.plan.mutable_weights(0)->set_name("missing");
  EXPECT_THAT(loadError(absent),
              AllOf(HasSubstr("weights[0].name"), HasSubstr("'missing'"),
                    HasSubstr("test.st")));

  PlanBuilder shape = validPlan();
  shape.plan.mutable_weights(0)->set_full_shape(1, 8);
  EXPECT_THAT(loadError(shape),
              AllOf(HasSubstr("weights[0].full_shape"), HasSubstr("[4, 8]"),
                    HasSubstr("[4, 6]")));

  PlanBuilder dtype = validPlan();
  uint32_t scale = dtype.buffer(DType::F32, {6});
  dtype.weight("scale", scale, {6});
  EXPECT_THAT(loadError(dtype), AllOf(HasSubstr("weights[1].buffer"),
                                      HasSubstr("f16 in the weights file")));

  PlanBuilder axis = validPlan();
  axis.plan.mutable_weights(0)->mutable_sharding(1)->set_axes(0, "dp");
  EXPECT_THAT(loadError(axis),
              AllOf(HasSubstr("weights[0].sharding"), HasSubstr("axis 'dp'")));

  PlanBuilder uneven = validPlan();
  uint32_t table = uneven.buffer(DType::F32, {5, 2});
  uneven.weight("table", table, {5, 4}, {{"tp"}, {}});
  EXPECT_THAT(loadError(uneven),
              AllOf(HasSubstr("weights[1].sharding"),
                    HasSubstr("dimension 0 of size 5 does not split evenly")));

  PlanBuilder shard = validPlan();
  shard.plan.mutable_weights(0)->mutable_sharding(1)->clear_axes();
  EXPECT_THAT(loadError(shard), AllOf(HasSubstr("weights[0].buffer"),
                                      HasSubstr("the shard of 'w' is [4, 6]")));

  LoadOptions noFile = options();
  noFile.weights = nullptr;
  std::string bytes = validPlan().serialize();
  try {
    parsePlan(bytes.data(), bytes.size(), noFile);
    FAIL() << "loaded a plan with weights but no weights file";
  } catch (const PlanError &error) {
    EXPECT_THAT(error.what(), HasSubstr("no weights file was given"));
  }
}

TEST(PlanLoaderTest, Bindings) {
  PlanBuilder missing = validPlan();
  missing.plan.mutable_outputs(0)->set_buffer(77);
  EXPECT_THAT(loadError(missing),
              AllOf(HasSubstr("outputs[0].buffer"), HasSubstr("buffer 77")));

  PlanBuilder twice = validPlan();
  twice.input("x", Y);
  EXPECT_THAT(loadError(twice), AllOf(HasSubstr("inputs[1].name"),
                                      HasSubstr("'x' appears twice")));

  PlanBuilder constant = validPlan();
  constant.input("b", B);
  EXPECT_THAT(loadError(constant), AllOf(HasSubstr("inputs[1].buffer"),
                                         HasSubstr("filled by both")));
}

TEST(PlanLoaderTest, Kernels) {
  PlanBuilder unknown = validPlan();
  kernelAt(unknown, 0, 1).set_op("frobnicate");
  EXPECT_THAT(loadError(unknown),
              AllOf(HasSubstr("streams[0] ('compute').instructions[1]"),
                    HasSubstr("unknown kernel op 'frobnicate'")));

  PlanBuilder constant = validPlan();
  kernelAt(constant, 0, 1).set_op("constant");
  EXPECT_THAT(loadError(constant), HasSubstr("unknown kernel op 'constant'"));

  PlanBuilder arity = validPlan();
  kernelAt(arity, 0, 1).add_inputs(Y);
  EXPECT_THAT(loadError(arity), HasSubstr("add takes 2 inputs, got 3"));

  PlanBuilder buffer = validPlan();
  kernelAt(buffer, 0, 0).set_outputs(0, 99);
  EXPECT_THAT(loadError(buffer),
              AllOf(HasSubstr("instructions[0] (matmul at loc(\"m.mlir\":3:5))"
                              ".outputs[0]"),
                    HasSubstr("buffer 99 does not exist")));

  PlanBuilder attr = validPlan();
  braid::rt::test::setBool(kernelAt(attr, 0, 0), "transpose_middle", true);
  EXPECT_THAT(loadError(attr),
              HasSubstr("matmul has no attribute 'transpose_middle'"));

  PlanBuilder kind = validPlan();
  braid::rt::test::setString(kernelAt(kind, 0, 0), "transpose_rhs", "yes");
  EXPECT_THAT(
      loadError(kind),
      HasSubstr("attribute 'transpose_rhs' must be a bool, got a string"));

  PlanBuilder required = validPlan();
  uint32_t s = required.buffer(DType::F32, {2, 3});
  required.kernel("compute", "softmax", {Y}, {s});
  EXPECT_THAT(loadError(required),
              HasSubstr("softmax needs attribute 'dim' (an integer)"));

  PlanBuilder shapes = validPlan();
  braid::rt::test::setBool(kernelAt(shapes, 0, 0), "transpose_rhs", true);
  EXPECT_THAT(loadError(shapes), HasSubstr("contraction sizes differ"));

  PlanBuilder indices = validPlan();
  plan::IndexExpr *index = kernelAt(indices, 0, 1).add_indices();
  index->add_rank_axes("tp");
  index->add_rank_coefficients(1);
  EXPECT_THAT(loadError(indices),
              HasSubstr("add takes 0 index operands, got 1"));

  PlanBuilder indexAxis = validPlan();
  uint32_t sliced = indexAxis.buffer(DType::F32, {2, 2});
  plan::Kernel &slice = indexAxis.kernel("compute", "slice", {Z}, {sliced});
  braid::rt::test::setInts(slice, "static_offsets", {0, INT64_MIN});
  braid::rt::test::setInts(slice, "static_sizes", {2, 2});
  braid::rt::test::setInts(slice, "static_strides", {1, 1});
  plan::IndexExpr *offset = slice.add_indices();
  offset->add_rank_axes("dp");
  offset->add_rank_coefficients(1);
  EXPECT_THAT(loadError(indexAxis),
              AllOf(HasSubstr(".indices[0].rank_axes[0]"),
                    HasSubstr("axis 'dp' is not in the mesh")));
}

TEST(PlanLoaderTest, InstructionWithoutKind) {
  PlanBuilder p = validPlan();
  p.plan.mutable_streams(1)->add_instructions()->set_location("loc(here)");
  EXPECT_THAT(loadError(p),
              AllOf(HasSubstr("streams[1] ('comm').instructions[2] (no kind at "
                              "loc(here))"),
                    HasSubstr("has no kind")));
}

TEST(PlanLoaderTest, Streams) {
  PlanBuilder twice = validPlan();
  twice.plan.mutable_streams(1)->set_name("compute");
  EXPECT_THAT(loadError(twice), AllOf(HasSubstr("streams[1].name"),
                                      HasSubstr("'compute' appears twice")));
}

TEST(PlanLoaderTest, Collectives) {
  auto collective = [](PlanBuilder &p) -> plan::Collective & {
    return *p.plan.mutable_streams(1)
                ->mutable_instructions(1)
                ->mutable_collective();
  };
  PlanBuilder kind = validPlan();
  collective(kind).set_kind("all_scream");
  EXPECT_THAT(loadError(kind),
              AllOf(HasSubstr("streams[1] ('comm').instructions[1]"),
                    HasSubstr("unknown collective kind 'all_scream'")));

  PlanBuilder axis = validPlan();
  collective(axis).set_axes(0, "pp");
  EXPECT_THAT(
      loadError(axis),
      AllOf(HasSubstr(".axes[0]"), HasSubstr("axis 'pp' is not in the mesh")));

  PlanBuilder dim = validPlan();
  collective(dim).set_dim(0);
  EXPECT_THAT(loadError(dim), AllOf(HasSubstr(".output"),
                                    HasSubstr("should have shape [4, 3]")));

  PlanBuilder range = validPlan();
  collective(range).set_dim(2);
  EXPECT_THAT(loadError(range),
              AllOf(HasSubstr(".dim"), HasSubstr("2 is out of range")));

  PlanBuilder reduction = validPlan();
  collective(reduction).set_kind("all_reduce");
  collective(reduction).set_output(Y);
  EXPECT_THAT(loadError(reduction),
              AllOf(HasSubstr(".reduction"), HasSubstr("'' is not one of")));

  PlanBuilder root = validPlan();
  collective(root).set_kind("broadcast");
  collective(root).set_output(Y);
  collective(root).set_root(2);
  EXPECT_THAT(loadError(root),
              AllOf(HasSubstr(".root"), HasSubstr("outside a group of 2")));

  PlanBuilder split = validPlan();
  collective(split).set_kind("reduce_scatter");
  collective(split).set_reduction("sum");
  collective(split).set_dim(1);
  collective(split).set_output(Y);
  EXPECT_THAT(loadError(split),
              AllOf(HasSubstr(".dim"), HasSubstr("does not split into 2")));

  PlanBuilder dtype = validPlan();
  dtype.plan.mutable_buffers(G)->set_dtype(plan::F16);
  EXPECT_THAT(loadError(dtype), HasSubstr("have different element types"));
}

TEST(PlanLoaderTest, Events) {
  PlanBuilder range = validPlan();
  range.plan.set_num_events(0);
  EXPECT_THAT(loadError(range),
              AllOf(HasSubstr("record_event"),
                    HasSubstr("event 0 is not below num_events 0")));

  PlanBuilder never = validPlan();
  never.wait("comm", never.event());
  EXPECT_THAT(
      loadError(never),
      AllOf(HasSubstr("streams[1] ('comm').instructions[2] (wait_event)"),
            HasSubstr("event 1, which no instruction records")));

  // "comm" waits for what only "compute" records after waiting for "comm".
  PlanBuilder deadlock = validPlan();
  uint32_t first = deadlock.event(), second = deadlock.event();
  deadlock.wait("compute", first);
  deadlock.record("compute", second);
  deadlock.wait("comm", second);
  deadlock.record("comm", first);
  EXPECT_THAT(loadError(deadlock), HasSubstr("(the streams deadlock)"));

  PlanBuilder twice = validPlan();
  twice.record("comm", 0);
  EXPECT_THAT(loadError(twice), HasSubstr("event 0 is recorded 2 times"));

  PlanBuilder many = validPlan();
  many.plan.set_num_events(kMaxEvents + 1);
  EXPECT_THAT(loadError(many), HasSubstr("num_events"));
}

TEST(PlanLoaderTest, TruncatedAndGarbageBytes) {
  // Protobuf logs the invalid UTF-8 that garbage puts in string fields; the
  // loader reports such plans as PlanError.
  std::string bytes = validPlan().serialize();
  LoadOptions opts = options();
  // A prefix may still be a valid (smaller) plan; most are not, and none
  // crashes.
  int rejected = 0;
  for (size_t length = 0; length < bytes.size(); ++length) {
    try {
      parsePlan(bytes.data(), length, opts);
    } catch (const PlanError &) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, static_cast<int>(bytes.size()) * 3 / 4);
  // Cut inside the last stream: the events no longer add up.
  EXPECT_THROW(parsePlan(bytes.data(), bytes.size() - 2, opts), PlanError);

  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string garbage(random() % 512, '\0');
    for (char &c : garbage)
      c = static_cast<char>(random());
    EXPECT_THROW(parsePlan(garbage.data(), garbage.size(), opts), PlanError);
  }
  // Flipping bytes of a valid plan never crashes.
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ (1 + random() % 255));
    try {
      parsePlan(flipped.data(), flipped.size(), opts);
    } catch (const PlanError &) {
    }
  }
}

TEST(PlanLoaderTest, MissingFile) {
  try {
    loadPlanFile("/nonexistent/plan.bplan", options());
    FAIL() << "loaded a missing file";
  } catch (const PlanError &error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot open plan file "
                                        "'/nonexistent/plan.bplan'"));
  }
}

} // namespace
