//===- DTypeTest.cpp - Tests for runtime element types --------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/DType.h"

#include <gtest/gtest.h>

#include <stdexcept>

using braid::rt::byteSize;
using braid::rt::DType;
using braid::rt::parseDType;
using braid::rt::toString;

namespace {

TEST(DTypeTest, ByteSizes) {
  EXPECT_EQ(byteSize(DType::F32), 4u);
  EXPECT_EQ(byteSize(DType::F16), 2u);
  EXPECT_EQ(byteSize(DType::BF16), 2u);
  EXPECT_EQ(byteSize(DType::I64), 8u);
  EXPECT_EQ(byteSize(DType::I32), 4u);
  // Booleans are stored unpacked.
  EXPECT_EQ(byteSize(DType::I1), 1u);
}

TEST(DTypeTest, Names) {
  EXPECT_EQ(toString(DType::F32), "f32");
  EXPECT_EQ(toString(DType::F16), "f16");
  EXPECT_EQ(toString(DType::BF16), "bf16");
  EXPECT_EQ(toString(DType::I64), "i64");
  EXPECT_EQ(toString(DType::I32), "i32");
  EXPECT_EQ(toString(DType::I1), "i1");
}

TEST(DTypeTest, ParsesEveryCanonicalName) {
  EXPECT_EQ(parseDType("f32"), DType::F32);
  EXPECT_EQ(parseDType("f16"), DType::F16);
  EXPECT_EQ(parseDType("bf16"), DType::BF16);
  EXPECT_EQ(parseDType("i64"), DType::I64);
  EXPECT_EQ(parseDType("i32"), DType::I32);
  EXPECT_EQ(parseDType("i1"), DType::I1);
}

TEST(DTypeTest, NameRoundTrips) {
  for (DType type :
       {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::I1})
    EXPECT_EQ(parseDType(toString(type)), type) << toString(type);
}

TEST(DTypeTest, RejectsOtherSpellings) {
  EXPECT_EQ(parseDType(""), std::nullopt);
  EXPECT_EQ(parseDType("F32"), std::nullopt);
  EXPECT_EQ(parseDType("float32"), std::nullopt);
  EXPECT_EQ(parseDType("f32 "), std::nullopt);
  EXPECT_EQ(parseDType("f8"), std::nullopt);
  EXPECT_EQ(parseDType("i8"), std::nullopt);
  EXPECT_EQ(parseDType("bool"), std::nullopt);
}

TEST(DTypeTest, RejectsValuesOutsideTheEnum) {
  auto bogus = static_cast<DType>(42);
  EXPECT_THROW(byteSize(bogus), std::invalid_argument);
  EXPECT_THROW(toString(bogus), std::invalid_argument);
}

} // namespace
