//===- ElementIOTest.cpp - element storage and 16-bit float formats -------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/ElementIO.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace braid::rt;

namespace {

TEST(ElementIOTest, HalfKnownValues) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00); // rounds to inf
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -26)), 0x0000); // below half of 2^-24
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
  EXPECT_EQ(halfToFloat(0x7c00), INFINITY);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  // Ties go to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(ElementIOTest, Bfloat16KnownValues) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80); // tie
  EXPECT_EQ(floatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBfloat16(NAN))));
  EXPECT_EQ(bfloat16ToFloat(floatToBfloat16(INFINITY)), INFINITY);
}

TEST(ElementIOTest, StoringRoundsLikeTheReference) {
  std::mt19937 random(3);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (int trial = 0; trial < 20000; ++trial) {
    double value = std::ldexp(uniform(random), trial % 60 - 30);
    for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
      uint8_t storage[4];
      storeFloat(dtype, storage, 0, value);
      double stored = loadFloat(dtype, storage, 0);
      EXPECT_EQ(stored, ref::roundTo(dtype, value))
          << toString(dtype) << " " << value;
    }
  }
}

TEST(ElementIOTest, IntegersAndBooleans) {
  uint8_t storage[8];
  storeInt(DType::I32, storage, 0, (int64_t(1) << 32) + 5); // wraps
  EXPECT_EQ(loadInt(DType::I32, storage, 0), 5);
  storeInt(DType::I1, storage, 1, 7);
  EXPECT_EQ(storage[1], 1);
  storage[2] = 9; // any non-zero byte reads as true
  EXPECT_EQ(loadInt(DType::I1, storage, 2), 1);
  storeInt(DType::I64, storage, 0, -3);
  EXPECT_EQ(loadInt(DType::I64, storage, 0), -3);
}

TEST(ElementIOTest, TensorRoundTripAndShapeCheck) {
  ref::Tensor t = ref::Tensor::ofFloats(DType::BF16, {2, 2}, {1, -2, 0.5, 3});
  std::vector<uint8_t> storage(8);
  writeTensor(t, DType::BF16, {2, 2}, storage.data());
  ref::Tensor back = readTensor(DType::BF16, {2, 2}, storage.data());
  EXPECT_EQ(back.f, t.f);
  EXPECT_THROW(writeTensor(t, DType::BF16, {4}, storage.data()),
               std::invalid_argument);
  EXPECT_THROW(writeTensor(t, DType::F16, {2, 2}, storage.data()),
               std::invalid_argument);
}

} // namespace
