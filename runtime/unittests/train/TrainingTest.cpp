//===- TrainingTest.cpp - training runs, checkpoints and resuming ---------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// A tiny training plan built from existing kernels runs for a few steps on
// one rank or on two (threads of this process, the table and its moment
// split over tp). Per step, with tokens t and labels l of the batch:
//
//   loss = mean(w[t])          (gather, reduce_mean, all_reduce avg)
//   m    = m * 0.5 + mean(t)   (m: a ZEROS state weight)
//   w    = w - (m * lr) * mean(l)
//
// where w is a state weight read from the weights file and lr a plain
// weight. The tests compare the state and the losses with the same
// arithmetic done here, checkpoints across meshes, and resumed runs with
// uninterrupted ones.
//
//===----------------------------------------------------------------------===//

#include "../plan/PlanBuilder.h"

#include "runtime/comm/ThreadCommunicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/TrainingDevice.h"
#include "runtime/train/TrainingLoop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace braid::rt;
namespace plan = braid::plan;
using namespace braid::rt::test;
using testing::AllOf;
using testing::HasSubstr;

namespace {

constexpr int64_t kVocab = 16, kWidth = 4, kBatch = 2, kSequence = 3;
constexpr float kLearningRate = 0.01f;

/// The training plan for a mesh of `tp` ranks (w and m split by columns).
plan::Plan trainingPlan(int64_t tp) {
  PlanBuilder p({"tp"}, {tp});
  int64_t columns = kWidth / tp;
  uint32_t tokens = p.buffer(DType::I64, {kBatch, kSequence});
  uint32_t labels = p.buffer(DType::I64, {kBatch, kSequence});
  uint32_t w = p.buffer(DType::F32, {kVocab, columns});
  uint32_t m = p.buffer(DType::F32, {kVocab, columns});
  uint32_t lr = p.buffer(DType::F32, {});
  uint32_t beta = p.buffer(DType::F32, {});
  p.input("tokens", tokens);
  p.input("labels", labels);
  p.weight("w", w, {kVocab, kWidth}, {{}, {"tp"}}).set_state(true);
  plan::Weight &moment = p.weight("m", m, {kVocab, kWidth}, {{}, {"tp"}});
  moment.set_init(plan::ZEROS);
  moment.set_state(true);
  p.weight("lr", lr, {});
  p.constantFloats(beta, {0.5f});

  auto scalar = [&] { return p.buffer(DType::F32, {}); };
  auto table = [&] { return p.buffer(DType::F32, {kVocab, columns}); };
  uint32_t tokenFloats = p.buffer(DType::F32, {kBatch, kSequence});
  uint32_t labelFloats = p.buffer(DType::F32, {kBatch, kSequence});
  uint32_t rows = p.buffer(DType::F32, {kBatch, kSequence, columns});
  uint32_t meanTokens = scalar(), meanLabels = scalar(), localLoss = scalar(),
           loss = scalar();
  uint32_t decayed = table(), newM = table(), scaled = table(),
           update = table(), newW = table();
  p.output("loss", loss);
  p.kernel("compute", "cast", {tokens}, {tokenFloats});
  p.kernel("compute", "cast", {labels}, {labelFloats});
  setInts(p.kernel("compute", "reduce_mean", {tokenFloats}, {meanTokens}),
          "dims", {0, 1});
  setInts(p.kernel("compute", "reduce_mean", {labelFloats}, {meanLabels}),
          "dims", {0, 1});
  setInt(p.kernel("compute", "gather", {w, tokens}, {rows}), "axis", 0);
  setInts(p.kernel("compute", "reduce_mean", {rows}, {localLoss}), "dims",
          {0, 1, 2});
  p.collective("compute", "all_reduce", {"tp"}, localLoss, loss)
      .set_reduction("avg");
  p.kernel("compute", "mul", {m, beta}, {decayed});
  p.kernel("compute", "add", {decayed, meanTokens}, {newM});
  p.kernel("compute", "mul", {newM, lr}, {scaled});
  p.kernel("compute", "mul", {scaled, meanLabels}, {update});
  p.kernel("compute", "sub", {w, update}, {newW});
  p.kernel("compute", "copy", {newM}, {m});
  p.kernel("compute", "copy", {newW}, {w});
  plan::Training *training = p.plan.mutable_training();
  training->set_tokens_input("tokens");
  training->set_labels_input("labels");
  training->set_loss_output("loss");
  training->set_batch(kBatch);
  training->set_sequence(kSequence);
  p.plan.set_weights_file("tiny.safetensors");
  return p.plan;
}

std::vector<uint8_t> floatBytesOf(const std::vector<float> &values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> floatsOf(const uint8_t *data, size_t bytes) {
  std::vector<float> values(bytes / 4);
  std::memcpy(values.data(), data, bytes);
  return values;
}

std::vector<float> initialTable() {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> values(kVocab * kWidth);
  for (float &value : values)
    value = uniform(random);
  return values;
}

const SafetensorsFile &tinyWeights() {
  static const SafetensorsFile file = SafetensorsFile::fromBytes(
      encodeSafetensors({{"w", DType::F32, {kVocab, kWidth},
                          floatBytesOf(initialTable())},
                         {"lr", DType::F32, {}, floatBytesOf({kLearningRate})}}),
      "tiny.safetensors");
  return file;
}

/// Random token ids below kVocab, enough for `steps` steps.
std::vector<int64_t> randomIds(int64_t steps, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int64_t> id(0, kVocab - 1);
  std::vector<int64_t> ids(steps * kBatch * kSequence + 1);
  for (int64_t &value : ids)
    value = id(random);
  return ids;
}

TokenFile tokenFile(const std::vector<int64_t> &ids,
                    const std::string &name = "tokens.bin") {
  std::vector<uint8_t> bytes;
  for (int64_t id : ids) {
    bytes.push_back(static_cast<uint8_t>(id & 0xff));
    bytes.push_back(static_cast<uint8_t>(id >> 8));
  }
  return TokenFile::fromBytes(std::move(bytes), TokenFormat::U16, name);
}

LoadedPlan load(const plan::Plan &proto) {
  LoadOptions options;
  options.kernels = &cpuKernels();
  options.worldSize = proto.mesh().axis_sizes(0);
  options.weights = &tinyWeights();
  return validatePlan(proto, options);
}

std::string readFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

/// Each test gets a fresh folder.
class TrainingTest : public testing::Test {
protected:
  void SetUp() override {
    dir = testing::TempDir() + "/braid-training-test-" +
          std::to_string(::getpid()) + "-" +
          testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'")
                              .c_str()),
              0);
  }
  void TearDown() override {
    std::system(("rm -rf '" + dir + "'").c_str());
  }

