//===- TokenDataTest.cpp - token files, windows and the shuffle -----------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/TokenData.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

using namespace braid::rt;
using testing::AllOf;
using testing::HasSubstr;

namespace {

/// uint16 little-endian bytes of `ids`.
std::vector<uint8_t> u16Bytes(const std::vector<int64_t> &ids) {
  std::vector<uint8_t> bytes;
  for (int64_t id : ids) {
    bytes.push_back(static_cast<uint8_t>(id & 0xff));
    bytes.push_back(static_cast<uint8_t>(id >> 8));
  }
  return bytes;
}

std::vector<int64_t> i64Values(const std::vector<uint8_t> &bytes) {
  std::vector<int64_t> values(bytes.size() / 8);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

std::vector<int32_t> i32Values(const std::vector<uint8_t> &bytes) {
  std::vector<int32_t> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

std::string errorOf(const std::function<void()> &action) {
  try {
    action();
  } catch (const TrainingError &error) {
    return error.what();
  }
  return "";
}

TEST(TokenDataTest, ReadsLittleEndianIds) {
  TokenFile u16 =
      TokenFile::fromBytes({0x34, 0x12, 0xff, 0xff}, TokenFormat::U16);
  ASSERT_EQ(u16.size(), 2);
  EXPECT_EQ(u16.token(0), 0x1234);
  EXPECT_EQ(u16.token(1), 65535);
  TokenFile i32 = TokenFile::fromBytes({0x78, 0x56, 0x34, 0x12, 0xff, 0xff,
                                        0xff, 0xff},
                                       TokenFormat::I32);
  ASSERT_EQ(i32.size(), 2);
  EXPECT_EQ(i32.token(0), 0x12345678);
  EXPECT_EQ(i32.token(1), -1);
  EXPECT_THAT(errorOf([] {
                TokenFile::fromBytes({1, 2, 3}, TokenFormat::U16, "odd.bin");
              }),
              AllOf(HasSubstr("'odd.bin' has 3 bytes"),
                    HasSubstr("not a whole number of uint16")));
  EXPECT_THAT(errorOf([] {
                TokenFile::open("/nonexistent/tokens.bin", TokenFormat::U16);
              }),
              HasSubstr("cannot open data file '/nonexistent/tokens.bin'"));
}

TEST(TokenDataTest, WindowsOverlapByOneToken) {
  // S + 1 tokens per window at stride S: T tokens hold (T - 1) / S.
  EXPECT_EQ(availableWindows(0, 4), 0);
  EXPECT_EQ(availableWindows(4, 4), 0);
  EXPECT_EQ(availableWindows(5, 4), 1);
  EXPECT_EQ(availableWindows(8, 4), 1);
  EXPECT_EQ(availableWindows(9, 4), 2);
  EXPECT_EQ(availableWindows(1001, 10), 100);
}

TEST(TokenDataTest, BatchesFollowTheWindowFormula) {
  // tokens[i] = 100 + i; batch 2, sequence 3: step 1 row 1 is window 3.
  std::vector<int64_t> ids(20);
  std::iota(ids.begin(), ids.end(), 100);
  TokenFile file = TokenFile::fromBytes(u16Bytes(ids), TokenFormat::U16);
  WindowOrder order(availableWindows(file.size(), 3), std::nullopt);
  ASSERT_EQ(order.windows(), 6);
  Batch batch;
  fillBatch(file, order, 1, 2, 3, {DType::I64, DType::I32}, batch);
  EXPECT_EQ(i64Values(batch.tokens),
            (std::vector<int64_t>{106, 107, 108, 109, 110, 111}));
  EXPECT_EQ(i32Values(batch.labels),
            (std::vector<int32_t>{107, 108, 109, 110, 111, 112}));
  // Step 3 would need windows 6 and 7.
  EXPECT_THAT(errorOf([&] {
                fillBatch(file, order, 3, 2, 3, {}, batch);
              }),
              HasSubstr("step 3 row 0 needs window 6, but the file holds 6"));
}

TEST(TokenDataTest, NegativeIdsAreRejected) {
  TokenFile file = TokenFile::fromBytes(
      {1, 0, 0, 0, 2, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff}, TokenFormat::I32,
      "ids.bin");
  WindowOrder order(availableWindows(file.size(), 2), std::nullopt);
  Batch batch;
  EXPECT_THAT(errorOf([&] {
                fillBatch(file, order, 0, 1, 2, {}, batch);
              }),
              HasSubstr("'ids.bin': token 2 is -2"));
}

TEST(TokenDataTest, ShuffleIsASeededPermutation) {
  for (int64_t windows : {1, 2, 3, 7, 16, 17, 64, 1000}) {
    WindowOrder order(windows, 42);
    std::vector<int64_t> seen;
    for (int64_t i = 0; i < windows; ++i)
      seen.push_back(order.window(i));
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(windows);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(seen, all) << windows << " windows";
  }
  // The documented algorithm (runtime/README.md), computed by its Python
  // transcription there.
  WindowOrder ten(10, 1);
  std::vector<int64_t> first;
  for (int64_t i = 0; i < 10; ++i)
    first.push_back(ten.window(i));
  EXPECT_EQ(first, (std::vector<int64_t>{1, 3, 7, 5, 8, 2, 9, 0, 4, 6}));
  WindowOrder thousand(1000, 12345);
  std::vector<int64_t> head;
  for (int64_t i = 0; i < 8; ++i)
    head.push_back(thousand.window(i));
  EXPECT_EQ(head,
            (std::vector<int64_t>{950, 284, 977, 927, 544, 248, 656, 713}));
  // Another seed, another order; no seed, the identity.
  WindowOrder other(1000, 12346), identity(1000, std::nullopt);
  int64_t same = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    same += thousand.window(i) == other.window(i);
    EXPECT_EQ(identity.window(i), i);
  }
  EXPECT_LT(same, 20);
}

TEST(TokenDataTest, ShuffledBatchesReadTheirWindows) {
  std::vector<int64_t> ids(41);
  std::iota(ids.begin(), ids.end(), 0);
  TokenFile file = TokenFile::fromBytes(u16Bytes(ids), TokenFormat::U16);
  WindowOrder order(availableWindows(file.size(), 4), 1);
  ASSERT_EQ(order.windows(), 10);
  Batch batch;
  fillBatch(file, order, 0, 2, 4, {DType::I64, DType::I64}, batch);
  // Reads 0 and 1 use windows 1 and 3 (see the pinned order above).
  EXPECT_EQ(i64Values(batch.tokens),
            (std::vector<int64_t>{4, 5, 6, 7, 12, 13, 14, 15}));
  EXPECT_EQ(i64Values(batch.labels),
            (std::vector<int64_t>{5, 6, 7, 8, 13, 14, 15, 16}));
}

} // namespace
