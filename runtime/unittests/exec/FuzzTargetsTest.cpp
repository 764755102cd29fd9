//===- FuzzTargetsTest.cpp - the fuzz entry points and their finds --------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The entry points reject bad input quietly and go all the way through good
// input. Every failing input the fuzzers found is replayed from
// runtime/unittests/exec/fuzz-regressions/ (plan-* through fuzzLoadPlan,
// weights-* through fuzzLoadWeights); a crash there fails the test binary,
// and the sanitizer build (scripts/sanitize.sh) also catches the undefined
// behaviour some of them had.
//
//===----------------------------------------------------------------------===//

#include "../plan/PlanBuilder.h"

#include "runtime/exec/FuzzTargets.h"
#include "runtime/weights/Safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

using namespace braid::rt;
using namespace braid::rt::test;

namespace {

int runPlan(const std::string &bytes) {
  return fuzzLoadPlan(reinterpret_cast<const uint8_t *>(bytes.data()),
                      bytes.size());
}

int runWeights(const std::vector<uint8_t> &bytes) {
  return fuzzLoadWeights(bytes.data(), bytes.size());
}

TEST(FuzzTargetsTest, PlanTargetRejectsQuietlyAndRunsValidPlans) {
  // "w" and "b" are the target's own weights; "e" gets a made-up tensor.
  PlanBuilder p({"x", "y"}, {2, 2});
  uint32_t w = p.buffer(DType::F32, {2, 4});
  uint32_t b = p.buffer(DType::F32, {4});
  uint32_t y = p.buffer(DType::F32, {2, 4});
  uint32_t g = p.buffer(DType::F32, {4, 4});
  uint32_t e = p.buffer(DType::BF16, {3, 1});
  p.weight("w", w, {4, 4}, {{"y"}, {}});
  p.weight("b", b, {4});
  p.weight("e", e, {3, 2}, {{}, {"x"}});
  p.kernel("compute", "add", {w, b}, {y});
  uint32_t ready = p.event();
  p.record("compute", ready);
  p.wait("comm", ready);
  p.collective("comm", "all_gather", {"y"}, y, g).set_dim(0);
  EXPECT_EQ(runPlan(p.serialize()), 0);
  EXPECT_EQ(runPlan(std::string("\x0a\xff\xff\x01\x12", 5)), 0);
  EXPECT_EQ(fuzzLoadPlan(nullptr, 0), 0);
}

TEST(FuzzTargetsTest, WeightsTargetRejectsQuietlyAndChecksShards) {
  std::vector<SafetensorsEntry> entries(3);
  std::vector<uint8_t> ramp(4 * 6 * 2);
  for (size_t i = 0; i < ramp.size(); ++i)
    ramp[i] = static_cast<uint8_t>(i);
  entries[0] = {"even", DType::BF16, {4, 6}, ramp};
  entries[1] = {"odd", DType::I1, {3, 2}, {0, 1, 1, 0, 1, 1}};
  entries[2] = {"scalar", DType::I64, {}, std::vector<uint8_t>(8, 7)};
  EXPECT_EQ(runWeights(encodeSafetensors(entries)), 0);
  EXPECT_EQ(runWeights({1, 2, 3}), 0);
  EXPECT_EQ(runWeights({2, 0, 0, 0, 0, 0, 0, 0, '{', '}'}), 0);
}

/// Replays every failing input found so far.
TEST(FuzzTargetsTest, FoundInputsNoLongerFail) {
  namespace fs = std::filesystem;
  fs::path folder = fs::path(BRAID_FUZZ_REGRESSIONS_DIR);
  ASSERT_TRUE(fs::is_directory(folder)) << folder;
  int replayed = 0;
  for (const fs::directory_entry &entry : fs::directory_iterator(folder)) {
    std::string name = entry.path().filename().string();
    std::ifstream file(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                               std::istreambuf_iterator<char>());
    SCOPED_TRACE(name);
    if (name.rfind("plan-", 0) == 0) {
      EXPECT_EQ(fuzzLoadPlan(bytes.data(), bytes.size()), 0);
      ++replayed;
    } else if (name.rfind("weights-", 0) == 0) {
      EXPECT_EQ(fuzzLoadWeights(bytes.data(), bytes.size()), 0);
      ++replayed;
    }
  }
  RecordProperty("replayed", replayed);
}

} // namespace