  /// Trains `plan` on every rank of its mesh (threads); returns rank 0's
  /// summary and fails the test on any rank's error.
  TrainingSummary train(const LoadedPlan &plan, const TokenFile &data,
                        const TrainingOptions &options,
                        const std::string &resume = "") {
    std::vector<std::string> errors = tryTrain(plan, data, options, resume);
    for (size_t rank = 0; rank < errors.size(); ++rank)
      EXPECT_EQ(errors[rank], "") << "rank " << rank;
    return summary;
  }

  /// Like train(); returns each rank's error ("" for none).
  std::vector<std::string> tryTrain(const LoadedPlan &plan,
                                    const TokenFile &data,
                                    const TrainingOptions &options,
                                    const std::string &resume = "") {
    std::optional<SafetensorsFile> resumed;
    if (!resume.empty())
      resumed = SafetensorsFile::open(resume);
    const SafetensorsFile *checkpoint = resumed ? &*resumed : nullptr;
    ThreadWorld world(plan.mesh);
    int64_t ranks = plan.mesh.numRanks();
    std::vector<std::string> errors(ranks);
    std::vector<std::thread> threads;
    for (int64_t rank = 0; rank < ranks; ++rank)
      threads.emplace_back([&, rank] {
        try {
          TrainingRun run(plan, data, options, &tinyWeights(), checkpoint);
          std::unique_ptr<Communicator> comm = world.communicator(rank);
          comm->setTimeout(std::chrono::seconds(20));
          ExecutorOptions executorOptions;
          executorOptions.checkpoint = checkpoint;
          Executor executor(plan, *comm, &tinyWeights(), executorOptions);
          ExecutorDevice device(executor, *comm);
          TrainingSummary result = run.run(device, progress);
          if (rank == 0)
            summary = result;
        } catch (const std::exception &error) {
          errors[rank] = error.what();
          world.abort("rank " + std::to_string(rank) + " failed");
        }
      });
    for (std::thread &thread : threads)
      thread.join();
    return errors;
  }

  TrainingOptions options(int64_t steps, const std::string &lossLog = "",
                          const std::string &save = "") const {
    TrainingOptions result;
    result.steps = steps;
    result.lossLog = lossLog.empty() ? "" : dir + "/" + lossLog;
    result.save = save.empty() ? "" : dir + "/" + save;
    return result;
  }

  std::string dir;
  TrainingSummary summary;
  std::ostringstream progress;
};

/// The losses of a loss log, after checking its header and step numbers.
std::vector<double> lossesOf(const std::string &text, int64_t firstStep) {
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "step,loss");
  std::vector<double> losses;
  for (int64_t step = firstStep; std::getline(lines, line); ++step) {
    size_t comma = line.find(',');
    EXPECT_EQ(line.substr(0, comma), std::to_string(step));
    losses.push_back(std::stod(line.substr(comma + 1)));
  }
  return losses;
}

TEST_F(TrainingTest, StateEvolvesAsComputedByHand) {
  const int64_t steps = 5;
  std::vector<int64_t> ids = randomIds(steps, 3);
  TokenFile data = tokenFile(ids);
  LoadedPlan plan = load(trainingPlan(1));
  summary = train(plan, data, options(steps, "loss.csv", "state.safetensors"));

  // The same arithmetic, step by step.
  std::vector<float> w = initialTable(), m(w.size(), 0.0f);
  std::vector<double> losses;
  for (int64_t step = 0; step < steps; ++step) {
    double sumTokens = 0, sumLabels = 0, sumRows = 0;
    for (int64_t b = 0; b < kBatch; ++b)
      for (int64_t s = 0; s < kSequence; ++s) {
        int64_t at = (step * kBatch + b) * kSequence + s;
        sumTokens += ids[at];
        sumLabels += ids[at + 1];
        for (int64_t c = 0; c < kWidth; ++c)
          sumRows += w[ids[at] * kWidth + c];
      }
    losses.push_back(sumRows / (kBatch * kSequence * kWidth));
    float meanTokens = static_cast<float>(sumTokens / (kBatch * kSequence));
    float meanLabels = static_cast<float>(sumLabels / (kBatch * kSequence));
    for (size_t k = 0; k < w.size(); ++k) {
      m[k] = m[k] * 0.5f + meanTokens;
      w[k] = w[k] - (m[k] * kLearningRate) * meanLabels;
    }
  }

  std::vector<double> logged =
      lossesOf(readFile(dir + "/loss.csv"), /*firstStep=*/0);
  ASSERT_EQ(logged.size(), losses.size());
  for (size_t k = 0; k < losses.size(); ++k)
    EXPECT_NEAR(logged[k], losses[k], 1e-6 * std::fabs(losses[k]) + 1e-7)
        << "step " << k;
  EXPECT_FALSE(exists(dir + "/loss.csv.partial"));

  SafetensorsFile saved = SafetensorsFile::open(dir + "/state.safetensors");
  EXPECT_EQ(saved.metadata().at("braid_step"), "5");
  EXPECT_EQ(saved.metadata().at("braid_format"), "1");
  EXPECT_EQ(saved.metadata().at("braid_weights_file"), "tiny.safetensors");
  ASSERT_EQ(saved.tensors().size(), 2u) << "lr is not state and not saved";
  for (const auto &[name, expected] :
       {std::pair<std::string, std::vector<float> *>{"w", &w}, {"m", &m}}) {
    const SafetensorsTensor *tensor = saved.find(name);
    ASSERT_NE(tensor, nullptr) << name;
    EXPECT_EQ(tensor->shape, (std::vector<int64_t>{kVocab, kWidth}));
    std::vector<float> values =
        floatsOf(saved.data(*tensor), tensor->end - tensor->begin);
    ASSERT_EQ(values.size(), expected->size());
    for (size_t k = 0; k < values.size(); ++k)
      EXPECT_NEAR(values[k], (*expected)[k],
                  1e-5 * std::fabs((*expected)[k]) + 1e-6)
          << name << "[" << k << "]";
  }
  // The state really moved (a test that cannot pass by doing nothing).
  EXPECT_GT(std::fabs(w[0] - initialTable()[0]), 0.1f);

  EXPECT_EQ(summary.firstStep, 0);
  EXPECT_EQ(summary.endStep, steps);
  EXPECT_EQ(summary.checkpoints, 1);
  EXPECT_THAT(summary.format(),
              AllOf(HasSubstr("trained steps 0..4 (5 steps of 6 tokens)"),
                    HasSubstr("peak arena " +
                              std::to_string(plan.proto.arena_bytes()) +
                              " bytes per step"),
                    HasSubstr("read on a second thread")));
}

TEST_F(TrainingTest, ResumeContinuesBitIdentically) {
  std::vector<int64_t> ids = randomIds(8, 11);
  TokenFile data = tokenFile(ids);
  LoadedPlan plan = load(trainingPlan(1));
  // Uninterrupted: 8 steps, a checkpoint every 3 (after 3, 6 and 8).
  summary = train(plan, data, options(8, "full.csv", "full.safetensors"));
  TrainingOptions every = options(8, "", "every.safetensors");
  every.saveEvery = 3;
  train(plan, data, every);
  EXPECT_EQ(summary.checkpoints, 3);
  // Interrupted after 4 steps, resumed to 8.
  train(plan, data, options(4, "first.csv", "half.safetensors"));
  summary = train(plan, data, options(8, "second.csv", "resumed.safetensors"),
                  dir + "/half.safetensors");
  EXPECT_EQ(summary.firstStep, 4);
  EXPECT_EQ(summary.endStep, 8);

  std::string full = readFile(dir + "/full.csv");
  std::string first = readFile(dir + "/first.csv");
  std::string second = readFile(dir + "/second.csv");
  EXPECT_EQ(second.substr(0, 10), "step,loss\n");
  EXPECT_EQ(full, first + second.substr(10)) << "resumed losses differ";
  EXPECT_EQ(lossesOf(second, 4).size(), 4u);
  EXPECT_EQ(readFile(dir + "/resumed.safetensors"),
            readFile(dir + "/full.safetensors"));
  EXPECT_EQ(readFile(dir + "/every.safetensors"),
            readFile(dir + "/full.safetensors"));
  // The checkpoint at step 4 is not the final state.
  EXPECT_NE(readFile(dir + "/half.safetensors"),
            readFile(dir + "/full.safetensors"));
}

TEST_F(TrainingTest, ShardedStateIsSavedWhole) {
  std::vector<int64_t> ids = randomIds(6, 5);
  TokenFile data = tokenFile(ids);
  LoadedPlan one = load(trainingPlan(1)), two = load(trainingPlan(2));
  train(one, data, options(6, "one.csv", "one.safetensors"));
  train(two, data, options(6, "two.csv", "two.safetensors"));
  // Each rank held half of every column block; the file holds them whole,
  // bit for bit as one rank computed them.
  EXPECT_EQ(readFile(dir + "/two.safetensors"),
            readFile(dir + "/one.safetensors"));
  std::vector<double> lossesOne = lossesOf(readFile(dir + "/one.csv"), 0);
  std::vector<double> lossesTwo = lossesOf(readFile(dir + "/two.csv"), 0);
  ASSERT_EQ(lossesTwo.size(), lossesOne.size());
  for (size_t k = 0; k < lossesOne.size(); ++k)
    EXPECT_NEAR(lossesTwo[k], lossesOne[k], 1e-6 * std::fabs(lossesOne[k]));

  // A one-rank checkpoint resumes on two ranks (sliced like the weights).
  train(one, data, options(3, "", "three.safetensors"));
  train(two, data, options(6, "", "resumed.safetensors"),
        dir + "/three.safetensors");
  EXPECT_EQ(readFile(dir + "/resumed.safetensors"),
            readFile(dir + "/one.safetensors"));
}

/// The error of TrainingRun's checks ("" if none).
std::string prepareError(const LoadedPlan &plan, const TokenFile &data,
                         const TrainingOptions &options,
                         const SafetensorsFile *resumed = nullptr) {
  try {
    TrainingRun run(plan, data, options, &tinyWeights(), resumed);
  } catch (const TrainingError &error) {
    return error.what();
  }
  return "";
}

TEST_F(TrainingTest, CheckpointOfAnotherPlanIsRejected) {
  TokenFile data = tokenFile(randomIds(4, 1));
  LoadedPlan plan = load(trainingPlan(1));
  train(plan, data, options(2, "", "good.safetensors"));
  SafetensorsFile good = SafetensorsFile::open(dir + "/good.safetensors");
  EXPECT_EQ(checkCheckpoint(plan, good), 2);

  // Variants of the good checkpoint, each wrong in one way.
  auto variant = [&](std::function<void(std::vector<SafetensorsEntry> &,
                                        std::map<std::string, std::string> &)>
                         change) {
    std::vector<SafetensorsEntry> entries;
    for (const SafetensorsTensor &tensor : good.tensors()) {
      const uint8_t *bytes = good.data(tensor);
      entries.push_back({tensor.name, *tensor.dtype, tensor.shape,
                         std::vector<uint8_t>(bytes, bytes + tensor.end -
                                                         tensor.begin)});
    }
    std::map<std::string, std::string> metadata = good.metadata();
    change(entries, metadata);
    return SafetensorsFile::fromBytes(encodeSafetensors(entries, metadata),
                                      "other.safetensors");
  };
  auto errorOf = [&](const SafetensorsFile &checkpoint) {
    return prepareError(plan, data, options(4), &checkpoint);
  };
  EXPECT_THAT(errorOf(variant([](auto &entries, auto &) {
                entries.erase(entries.begin());
              })),
              AllOf(HasSubstr("checkpoint 'other.safetensors' has no tensor "
                              "'m'"),
                    HasSubstr("a checkpoint of another plan?")));
  EXPECT_THAT(errorOf(variant([](auto &entries, auto &) {
                entries.push_back({"other", DType::F32, {1}, {0, 0, 0, 0}});
              })),
              HasSubstr("holds tensor 'other', which is not a state weight"));
  EXPECT_THAT(errorOf(variant([](auto &entries, auto &) {
                entries[1].shape = {kWidth, kVocab};
              })),
              HasSubstr("tensor 'w' is F32 [4, 16], but the plan's state "
                        "weight is f32 [16, 4]"));
  EXPECT_THAT(errorOf(variant([](auto &entries, auto &) {
                entries[1].dtype = DType::I32;
              })),
              HasSubstr("tensor 'w' is I32 [16, 4]"));
  EXPECT_THAT(errorOf(variant([](auto &, auto &metadata) {
                metadata.erase("braid_step");
              })),
              HasSubstr("has no braid_step in its metadata"));
  EXPECT_THAT(errorOf(variant([](auto &, auto &metadata) {
                metadata["braid_step"] = "2x";
              })),
              HasSubstr("braid_step \"2x\" is not a step number"));
  EXPECT_THAT(errorOf(variant([](auto &, auto &metadata) {
                metadata.clear();
              })),
              HasSubstr("not written by braid-run --save"));
  // Resuming at or after the last step asked for runs nothing.
  EXPECT_THAT(prepareError(plan, data, options(2), &good),
              HasSubstr("resumes at step 2, but --steps 2 ends before it"));
}

TEST_F(TrainingTest, FailingSaveLeavesNoFile) {
  TokenFile data = tokenFile(randomIds(3, 2));
  LoadedPlan plan = load(trainingPlan(1));
  // The checkpoint cannot be created: the run stops before step 0, before
  // the loss log exists.
  std::vector<std::string> errors = tryTrain(
      plan, data, options(3, "loss.csv", "missing/ckpt.safetensors"));
  EXPECT_THAT(errors[0], HasSubstr("cannot create '" + dir +
                                   "/missing/ckpt.safetensors.tmp'"));
  EXPECT_FALSE(exists(dir + "/loss.csv"));
  EXPECT_FALSE(exists(dir + "/loss.csv.partial"));

  // The checkpoint cannot be renamed into place (a folder is there): the
  // temporary is removed, the folder untouched, and the loss log is left
  // only under its .partial name.
  ASSERT_EQ(::mkdir((dir + "/taken").c_str(), 0777), 0);
  errors = tryTrain(plan, data, options(3, "loss.csv", "taken"));
  EXPECT_THAT(errors[0], HasSubstr("cannot rename '" + dir + "/taken.tmp'"));
  EXPECT_FALSE(exists(dir + "/taken.tmp"));
  struct stat info;
  ASSERT_EQ(::stat((dir + "/taken").c_str(), &info), 0);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
  EXPECT_FALSE(exists(dir + "/loss.csv"));
  EXPECT_EQ(lossesOf(readFile(dir + "/loss.csv.partial"), 0).size(), 3u);
}

TEST_F(TrainingTest, DataAndPlanChecks) {
  LoadedPlan plan = load(trainingPlan(1));
  // 10 tokens hold 3 windows of 3 + 1; 2 steps of batch 2 need 4.
  TokenFile shortData = tokenFile(std::vector<int64_t>(10, 1), "short.bin");
  EXPECT_EQ(prepareError(plan, shortData, options(1)), "");
  EXPECT_EQ(prepareError(plan, shortData, options(2)),
            "data file 'short.bin' holds 10 tokens, 3 windows of 3 + 1 "
            "tokens; 2 steps of batch 2 need 4 windows, at least 13 tokens");

  TokenFile data = tokenFile(randomIds(2, 1));
  plan::Plan forward = trainingPlan(1);
  forward.clear_training();
  EXPECT_THAT(prepareError(load(forward), data, options(2)),
              HasSubstr("the plan is not a training plan"));

  TrainingOptions save = options(2, "", "x.safetensors");
  plan::Plan stateless = trainingPlan(1);
  for (plan::Weight &weight : *stateless.mutable_weights())
    weight.set_state(false);
  EXPECT_THAT(prepareError(load(stateless), data, save),
              HasSubstr("--save: the plan has no state weights"));

  // Inputs other than tokens and labels need data.
  PlanBuilder extra;
  extra.plan = trainingPlan(1);
  extra.input("mask", extra.buffer(DType::F32, {2}));
  LoadedPlan masked = load(extra.plan);
  EXPECT_THAT(prepareError(masked, data, options(2)),
              HasSubstr("input 'mask' has no data"));
  TrainingOptions given = options(2);
  given.fixedInputs["mask"] = floatBytesOf({1, 2});
  EXPECT_EQ(prepareError(masked, data, given), "");
  given.fixedInputs["tokens"] = {};
  EXPECT_THAT(prepareError(masked, data, given),
              HasSubstr("input 'tokens' is filled from the data file"));
}

TEST_F(TrainingTest, TokenIdOutsideTheTableIsAnError) {
  // The gather of the embedding table checks its indices: an id >= vocab
  // fails the step with the kernel's message rather than reading past it.
  std::vector<int64_t> ids = randomIds(2, 4);
  ids[7] = kVocab + 4;
  TokenFile data = tokenFile(ids);
  LoadedPlan plan = load(trainingPlan(1));
  std::vector<std::string> errors = tryTrain(plan, data, options(2));
  EXPECT_THAT(errors[0], AllOf(HasSubstr("gather"),
                               HasSubstr("index 20 is out of range for "
                                         "dimension 0 of size 16")));
}

TEST_F(TrainingTest, ProgressLine) {
  TokenFile data = tokenFile(randomIds(3, 9));
  LoadedPlan plan = load(trainingPlan(1));
  TrainingOptions withProgress = options(3);
  withProgress.progress = true;
  train(plan, data, withProgress);
  EXPECT_THAT(progress.str(), AllOf(HasSubstr("\rstep 3/3  loss "),
                                    HasSubstr("tokens/s  ETA 0:00")));
  // Without a terminal, nothing.
  progress.str("");
  train(plan, data, options(3));
  EXPECT_EQ(progress.str(), "");
}

} // namespace
