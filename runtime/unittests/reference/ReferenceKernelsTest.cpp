//===- ReferenceKernelsTest.cpp - Tests for the reference kernels ---------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Two kinds of checks. Small cases whose expected numbers are worked out by
// hand (the arithmetic is in the comments; transcendental values are written
// out to 16 digits), never recomputed with the formula under test. And
// properties on random data that tie kernels together: attention against
// matmul + softmax, blockwise attention + merge against attention over all
// keys, causal offsets against explicit masks, GQA against repeated K/V,
// MoE dispatch + combine against a multiple of the input.
//
//===----------------------------------------------------------------------===//

#include "runtime/reference/ReferenceKernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using braid::rt::DType;
using namespace braid::rt::ref;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Relative error allowed when an f32 result is compared with the exact
/// value: rounding to f32 is off by at most 2^-24 ~ 6e-8 relative.
constexpr double kF32RoundTol = 1e-7;

/// Absolute error allowed between two f32 computations of the same value
/// that round intermediates differently (values of order 1, a few roundings).
constexpr double kF32PathTol = 2e-6;

/// Expects `actual` to be `exact` rounded to f32 (within half an ulp).
void expectF32(double actual, double exact) {
  EXPECT_NEAR(actual, exact, std::abs(exact) * kF32RoundTol + 1e-30)
      << "exact " << exact;
}

/// Expects elementwise closeness; equal infinities count as equal.
void expectAllClose(const std::vector<double> &actual,
                    const std::vector<double> &expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t k = 0; k < actual.size(); ++k) {
    if (actual[k] == expected[k])
      continue;
    EXPECT_NEAR(actual[k], expected[k], tolerance) << "at element " << k;
  }
}

/// Expects `t` to be an f32 tensor of `shape` holding `exact` rounded to f32.
void expectF32Tensor(const Tensor &t, const std::vector<int64_t> &shape,
                     const std::vector<double> &exact) {
  EXPECT_EQ(t.dtype, DType::F32);
  EXPECT_EQ(t.shape, shape);
  ASSERT_EQ(t.f.size(), exact.size());
  for (size_t k = 0; k < exact.size(); ++k) {
    SCOPED_TRACE("element " + std::to_string(k));
    expectF32(t.f[k], exact[k]);
  }
}

/// Runs `fn` and returns the message of the std::invalid_argument it throws,
/// or "<no exception>" so that message checks fail when nothing is thrown.
template <typename Fn> std::string invalidArgumentMessage(Fn fn) {
  try {
    fn();
  } catch (const std::invalid_argument &error) {
    return error.what();
  }
  return "<no exception>";
}

Tensor f32(std::vector<int64_t> shape, std::vector<double> values) {
  return Tensor::ofFloats(DType::F32, std::move(shape), std::move(values));
}
Tensor i64(std::vector<int64_t> shape, std::vector<int64_t> values) {
  return Tensor::ofInts(DType::I64, std::move(shape), std::move(values));
}
Tensor i1(std::vector<int64_t> shape, std::vector<int64_t> values) {
  return Tensor::ofInts(DType::I1, std::move(shape), std::move(values));
}
Tensor scalarF32(double value) { return f32({}, {value}); }

/// Uniform(-1, 1) f32 tensor from a fixed seed: never zeros, reproducible.
Tensor randomF32(std::vector<int64_t> shape, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  std::vector<double> values(count);
  for (double &value : values)
    value = uniform(engine);
  return f32(std::move(shape), std::move(values));
}

//===----------------------------------------------------------------------===//
// Tensor and rounding
//===----------------------------------------------------------------------===//

TEST(ReferenceTensorTest, ConstructionAndAccess) {
  Tensor z = Tensor::zeros(DType::I32, {2, 3});
  EXPECT_FALSE(z.isFloat());
  EXPECT_EQ(z.numElements(), 6);
  EXPECT_THAT(z.i, ElementsAre(0, 0, 0, 0, 0, 0));
  Tensor s = scalarF32(2.5);
  EXPECT_EQ(s.numElements(), 1);
  EXPECT_EQ(s.at(0), 2.5);
  Tensor b = i1({2}, {1, 0});
  EXPECT_EQ(b.intAt(0), 1);
  EXPECT_EQ(b.at(1), 0.0);
  // ofFloats rounds: 0.1 in f32 is 0.100000001490116119384765625.
  EXPECT_EQ(f32({1}, {0.1}).f[0], 0.100000001490116119384765625);

  EXPECT_THAT(invalidArgumentMessage([] {
                f32({2, 2}, {1, 2, 3});
              }),
              HasSubstr("Tensor::ofFloats: 3 values for shape [2, 2]"));
  EXPECT_THAT(invalidArgumentMessage([] { i1({1}, {2}); }),
              HasSubstr("i1 value 2 is not 0 or 1"));
  EXPECT_THAT(invalidArgumentMessage(
                  [] { Tensor::ofInts(DType::I32, {1}, {1ll << 31}); }),
              HasSubstr("does not fit in i32"));
  EXPECT_THAT(
      invalidArgumentMessage([] { Tensor::ofFloats(DType::I64, {1}, {1}); }),
      HasSubstr("i64 is not a floating type"));
  EXPECT_THAT(invalidArgumentMessage([&] { s.at(1); }),
              HasSubstr("out of range"));
  EXPECT_THAT(invalidArgumentMessage([&] { s.intAt(0); }),
              HasSubstr("holds floats"));
}

TEST(ReferenceRoundingTest, KnownValues) {
  // 1/3 = 0.0101...b. bf16 keeps 8 significant bits: 1.0101011b * 2^-2 with
  // the rest (0101...) below half, so 171/512 = 0.333984375.
  EXPECT_EQ(roundTo(DType::BF16, 1.0 / 3), 0.333984375);
  EXPECT_EQ(roundTo(DType::BF16, -1.0 / 3), -0.333984375);
  // f16 keeps 11: 1365/4096 = 0.333251953125.
  EXPECT_EQ(roundTo(DType::F16, 1.0 / 3), 0.333251953125);
  // f32 keeps 24: 11184811 / 2^25.
  EXPECT_EQ(roundTo(DType::F32, 1.0 / 3), 11184811.0 / 33554432.0);
  // Ties to even: 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7 -> 1;
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6 -> 1 + 2^-6.
  EXPECT_EQ(roundTo(DType::BF16, 1 + 0x1p-8), 1.0);
  EXPECT_EQ(roundTo(DType::BF16, 1 + 3 * 0x1p-8), 1 + 0x1p-6);
  // Just above the tie rounds up; through f32 it would first round to the
  // tie and then to 1 (double rounding).
  EXPECT_EQ(roundTo(DType::BF16, 1 + 0x1p-8 + 0x1p-40), 1 + 0x1p-7);
  // f16 at 2048 has spacing 2: 2049 -> 2048 (even), 2051 -> 2052.
  EXPECT_EQ(roundTo(DType::F16, 2049), 2048.0);
  EXPECT_EQ(roundTo(DType::F16, 2051), 2052.0);
  // f16 overflow: the largest finite is 65504, the next step would be 65536;
  // 65519 rounds down, 65520 is the tie and rounds to even, i.e. infinity.
  EXPECT_EQ(roundTo(DType::F16, 65519), 65504.0);
  EXPECT_EQ(roundTo(DType::F16, 65520), kInf);
  EXPECT_EQ(roundTo(DType::F16, -70000), -kInf);
  // f16 subnormals are multiples of 2^-24: 2^-25 is a tie -> 0, 0.75 * 2^-24
  // -> 2^-24, 5 * 2^-26 = 1.25 * 2^-24 -> 2^-24.
  EXPECT_EQ(roundTo(DType::F16, 0x1p-25), 0.0);
  EXPECT_EQ(roundTo(DType::F16, 0.75 * 0x1p-24), 0x1p-24);
  EXPECT_EQ(roundTo(DType::F16, 5 * 0x1p-26), 0x1p-24);
  // bf16 has f32's exponent range: 1e38 stays finite, 3.5e38 overflows
  // (largest finite is (2 - 2^-7) * 2^127 ~ 3.39e38).
  EXPECT_EQ(roundTo(DType::BF16, 3.5e38), kInf);
  EXPECT_TRUE(std::isfinite(roundTo(DType::BF16, 1e38)));
  EXPECT_TRUE(std::isnan(roundTo(DType::F16, kNaN)));
  EXPECT_EQ(roundTo(DType::BF16, -kInf), -kInf);
  EXPECT_TRUE(std::signbit(roundTo(DType::F16, -0x1p-30)));
  EXPECT_THAT(invalidArgumentMessage([] { roundTo(DType::I32, 1); }),
              HasSubstr("roundTo: i32 is not a floating type"));
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST(ReferenceUnaryTest, FloatKinds) {
  auto one = [](UnaryKind kind, double x) {
    return unary(kind, scalarF32(x)).f[0];
  };
  expectF32(one(UnaryKind::Neg, 1.5), -1.5);
  expectF32(one(UnaryKind::Exp, 1), 2.718281828459045);
  expectF32(one(UnaryKind::Log, 2), 0.6931471805599453);
  expectF32(one(UnaryKind::Sqrt, 2), 1.4142135623730951);
  expectF32(one(UnaryKind::Rsqrt, 4), 0.5);
  expectF32(one(UnaryKind::Tanh, 0.5), 0.46211715726000974);
  expectF32(one(UnaryKind::Erf, 0.5), 0.5204998778130465);
  expectF32(one(UnaryKind::Sigmoid, 2), 0.8807970779778823);
  // silu(2) = 2 * sigmoid(2).
  expectF32(one(UnaryKind::Silu, 2), 1.7615941559557646);
  EXPECT_EQ(one(UnaryKind::Relu, -3), 0.0);
  EXPECT_EQ(one(UnaryKind::Relu, 3), 3.0);
  // Exact GELU: 0.5 * 1 * (1 + erf(1/sqrt 2)) = Phi(1).
  expectF32(one(UnaryKind::Gelu, 1), 0.8413447460685429);
  expectF32(one(UnaryKind::Gelu, -1), -0.15865525393145707);
  // tanh form: 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)).
  expectF32(one(UnaryKind::GeluTanh, 1), 0.8411919906082768);
  expectF32(one(UnaryKind::GeluTanh, -1), -0.15880800939172324);
}

TEST(ReferenceUnaryTest, RoundsToElementTypeAndHandlesIntegers) {
  // exp(1) in bf16: 2.71828 = 10.1011011111...b -> 8 bits 10.101110b = 2.71875.
  Tensor e = unary(UnaryKind::Exp, Tensor::ofFloats(DType::BF16, {1}, {1}));
  EXPECT_EQ(e.dtype, DType::BF16);
  EXPECT_EQ(e.f[0], 2.71875);
  Tensor n =
      unary(UnaryKind::Neg, Tensor::ofInts(DType::I32, {2}, {INT32_MIN, -5}));
  // -INT32_MIN wraps to itself.
  EXPECT_THAT(n.i, ElementsAre(INT32_MIN, 5));
  EXPECT_THAT(unary(UnaryKind::Relu, i64({3}, {-2, 0, 7})).i,
              ElementsAre(0, 0, 7));
  EXPECT_THAT(
      invalidArgumentMessage([] { unary(UnaryKind::Exp, i64({1}, {1})); }),
      HasSubstr("unary exp: needs a floating tensor, got i64"));
}

TEST(ReferenceBinaryTest, BroadcastRules) {
  // [2, 1] + [3] -> [2, 3]: rows 10 and 20 plus columns 1, 2, 3.
  Tensor sum =
      binary(BinaryKind::Add, f32({2, 1}, {10, 20}), f32({3}, {1, 2, 3}));
  EXPECT_EQ(sum.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_THAT(sum.f, ElementsAre(11, 12, 13, 21, 22, 23));
  // [3, 1, 2] * [4, 1] -> [3, 4, 2]; element (i, j, k) = a[i, 0, k] * b[j].
  Tensor a = f32({3, 1, 2}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({4, 1}, {1, 10, 100, 1000});
  Tensor product = binary(BinaryKind::Mul, a, b);
  EXPECT_EQ(product.shape, (std::vector<int64_t>{3, 4, 2}));
  EXPECT_EQ(product.f[0], 1);                    // (0, 0, 0): 1 * 1
  EXPECT_EQ(product.f[3], 20);                   // (0, 1, 1): 2 * 10
  EXPECT_EQ(product.f[2 * 8 + 3 * 2 + 1], 6000); // (2, 3, 1): 6 * 1000
  // A scalar broadcasts to anything.
  EXPECT_THAT(binary(BinaryKind::Sub, f32({2}, {5, 7}), scalarF32(1)).f,
              ElementsAre(4, 6));
  EXPECT_THAT(invalidArgumentMessage([] {
                binary(BinaryKind::Add, f32({2, 3}, {1, 2, 3, 4, 5, 6}),
                       f32({4}, {1, 2, 3, 4}));
              }),
              HasSubstr("binary add: shapes [2, 3] and [4] do not broadcast"));
  EXPECT_THAT(invalidArgumentMessage([] {
                binary(BinaryKind::Add, f32({1}, {1}), i64({1}, {1}));
              }),
              HasSubstr("different element types: f32 and i64"));
}

TEST(ReferenceBinaryTest, KindsAndElementTypes) {
  Tensor x = f32({3}, {2, -3, 0.5}), y = f32({3}, {3, 2, -1});
  EXPECT_EQ(binary(BinaryKind::Div, x, y).f[1], -1.5);
  // 2^3 = 8, (-3)^2 = 9, 0.5^-1 = 2.
  EXPECT_THAT(binary(BinaryKind::Pow, x, y).f, ElementsAre(8, 9, 2));
  EXPECT_THAT(binary(BinaryKind::Max, x, y).f, ElementsAre(3, 2, 0.5));
  EXPECT_THAT(binary(BinaryKind::Min, x, y).f, ElementsAre(2, -3, -1));
  EXPECT_TRUE(
      std::isnan(binary(BinaryKind::Max, scalarF32(kNaN), scalarF32(1)).f[0]));
  // bf16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 and rounds to 1.
  Tensor one = Tensor::ofFloats(DType::BF16, {1}, {1});
  Tensor tiny = Tensor::ofFloats(DType::BF16, {1}, {0x1p-8});
  EXPECT_EQ(binary(BinaryKind::Add, one, tiny).f[0], 1.0);
  // Integers divide toward zero; i32 wraps.
  EXPECT_THAT(binary(BinaryKind::Div, i64({2}, {-7, 7}), i64({2}, {2, -2})).i,
              ElementsAre(-3, -3));
  Tensor big = Tensor::ofInts(DType::I32, {1}, {INT32_MAX});
  Tensor unit = Tensor::ofInts(DType::I32, {1}, {1});
  EXPECT_THAT(binary(BinaryKind::Add, big, unit).i, ElementsAre(INT32_MIN));
  EXPECT_THAT(binary(BinaryKind::Pow, i64({2}, {3, 2}), i64({2}, {4, -1})).i,
              ElementsAre(81, 0));
  EXPECT_THAT(invalidArgumentMessage([] {
                binary(BinaryKind::Div, i64({1}, {1}), i64({1}, {0}));
              }),
              HasSubstr("binary div: integer division by zero"));
}

TEST(ReferenceCompareSelectTest, CompareAndSelect) {
  // [3] vs [2, 1] -> [2, 3]: row 0 compares 1, 2, 3 with 2; row 1 with 3.
  Tensor lt =
      compare(CompareKind::LT, i64({3}, {1, 2, 3}), i64({2, 1}, {2, 3}));
  EXPECT_EQ(lt.dtype, DType::I1);
  EXPECT_EQ(lt.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_THAT(lt.i, ElementsAre(1, 0, 0, 1, 1, 0));
  Tensor ge = compare(CompareKind::GE, i64({3}, {1, 2, 3}), i64({1}, {2}));
  EXPECT_THAT(ge.i, ElementsAre(0, 1, 1));
  // NaN is unequal to everything, itself included.
  Tensor nan = f32({2}, {kNaN, 1});
  EXPECT_THAT(compare(CompareKind::EQ, nan, nan).i, ElementsAre(0, 1));
  EXPECT_THAT(compare(CompareKind::NE, nan, nan).i, ElementsAre(1, 0));
  EXPECT_THAT(compare(CompareKind::LE, nan, nan).i, ElementsAre(0, 1));

  // Condition [2, 1] picks whole rows; false value is a scalar.
  Tensor picked =
      select(i1({2, 1}, {1, 0}), f32({2, 2}, {1, 2, 3, 4}), scalarF32(-kInf));
  EXPECT_EQ(picked.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_THAT(picked.f, ElementsAre(1, 2, -kInf, -kInf));
  EXPECT_THAT(invalidArgumentMessage(
                  [] { select(i64({1}, {1}), scalarF32(1), scalarF32(2)); }),
              HasSubstr("select: condition must be i1, got i64"));
  EXPECT_THAT(invalidArgumentMessage([] {
                select(i1({3}, {1, 0, 1}), f32({2}, {1, 2}), scalarF32(0));
              }),
              HasSubstr("condition shape [3] does not broadcast with value "
                        "shape [2]"));
}

TEST(ReferenceCastTest, Rules) {
  Tensor x = f32({5}, {2.7, -2.7, -0.5, 0.1, -0.0});
  // Toward zero: 2, -2, 0, 0, 0.
  EXPECT_THAT(cast(x, DType::I32).i, ElementsAre(2, -2, 0, 0, 0));
  EXPECT_EQ(cast(x, DType::I32).dtype, DType::I32);
  // != 0: -0.0 is zero.
  EXPECT_THAT(cast(x, DType::I1).i, ElementsAre(1, 1, 1, 1, 0));
  // i64 -> i32 keeps the low 32 bits: 2^32 + 5 -> 5, 2^32 - 1 -> -1.
  EXPECT_THAT(cast(i64({2}, {(1ll << 32) + 5, (1ll << 32) - 1}), DType::I32).i,
              ElementsAre(5, -1));
  EXPECT_THAT(cast(i64({3}, {0, -4, 9}), DType::I1).i, ElementsAre(0, 1, 1));
  EXPECT_THAT(cast(i1({2}, {1, 0}), DType::F32).f, ElementsAre(1.0, 0.0));
  // f32 1/3 (0.3333333432674408) -> bf16 0.333984375.
  Tensor third = cast(f32({1}, {1.0 / 3}), DType::BF16);
  EXPECT_EQ(third.dtype, DType::BF16);
  EXPECT_EQ(third.f[0], 0.333984375);
  // 2^24 + 1 is not an f32: ties to even 2^24.
  EXPECT_EQ(cast(i64({1}, {16777217}), DType::F32).f[0], 16777216.0);
  EXPECT_THAT(invalidArgumentMessage([] { cast(f32({1}, {3e9}), DType::I32); }),
              HasSubstr("cast: value 3000000000.000000 is out of range for "
                        "i32"));
  EXPECT_THAT(
      invalidArgumentMessage([] { cast(f32({1}, {kNaN}), DType::I64); }),
      HasSubstr("out of range for i64"));
}

//===----------------------------------------------------------------------===//
// Contractions, reductions, normalizations
//===----------------------------------------------------------------------===//

TEST(ReferenceMatmulTest, HandComputed) {
  // [[1, 2, 3], [4, 5, 6]] x [[7, 8], [9, 10], [11, 12]]:
  //   1*7 + 2*9 + 3*11 = 58,  1*8 + 2*10 + 3*12 = 64,
  //   4*7 + 5*9 + 6*11 = 139, 4*8 + 5*10 + 6*12 = 154.
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor c = matmul(a, b, false, false);
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_THAT(c.f, ElementsAre(58, 64, 139, 154));
  // The same product from stored transposes.
  Tensor aT = f32({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor bT = f32({2, 3}, {7, 9, 11, 8, 10, 12});
  EXPECT_THAT(matmul(aT, bT, true, true).f, ElementsAre(58, 64, 139, 154));
  EXPECT_THAT(matmul(a, bT, false, true).f, ElementsAre(58, 64, 139, 154));
  // Integers.
  Tensor ai = i64({1, 2}, {2, 3}), bi = i64({2, 1}, {4, 5});
  EXPECT_THAT(matmul(ai, bi, false, false).i, ElementsAre(23));
  EXPECT_THAT(
      invalidArgumentMessage([&] { matmul(a, a, false, false); }),
      HasSubstr("matmul: contraction sizes differ: lhs [2, 3] has 3, rhs "
                "[2, 3] has 2"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                matmul(f32({3}, {1, 2, 3}), b, false, false);
              }),
              HasSubstr("operands must be at least 2-D"));
}

TEST(ReferenceMatmulTest, BatchBroadcastAndTransposeProperty) {
  // lhs [2, 1, 2, 3] against rhs [3, 3, 4]: batch [2, 1] x [3] -> [2, 3].
  Tensor a = randomF32({2, 1, 2, 3}, 1), b = randomF32({3, 3, 4}, 2);
  Tensor c = matmul(a, b, false, false);
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 3, 2, 4}));
  // Batch (1, 2) uses a's batch 1 and b's batch 2; check against a 2-D
  // product of the slices.
  Tensor aSlice =
      reshape(slice(a, {1, 0, 0, 0}, {1, 1, 2, 3}, {1, 1, 1, 1}), {2, 3});
  Tensor bSlice = reshape(slice(b, {2, 0, 0}, {1, 3, 4}, {1, 1, 1}), {3, 4});
  Tensor expected = matmul(aSlice, bSlice, false, false);
  Tensor actual =
      reshape(slice(c, {1, 2, 0, 0}, {1, 1, 2, 4}, {1, 1, 1, 1}), {2, 4});
  EXPECT_EQ(actual.f, expected.f);
  // Transposed flags equal explicit transposes.
  Tensor aT = transpose(a, {0, 1, 3, 2}), bT = transpose(b, {0, 2, 1});
  EXPECT_EQ(matmul(aT, bT, true, true).f, c.f);
}

TEST(ReferenceGroupedMatmulTest, PerExpertProducts) {
  // Expert 0: [1, 2] x [[1, 0], [0, 1]] = [1, 2];
  // expert 1: [3, 4] x [[2, 1], [1, 2]] = [3*2 + 4*1, 3*1 + 4*2] = [10, 11].
  Tensor x = f32({2, 1, 2}, {1, 2, 3, 4});
  Tensor w = f32({2, 2, 2}, {1, 0, 0, 1, 2, 1, 1, 2});
  Tensor y = groupedMatmul(x, w, false);
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 1, 2}));
  EXPECT_THAT(y.f, ElementsAre(1, 2, 10, 11));
  // Transposed weights on random data equal the plain product.
  Tensor xr = randomF32({3, 4, 5}, 3), wr = randomF32({3, 5, 2}, 4);
  EXPECT_EQ(groupedMatmul(xr, transpose(wr, {0, 2, 1}), true).f,
            groupedMatmul(xr, wr, false).f);
  EXPECT_THAT(invalidArgumentMessage([&] {
                groupedMatmul(x, f32({1, 2, 2}, {1, 0, 0, 1}), false);
              }),
              HasSubstr("input has 2 experts but weight has 1"));
}

TEST(ReferenceReduceTest, SumMeanMax) {
  // [[1, 2, 3], [4, 5, 6]].
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor rows = reduce(ReduceKind::Sum, x, {1}, false);
  EXPECT_EQ(rows.shape, (std::vector<int64_t>{2}));
  EXPECT_THAT(rows.f, ElementsAre(6, 15));
  Tensor cols = reduce(ReduceKind::Mean, x, {0}, true);
  EXPECT_EQ(cols.shape, (std::vector<int64_t>{1, 3}));
  EXPECT_THAT(cols.f, ElementsAre(2.5, 3.5, 4.5));
  Tensor all = reduce(ReduceKind::Max, x, {0, 1}, false);
  EXPECT_TRUE(all.shape.empty());
  EXPECT_THAT(all.f, ElementsAre(6));
  EXPECT_THAT(reduce(ReduceKind::Max, f32({3}, {-5, -1, -3}), {0}, true).f,
              ElementsAre(-1));
  // Middle dimension of [2, 2, 2] (0..7): pairs (0,2) (1,3) (4,6) (5,7).
  Tensor cube = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_THAT(reduce(ReduceKind::Sum, cube, {1}, false).f,
              ElementsAre(2, 4, 10, 12));
  // Integer mean truncates: (1 + 2) / 2 = 1.
  EXPECT_THAT(reduce(ReduceKind::Mean, i64({2}, {1, 2}), {0}, false).i,
              ElementsAre(1));
  EXPECT_THAT(invalidArgumentMessage([&] {
                reduce(ReduceKind::Sum, x, {1, 1}, false);
              }),
              HasSubstr("reduce_sum: dimension 1 is reduced twice"));
  EXPECT_THAT(
      invalidArgumentMessage([&] { reduce(ReduceKind::Max, x, {2}, false); }),
      HasSubstr("reduce_max: reduced dimension 2 is out of range for "
                "rank 2"));
}

TEST(ReferenceSoftmaxTest, HandComputedAndStable) {
  // softmax(1, 2, 3) = (e^-2, e^-1, 1) / (e^-2 + e^-1 + 1).
  expectF32Tensor(
      softmax(f32({3}, {1, 2, 3}), 0), {3},
      {0.09003057317038046, 0.24472847105479764, 0.6652409557748218});
  // Along dimension 0 of [[0, 5], [0, 5]]: every column is (1/2, 1/2).
  EXPECT_THAT(softmax(f32({2, 2}, {0, 5, 0, 5}), 0).f,
              ElementsAre(0.5, 0.5, 0.5, 0.5));
  // Large logits need the max subtracted (exp(1000) overflows).
  EXPECT_THAT(softmax(f32({2}, {1000, 1000}), 0).f, ElementsAre(0.5, 0.5));
  // A -inf entry gets weight 0.
  EXPECT_THAT(softmax(f32({2}, {-kInf, 3}), 0).f, ElementsAre(0.0, 1.0));
  EXPECT_THAT(invalidArgumentMessage([] {
                softmax(f32({2}, {1, 2}), 1);
              }),
              HasSubstr("softmax: dimension 1 is out of range for rank 1"));
}

TEST(ReferenceNormTest, LayerNormBiasedVariance) {
  // mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25;
  // (x - 2.5) / sqrt(1.25) with sqrt(1.25) = 1.118033988749895.
  Tensor x = f32({1, 4}, {1, 2, 3, 4});
  Tensor ones = f32({4}, {1, 1, 1, 1});
  expectF32Tensor(layerNorm(x, ones, nullptr, 1, 0.0), {1, 4},
                  {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579,
                   1.3416407864998738});
  // gamma (2, 0, 1, 1), beta (0, 7, 0, -1).
  Tensor gamma = f32({4}, {2, 0, 1, 1}), beta = f32({4}, {0, 7, 0, -1});
  expectF32Tensor(
      layerNorm(x, gamma, &beta, 1, 0.0), {1, 4},
      {-2.6832815729997477, 7.0, 0.4472135954999579, 0.3416407864998738});
  // epsilon 0.75: variance + eps = 2, so (x - 2.5) / sqrt(2).
  expectF32Tensor(layerNorm(x, ones, nullptr, 1, 0.75), {1, 4},
                  {-1.0606601717798212, -0.35355339059327373,
                   0.35355339059327373, 1.0606601717798212});
  // Axis 1 of [2, 2, 2] normalizes the trailing four elements of each batch:
  // batch 1 is (10, 10, 30, 30): mean 20, variance 100, so (-1, -1, 1, 1).
  Tensor cube = f32({2, 2, 2}, {1, 2, 3, 4, 10, 10, 30, 30});
  Tensor y = layerNorm(cube, f32({2, 2}, {1, 1, 1, 1}), nullptr, 1, 0.0);
  EXPECT_THAT(std::vector<double>(y.f.begin() + 4, y.f.end()),
              ElementsAre(-1, -1, 1, 1));
  EXPECT_THAT(invalidArgumentMessage([&] {
                layerNorm(x, f32({3}, {1, 1, 1}), nullptr, 1, 0);
              }),
              HasSubstr("layer_norm: gamma shape [3] must equal the "
                        "normalized dimensions [4]"));
}

TEST(ReferenceNormTest, RmsNorm) {
  // mean(x^2) = (1 + 4 + 9 + 16) / 4 = 7.5; x / sqrt(7.5).
  Tensor x = f32({4}, {1, 2, 3, 4});
  expectF32Tensor(rmsNorm(x, f32({4}, {1, 1, 1, 1}), 0, 0.0), {4},
                  {0.3651483716701107, 0.7302967433402214, 1.0954451150103321,
                   1.4605934866804429});
  // eps 0.5: mean square + eps = 8, x / (2 sqrt 2) times gamma 2 = x / sqrt 2.
  expectF32Tensor(rmsNorm(x, f32({4}, {2, 2, 2, 2}), 0, 0.5), {4},
                  {0.7071067811865476, 1.4142135623730951, 2.1213203435596424,
                   2.8284271247461903});
  EXPECT_THAT(
      invalidArgumentMessage([&] {
        rmsNorm(x, Tensor::ofFloats(DType::BF16, {4}, {1, 1, 1, 1}), 0, 0);
      }),
      HasSubstr("element types: f32 and bf16"));
}

TEST(ReferenceRotaryTest, HalfAndInterleavedPairs) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  // A quarter turn (cos 0, sin 1): rotate half gives (-x2, -x3, x0, x1).
  Tensor c0 = f32({4}, {0, 0, 0, 0}), s1 = f32({4}, {1, 1, 1, 1});
  EXPECT_THAT(rotary(x, c0, s1, false).f, ElementsAre(-3, -4, 1, 2));
  // Interleaved pairs (0, 1), (2, 3): (-x1, x0, -x3, x2).
  EXPECT_THAT(rotary(x, c0, s1, true).f, ElementsAre(-2, 1, -4, 3));
  // cos 0.5, sin 0.25: x * 0.5 + rotate(x) * 0.25.
  //   half: (0.5 - 0.75, 1 - 1, 1.5 + 0.25, 2 + 0.5).
  //   interleaved: (0.5 - 0.5, 1 + 0.25, 1.5 - 1, 2 + 0.75).
  Tensor c = f32({4}, {0.5, 0.5, 0.5, 0.5}),
         s = f32({4}, {0.25, 0.25, 0.25, 0.25});
  EXPECT_THAT(rotary(x, c, s, false).f, ElementsAre(-0.25, 0, 1.75, 2.5));
  EXPECT_THAT(rotary(x, c, s, true).f, ElementsAre(0, 1.25, 0.5, 2.75));
  // Per-position tables [S, D] broadcast over batch: position 0 is the
  // identity (cos 1, sin 0), position 1 a quarter turn.
  Tensor xs = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor cs = f32({2, 2}, {1, 1, 0, 0}), ss = f32({2, 2}, {0, 0, 1, 1});
  EXPECT_THAT(rotary(xs, cs, ss, false).f,
              ElementsAre(1, 2, -4, 3, 5, 6, -8, 7));
  EXPECT_THAT(invalidArgumentMessage([&] {
                rotary(f32({3}, {1, 2, 3}), c, s, false);
              }),
              HasSubstr("rotary: last dimension must be even"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                rotary(x, f32({2}, {1, 1}), s, false);
              }),
              HasSubstr("cos shape [2] must broadcast to the input shape [4]"));
}

TEST(ReferenceRotaryTest, PreservesPairNorms) {
  // With one angle per pair (cos[i] = cos[i + D/2]), each pair is rotated,
  // so x_i^2 + x_{i+D/2}^2 is unchanged.
  Tensor x = randomF32({3, 6}, 5);
  std::vector<double> angles{0.3, -1.2, 2.5};
  std::vector<double> cosValues, sinValues;
  for (int half = 0; half < 2; ++half)
    for (double angle : angles) {
      cosValues.push_back(std::cos(angle));
      sinValues.push_back(std::sin(angle));
    }
  Tensor y = rotary(x, f32({6}, cosValues), f32({6}, sinValues), false);
  for (int row = 0; row < 3; ++row)
    for (int i = 0; i < 3; ++i) {
      double a = x.f[row * 6 + i], b = x.f[row * 6 + i + 3];
      double c = y.f[row * 6 + i], d = y.f[row * 6 + i + 3];
      EXPECT_NEAR(c * c + d * d, a * a + b * b, kF32PathTol);
    }
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

TEST(ReferenceGatherTest, EmbeddingAndNegativeIndices) {
  // Table [4, 2] with rows (0, 1), (10, 11), (20, 21), (30, 31).
  Tensor table = f32({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  // Indices [2, 2] = (3, -1), (0, -4): -1 is row 3, -4 is row 0.
  Tensor rows = gather(table, i64({2, 2}, {3, -1, 0, -4}), 0);
  EXPECT_EQ(rows.shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_THAT(rows.f, ElementsAre(30, 31, 30, 31, 0, 1, 0, 1));
  // Axis 1 with i32 indices: columns (1, 0) of every row.
  Tensor cols = gather(table, Tensor::ofInts(DType::I32, {2}, {1, -2}), 1);
  EXPECT_EQ(cols.shape, (std::vector<int64_t>{4, 2}));
  EXPECT_THAT(cols.f, ElementsAre(1, 0, 11, 10, 21, 20, 31, 30));
  EXPECT_THAT(invalidArgumentMessage([&] { gather(table, i64({1}, {4}), 0); }),
              HasSubstr("gather: index 4 is out of range for dimension 0 of "
                        "size 4"));
  EXPECT_THAT(invalidArgumentMessage([&] { gather(table, i64({1}, {-5}), 0); }),
              HasSubstr("index -5 is out of range"));
  EXPECT_THAT(invalidArgumentMessage([&] { gather(table, f32({1}, {0}), 0); }),
              HasSubstr("indices must be i64 or i32, got f32"));
}

TEST(ReferenceScatterAddTest, RepeatedAndNegativeIndicesAccumulate) {
  // Updates [2, 2, 2] into a zero [4, 2]: indices (3, -1) both name row 3,
  // (0, -4) both row 0; rows 1 and 2 stay zero.
  Tensor updates = f32({2, 2, 2}, {1, 2, 10, 20, 100, 200, 1000, 2000});
  Tensor sums = scatterAdd(updates, i64({2, 2}, {3, -1, 0, -4}), 0, {4, 2});
  EXPECT_EQ(sums.shape, (std::vector<int64_t>{4, 2}));
  EXPECT_THAT(sums.f, ElementsAre(1100, 2200, 0, 0, 0, 0, 11, 22));
  // Axis 1 with i32 indices: columns (1, 1, -2) of every row of a [2, 2].
  Tensor columns = scatterAdd(f32({2, 3}, {1, 2, 4, 8, 16, 32}),
                              Tensor::ofInts(DType::I32, {3}, {1, 1, -2}), 1,
                              {2, 2});
  EXPECT_THAT(columns.f, ElementsAre(4, 3, 32, 24));
  // bf16 sums in double, rounded once: 256 + 1 + 1 is 258, where rounding
  // every partial sum to bf16 (8 bits) would give 256.
  Tensor halves = scatterAdd(Tensor::ofFloats(DType::BF16, {3}, {256, 1, 1}),
                             i64({3}, {0, 0, 0}), 0, {1});
  EXPECT_EQ(halves.dtype, DType::BF16);
  EXPECT_THAT(halves.f, ElementsAre(258));
}

TEST(ReferenceScatterAddTest, RejectsBadIndicesAndShapes) {
  Tensor updates = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_THAT(
      invalidArgumentMessage([&] {
        scatterAdd(updates, i64({2}, {0, 4}), 0, {4, 2});
      }),
      HasSubstr("scatter_add: index 4 is out of range for dimension 0 of "
                "size 4"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                scatterAdd(updates, i64({2}, {-5, 0}), 0, {4, 2});
              }),
              HasSubstr("index -5 is out of range"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                scatterAdd(updates, i64({2}, {0, 1}), 0, {4, 3});
              }),
              HasSubstr("updates shape [2, 2] must be [2, 3]"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                scatterAdd(updates, f32({2}, {0, 1}), 0, {4, 2});
              }),
              HasSubstr("indices must be i64 or i32, got f32"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                scatterAdd(updates, i64({2}, {0, 1}), 2, {4, 2});
              }),
              HasSubstr("axis 2 is out of range for rank 2"));
}

TEST(ReferenceShapeTest, ReshapeAndTranspose) {
  Tensor x = f32({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor r = reshape(x, {3, 2});
  EXPECT_EQ(r.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(r.f, x.f);
  EXPECT_THAT(invalidArgumentMessage([&] {
                reshape(x, {4, 2});
              }),
              HasSubstr("reshape: cannot reshape [2, 3] (6 elements) to "
                        "[4, 2]"));
  // [[0, 1, 2], [3, 4, 5]]^T = [[0, 3], [1, 4], [2, 5]].
  Tensor t = transpose(x, {1, 0});
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_THAT(t.f, ElementsAre(0, 3, 1, 4, 2, 5));
  // [2, 3, 4] -> perm (2, 0, 1) -> [4, 2, 3]; out[k, i, j] = in[i, j, k].
  Tensor cube = randomF32({2, 3, 4}, 6);
  Tensor p = transpose(cube, {2, 0, 1});
  EXPECT_EQ(p.shape, (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(p.f[(3 * 2 + 1) * 3 + 2], cube.f[(1 * 3 + 2) * 4 + 3]);
  // The inverse permutation restores the input.
  EXPECT_EQ(transpose(p, {1, 2, 0}).f, cube.f);
  EXPECT_THAT(invalidArgumentMessage([&] {
                transpose(x, {0, 0});
              }),
              HasSubstr("transpose: [0, 0] is not a permutation of [0, 2)"));
}

TEST(ReferenceShapeTest, SliceStrides) {
  // 0..11 as [3, 4]; rows 0, 2 and columns 1, 3: 1, 3, 9, 11.
  Tensor x = i64({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Tensor s = slice(x, {0, 1}, {2, 2}, {2, 2});
  EXPECT_EQ(s.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_THAT(s.i, ElementsAre(1, 3, 9, 11));
  // Row 1, columns 1..3 with stride 1: 5, 6, 7.
  EXPECT_THAT(slice(x, {1, 1}, {1, 3}, {1, 1}).i, ElementsAre(5, 6, 7));
  // An empty box is fine.
  EXPECT_EQ(slice(x, {3, 0}, {0, 4}, {1, 1}).numElements(), 0);
  // Offset 2, size 2, stride 2 touches columns 2 and 4: past the end.
  EXPECT_THAT(
      invalidArgumentMessage([&] {
        slice(x, {0, 2}, {1, 2}, {1, 2});
      }),
      HasSubstr("slice: slice of dimension 1 (offset 2, size 2, stride 2) "
                "exceeds its size 4"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                slice(x, {0, 0}, {1, 1}, {1, 0});
              }),
              HasSubstr("stride 0 of dimension 1 is not positive"));
  EXPECT_THAT(invalidArgumentMessage([&] { slice(x, {0}, {1}, {1}); }),
              HasSubstr("expects 2 offsets, sizes and strides, got 1, 1 and "
                        "1"));
}

TEST(ReferenceShapeTest, ConcatSplitRoundTrip) {
  // Along dimension 1: [[1], [2]] ++ [[3, 4], [5, 6]] = [[1, 3, 4], [2, 5, 6]].
  Tensor a = f32({2, 1}, {1, 2}), b = f32({2, 2}, {3, 4, 5, 6});
  Tensor c = concat({a, b}, 1);
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_THAT(c.f, ElementsAre(1, 3, 4, 2, 5, 6));
  std::vector<Tensor> pieces = split(c, 1, {1, 2});
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].shape, a.shape);
  EXPECT_EQ(pieces[0].f, a.f);
  EXPECT_EQ(pieces[1].f, b.f);
  // Random round trip along a middle dimension, with an empty piece.
  Tensor x = randomF32({2, 5, 3}, 7);
  std::vector<Tensor> parts = split(x, 1, {2, 0, 3});
  EXPECT_EQ(parts[1].shape, (std::vector<int64_t>{2, 0, 3}));
  EXPECT_EQ(concat(parts, 1).f, x.f);
  EXPECT_THAT(invalidArgumentMessage([&] {
                split(c, 1, {1, 1});
              }),
              HasSubstr("split: pieces [1, 1] add up to 2 along dimension 1 "
                        "but the input [2, 3] has 3"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                concat({a, f32({3, 1}, {1, 2, 3})}, 1);
              }),
              HasSubstr("concat: input #1 has size 3 in dimension 0 where "
                        "input #0 has 2"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                concat({a, i64({2, 1}, {1, 2})}, 1);
              }),
              HasSubstr("is incompatible with input #0"));
}

TEST(ReferenceShapeTest, BroadcastTo) {
  // [3, 1] -> [2, 3, 2]: each of 1, 2, 3 repeated along the last dimension,
  // the whole repeated along the new leading one.
  Tensor b = broadcastTo(f32({3, 1}, {1, 2, 3}), {2, 3, 2});
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_THAT(b.f, ElementsAre(1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3));
  EXPECT_THAT(broadcastTo(i1({}, {1}), {2}).i, ElementsAre(1, 1));
  EXPECT_THAT(invalidArgumentMessage([] {
                broadcastTo(f32({3}, {1, 2, 3}), {4});
              }),
              HasSubstr("broadcast_to: input shape [3] does not broadcast to "
                        "[4]"));
  // No bidirectional broadcasting: the target must be at least as large.
  EXPECT_THAT(invalidArgumentMessage([] {
                broadcastTo(f32({2, 1}, {1, 2}), {1, 1});
              }),
              HasSubstr("does not broadcast"));
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

TEST(ReferenceAttentionTest, HandComputed) {
  // One query (1, 0), keys (1, 0) and (0, 1), scale 1: scores (1, 0),
  // weights (e, 1) / (e + 1) = (0.7310585786300049, 0.2689414213699951);
  // values (1, 2) and (3, 4) give (1.5378828427399904, 2.5378828427399904);
  // lse = log(e + 1).
  Tensor q = f32({1, 1, 1, 2}, {1, 0});
  Tensor k = f32({1, 1, 2, 2}, {1, 0, 0, 1});
  Tensor v = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  AttentionResult r = attention(q, k, v, nullptr, false, std::nullopt, 1.0);
  expectF32Tensor(r.out, {1, 1, 1, 2},
                  {1.5378828427399904, 2.5378828427399904});
  expectF32Tensor(r.lse, {1, 1, 1}, {1.3132616875182228});
  // Scale 0 makes the weights uniform: mean of the values (2, 3), lse log 2.
  AttentionResult uniform =
      attention(q, k, v, nullptr, false, std::nullopt, 0.0);
  EXPECT_THAT(uniform.out.f, ElementsAre(2, 3));
  expectF32(uniform.lse.f[0], 0.6931471805599453);
}

TEST(ReferenceAttentionTest, CausalDefaultOffsetAndEmptyRows) {
  // Sq = 2, Sk = 3, zero scores: the default offset Sk - Sq = 1 lets query 0
  // see keys 0..1 and query 1 all three. Values 3, 6, 9 (Dv = 1).
  Tensor q = f32({1, 1, 2, 1}, {0, 0});
  Tensor k = f32({1, 1, 3, 1}, {0, 0, 0});
  Tensor v = f32({1, 1, 3, 1}, {3, 6, 9});
  AttentionResult r = attention(q, k, v, nullptr, true, std::nullopt, 1.0);
  // Means 4.5 and 6; lse log 2 and log 3.
  EXPECT_THAT(r.out.f, ElementsAre(4.5, 6));
  expectF32(r.lse.f[0], 0.6931471805599453);
  expectF32(r.lse.f[1], 1.0986122886681098);
  // Offset -1: query 0 sees nothing (zero row, lse -inf), query 1 sees key 0.
  AttentionResult shifted = attention(q, k, v, nullptr, true, -1, 1.0);
  EXPECT_THAT(shifted.out.f, ElementsAre(0, 3));
  EXPECT_EQ(shifted.lse.f[0], -kInf);
  EXPECT_EQ(shifted.lse.f[1], 0.0);
  // An i1 mask that removes everything also gives zeros and -inf.
  Tensor keepNothing = i1({}, {0});
  AttentionResult none =
      attention(q, k, v, &keepNothing, false, std::nullopt, 1.0);
  EXPECT_THAT(none.out.f, ElementsAre(0, 0));
  EXPECT_THAT(none.lse.f, ElementsAre(-kInf, -kInf));
}

TEST(ReferenceAttentionTest, MatchesExplicitSoftmaxComposition) {
  // softmax(scale * Q K^T + mask) V built from matmul, binary and softmax.
  const double scale = 0.37;
  Tensor q = randomF32({2, 3, 4, 5}, 11), k = randomF32({2, 3, 6, 5}, 12),
         v = randomF32({2, 3, 6, 3}, 13);
  // A float mask [3, 4, 6] broadcast over the batch, values in (-2, 2).
  Tensor mask = binary(BinaryKind::Mul, randomF32({3, 4, 6}, 14), scalarF32(2));
  Tensor scores = matmul(q, k, false, true);
  scores = binary(BinaryKind::Mul, scores, scalarF32(scale));
  scores = binary(BinaryKind::Add, scores, mask);
  Tensor expected = matmul(softmax(scores, 3), v, false, false);
  AttentionResult r = attention(q, k, v, &mask, false, std::nullopt, scale);
  EXPECT_EQ(r.out.shape, (std::vector<int64_t>{2, 3, 4, 3}));
  expectAllClose(r.out.f, expected.f, kF32PathTol);
  // lse = log(sum(exp(scores))) over the last dimension.
  Tensor lse =
      unary(UnaryKind::Log,
            reduce(ReduceKind::Sum, unary(UnaryKind::Exp, scores), {3}, false));
  expectAllClose(r.lse.f, lse.f, kF32PathTol);

  // An i1 mask equals select(mask, scores, -inf): keep the diagonal band
  // |i - j| <= 2 so that every row keeps a key.
  std::vector<int64_t> band;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j)
      band.push_back(std::abs(i - j) <= 2);
  Tensor keep = i1({4, 6}, band);
  Tensor plain =
      binary(BinaryKind::Mul, matmul(q, k, false, true), scalarF32(scale));
  Tensor masked = select(keep, plain, scalarF32(-kInf));
  Tensor expectedMasked = matmul(softmax(masked, 3), v, false, false);
  expectAllClose(attention(q, k, v, &keep, false, std::nullopt, scale).out.f,
                 expectedMasked.f, kF32PathTol);
}

TEST(ReferenceAttentionTest, CausalOffsetEqualsExplicitMasks) {
  Tensor q = randomF32({1, 2, 4, 3}, 21), k = randomF32({1, 2, 6, 3}, 22),
         v = randomF32({1, 2, 6, 2}, 23);
  for (std::optional<int64_t> offset :
       {std::optional<int64_t>(), std::optional<int64_t>(0),
        std::optional<int64_t>(1), std::optional<int64_t>(-2),
        std::optional<int64_t>(7)}) {
    int64_t o = offset.value_or(6 - 4);
    SCOPED_TRACE("offset " + std::to_string(o));
    std::vector<double> additive;
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        additive.push_back(j <= i + o ? 0.0 : -kInf);
        keep.push_back(j <= i + o);
      }
    Tensor floatMask = f32({4, 6}, additive), boolMask = i1({4, 6}, keep);
    AttentionResult causal = attention(q, k, v, nullptr, true, offset, 0.5);
    AttentionResult viaFloat =
        attention(q, k, v, &floatMask, false, std::nullopt, 0.5);
    AttentionResult viaBool =
        attention(q, k, v, &boolMask, false, std::nullopt, 0.5);
    // Same arithmetic on the kept keys: bit-for-bit equal.
    EXPECT_EQ(causal.out.f, viaFloat.out.f);
    EXPECT_EQ(causal.lse.f, viaFloat.lse.f);
    EXPECT_EQ(causal.out.f, viaBool.out.f);
    EXPECT_EQ(causal.lse.f, viaBool.lse.f);
  }
}

TEST(ReferenceAttentionTest, GroupedQueryEqualsRepeatedKeyValue) {
  // H = 6 query heads over Hkv = 2: heads 0..2 use kv head 0, 3..5 head 1.
  Tensor q = randomF32({2, 6, 3, 4}, 31), k = randomF32({2, 2, 5, 4}, 32),
         v = randomF32({2, 2, 5, 3}, 33);
  Tensor heads = i64({6}, {0, 0, 0, 1, 1, 1});
  Tensor kRepeated = gather(k, heads, 1), vRepeated = gather(v, heads, 1);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    AttentionResult grouped =
        attention(q, k, v, nullptr, causal, std::nullopt, 0.8);
    AttentionResult repeated =
        attention(q, kRepeated, vRepeated, nullptr, causal, std::nullopt, 0.8);
    EXPECT_EQ(grouped.out.f, repeated.out.f);
    EXPECT_EQ(grouped.lse.f, repeated.lse.f);
  }
  // Query head 1 must not use kv head 1 (h / (H / Hkv), not h % Hkv).
  Tensor wrongHeads = i64({6}, {0, 1, 0, 1, 0, 1});
  EXPECT_NE(attention(q, k, v, nullptr, false, std::nullopt, 0.8).out.f,
            attention(q, gather(k, wrongHeads, 1), gather(v, wrongHeads, 1),
                      nullptr, false, std::nullopt, 0.8)
                .out.f);
}

/// Attention over keys [0, split) and [split, Sk) merged, against attention
/// over all keys. A causal offset shifts by the block start.
void expectBlockwiseEqualsFull(bool causal, std::optional<int64_t> offset,
                               const Tensor *mask, int64_t splitAt) {
  Tensor q = randomF32({2, 2, 5, 4}, 41), k = randomF32({2, 2, 7, 4}, 42),
         v = randomF32({2, 2, 7, 3}, 43);
  const int64_t sq = 5, sk = 7;
  AttentionResult full = attention(q, k, v, mask, causal, offset, 0.6);
  int64_t o = offset.value_or(sk - sq);
  auto block = [&](int64_t start, int64_t size) {
    Tensor kb = slice(k, {0, 0, start, 0}, {2, 2, size, 4}, {1, 1, 1, 1});
    Tensor vb = slice(v, {0, 0, start, 0}, {2, 2, size, 3}, {1, 1, 1, 1});
    std::optional<Tensor> maskBlock;
    if (mask)
      maskBlock = slice(*mask, {0, start}, {sq, size}, {1, 1});
    return attention(q, kb, vb, maskBlock ? &*maskBlock : nullptr, causal,
                     causal ? std::optional<int64_t>(o - start) : std::nullopt,
                     0.6);
  };
  AttentionResult first = block(0, splitAt);
  AttentionResult second = block(splitAt, sk - splitAt);
  AttentionResult merged =
      attentionMerge({first.out, second.out}, {first.lse, second.lse});
  expectAllClose(merged.out.f, full.out.f, kF32PathTol);
  expectAllClose(merged.lse.f, full.lse.f, kF32PathTol);
}

TEST(ReferenceAttentionTest, BlockwiseMergeEqualsFull) {
  {
    SCOPED_TRACE("not causal");
    expectBlockwiseEqualsFull(false, std::nullopt, nullptr, 3);
  }
  {
    SCOPED_TRACE("causal, default offset");
    expectBlockwiseEqualsFull(true, std::nullopt, nullptr, 4);
  }
  {
    // Offset 0: queries 0..2 see nothing of the second block (lse -inf).
    SCOPED_TRACE("causal, offset 0");
    expectBlockwiseEqualsFull(true, 0, nullptr, 3);
  }
  {
    // Offset -2: queries 0 and 1 see no key at all (zero rows both ways).
    SCOPED_TRACE("causal, offset -2");
    expectBlockwiseEqualsFull(true, -2, nullptr, 2);
  }
  {
    SCOPED_TRACE("float mask");
    Tensor mask = randomF32({5, 7}, 44);
    expectBlockwiseEqualsFull(false, std::nullopt, &mask, 5);
  }
}

TEST(ReferenceAttentionTest, Errors) {
  Tensor q = randomF32({1, 3, 2, 4}, 51), k = randomF32({1, 2, 5, 4}, 52),
         v = randomF32({1, 2, 5, 4}, 53);
  EXPECT_THAT(invalidArgumentMessage(
                  [&] { attention(q, k, v, nullptr, false, std::nullopt, 1); }),
              HasSubstr("attention: query heads (3) are not a multiple of "
                        "key/value heads (2)"));
  Tensor q2 = randomF32({1, 2, 2, 3}, 54);
  EXPECT_THAT(invalidArgumentMessage([&] {
                attention(q2, k, v, nullptr, false, std::nullopt, 1);
              }),
              HasSubstr("query head size 3 differs from key head size 4"));
  Tensor q4 = randomF32({1, 2, 2, 4}, 55);
  Tensor badMask = i1({3, 5}, std::vector<int64_t>(15, 1));
  EXPECT_THAT(invalidArgumentMessage([&] {
                attention(q4, k, v, &badMask, false, std::nullopt, 1);
              }),
              HasSubstr("mask shape [3, 5] does not broadcast to the scores "
                        "[1, 2, 2, 5]"));
  Tensor intMask = i64({5}, {0, 0, 0, 0, 0});
  EXPECT_THAT(invalidArgumentMessage([&] {
                attention(q4, k, v, &intMask, false, std::nullopt, 1);
              }),
              HasSubstr("mask must be i1 or f32, got i64"));
  EXPECT_THAT(invalidArgumentMessage(
                  [&] { attention(q4, k, v, nullptr, false, 0, 1); }),
              HasSubstr("an offset needs causal"));
  Tensor shortV = randomF32({1, 2, 4, 4}, 56);
  EXPECT_THAT(invalidArgumentMessage([&] {
                attention(q4, k, shortV, nullptr, false, std::nullopt, 1);
              }),
              HasSubstr("differ in heads or sequence length"));
}

TEST(ReferenceAttentionMergeTest, HandComputed) {
  // Two blocks with lse 0 and log 3 (denominators 1 and 3), outputs 1 and 5:
  // lse = log 4, out = (1 * 1 + 3 * 5) / 4 = 4.
  Tensor o0 = f32({1, 1, 1, 1}, {1}), o1 = f32({1, 1, 1, 1}, {5});
  Tensor l0 = f32({1, 1, 1}, {0}), l1 = f32({1, 1, 1}, {1.0986122886681098});
  AttentionResult r = attentionMerge({o0, o1}, {l0, l1});
  expectF32(r.out.f[0], 4.0);
  expectF32(r.lse.f[0], 1.3862943611198906);
  // Large lse values need the stable form (exp(1000) overflows): equal lse
  // average the outputs, lse + log 2.
  Tensor big = f32({1, 1, 1}, {1000});
  AttentionResult stable = attentionMerge({o0, o1}, {big, big});
  expectF32(stable.out.f[0], 3.0);
  expectF32(stable.lse.f[0], 1000.6931471805599);
  // A block with lse -inf contributes nothing, even with a NaN row.
  Tensor nanOut = f32({1, 1, 1, 1}, {kNaN}), empty = f32({1, 1, 1}, {-kInf});
  AttentionResult skip = attentionMerge({o1, nanOut}, {l1, empty});
  EXPECT_EQ(skip.out.f[0], 5.0);
  expectF32(skip.lse.f[0], 1.0986122886681098);
  // Every block empty: zero row and lse -inf.
  AttentionResult none = attentionMerge({nanOut, nanOut}, {empty, empty});
  EXPECT_EQ(none.out.f[0], 0.0);
  EXPECT_EQ(none.lse.f[0], -kInf);
  EXPECT_THAT(invalidArgumentMessage([&] {
                attentionMerge({o0, o1}, {l0});
              }),
              HasSubstr("attention_merge: expects as many partial outputs as "
                        "log-sum-exps, at least one; got 2 and 1"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                attentionMerge({o0}, {f32({1, 1, 2}, {0, 0})});
              }),
              HasSubstr("log-sum-exp shape [1, 1, 2] must be [1, 1, 1]"));
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

TEST(ReferenceRouterTest, TopKWithTies) {
  // Logits (0, 1, 2, 1): probabilities (1, e, e^2, e) / (1 + e)^2. Top 2 is
  // expert 2 (e^2 / (1 + e)^2 = 0.534446645388523) then the tie
  // e / (1 + e)^2 = 0.19661193324148185 between experts 1 and 3, which goes
  // to the lower index 1.
  Tensor logits = f32({1, 4}, {0, 1, 2, 1});
  RouterResult r = routerTopK(logits, 2, false);
  EXPECT_EQ(r.experts.dtype, DType::I64);
  EXPECT_EQ(r.experts.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_THAT(r.experts.i, ElementsAre(2, 1));
  EXPECT_EQ(r.weights.dtype, DType::F32);
  expectF32(r.weights.f[0], 0.534446645388523);
  expectF32(r.weights.f[1], 0.19661193324148185);
  // Normalized: e^2 / (e^2 + e) = e / (1 + e) and 1 / (1 + e).
  RouterResult n = routerTopK(logits, 2, true);
  expectF32(n.weights.f[0], 0.7310585786300049);
  expectF32(n.weights.f[1], 0.2689414213699951);
  // The tie also goes to the lower index when it comes first: (1, 0, 1).
  EXPECT_THAT(routerTopK(f32({1, 3}, {1, 0, 1}), 2, false).experts.i,
              ElementsAre(0, 2));
  // All equal: experts in index order, weights 1/4 each.
  RouterResult flat =
      routerTopK(f32({2, 4}, {5, 5, 5, 5, 0, 0, 0, 0}), 3, false);
  EXPECT_THAT(flat.experts.i, ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_THAT(flat.weights.f, ElementsAre(0.25, 0.25, 0.25, 0.25, 0.25, 0.25));
  // k = E returns every expert in descending order.
  EXPECT_THAT(routerTopK(f32({1, 3}, {-1, 2, 0}), 3, false).experts.i,
              ElementsAre(1, 2, 0));
  EXPECT_THAT(invalidArgumentMessage([&] { routerTopK(logits, 5, false); }),
              HasSubstr("router_topk: k = 5 must be in [1, 4]"));
  EXPECT_THAT(invalidArgumentMessage([] {
                routerTopK(f32({4}, {1, 2, 3, 4}), 1, false);
              }),
              HasSubstr("expects logits [tokens, experts], got [4]"));
}

TEST(ReferenceMoeTest, DispatchSlotsAndCapacityDrop) {
  // Tokens t0 = (1, 1), t1 = (2, 2), t2 = (3, 3); choices
  // t0 -> (1, 0), t1 -> (1, 1), t2 -> (0, 1). In token-then-choice order
  // expert 1 receives t0, t1, t1, t2 and expert 0 receives t0, t2.
  Tensor x = f32({3, 2}, {1, 1, 2, 2, 3, 3});
  Tensor experts = i64({3, 2}, {1, 0, 1, 1, 0, 1});
  // Capacity 2: expert 0 holds t0, t2; expert 1 holds t0, t1 and drops the
  // later pairs (t1 choice 1, t2 choice 1).
  Tensor d = moeDispatch(x, experts, 2, 2);
  EXPECT_EQ(d.shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_THAT(d.f, ElementsAre(1, 1, 3, 3, 1, 1, 2, 2));
  // Capacity 3 leaves expert 0's third slot empty (zero); 3 experts leave
  // expert 2 all zero.
  Tensor wide = moeDispatch(x, experts, 3, 3);
  EXPECT_THAT(wide.f, ElementsAre(1, 1, 3, 3, 0, 0, //
                                  1, 1, 2, 2, 2, 2, //
                                  0, 0, 0, 0, 0, 0));
  // Combine with the same slots: give expert e's slot c the value
  // 10 * e + c (per row), weights (0.5, 0.25) for every token.
  std::vector<double> y;
  for (int e = 0; e < 2; ++e)
    for (int c = 0; c < 2; ++c)
      y.insert(y.end(), {10.0 * e + c, 10.0 * e + c});
  Tensor weights = f32({3, 2}, {0.5, 0.25, 0.5, 0.25, 0.5, 0.25});
  Tensor out = moeCombine(f32({2, 2, 2}, y), experts, weights);
  // t0: 0.5 * (expert 1, slot 0 = 10) + 0.25 * (expert 0, slot 0 = 0) = 5.
  // t1: 0.5 * (expert 1, slot 1 = 11) + pair dropped = 5.5.
  // t2: 0.5 * (expert 0, slot 1 = 1) + pair dropped = 0.5.
  EXPECT_EQ(out.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_THAT(out.f, ElementsAre(5, 5, 5.5, 5.5, 0.5, 0.5));
}

TEST(ReferenceMoeTest, DispatchCombineIdentity) {
  // Without expert computation and with weights 1, combine(dispatch(x))
  // is x times the number of the token's pairs that were not dropped: k * x
  // when the capacity holds everything.
  const int64_t tokens = 7, hidden = 3, k = 2, numExperts = 4;
  Tensor x = randomF32({tokens, hidden}, 61);
  std::mt19937 engine(62);
  std::vector<int64_t> chosen;
  for (int64_t t = 0; t < tokens * k; ++t)
    chosen.push_back(engine() % numExperts);
  Tensor experts = i64({tokens, k}, chosen);
  Tensor ones = f32({tokens, k}, std::vector<double>(tokens * k, 1.0));
  Tensor all = moeCombine(moeDispatch(x, experts, numExperts, tokens * k),
                          experts, ones);
  EXPECT_EQ(all.f, binary(BinaryKind::Mul, x, scalarF32(2)).f);
  // Capacity 2: count by hand which pairs fit (first two per expert).
  Tensor some =
      moeCombine(moeDispatch(x, experts, numExperts, 2), experts, ones);
  std::vector<int64_t> used(numExperts, 0);
  for (int64_t t = 0; t < tokens; ++t) {
    int64_t kept = 0;
    for (int64_t j = 0; j < k; ++j)
      if (used[chosen[t * k + j]]++ < 2)
        ++kept;
    for (int64_t c = 0; c < hidden; ++c)
      EXPECT_EQ(some.f[t * hidden + c], kept * x.f[t * hidden + c])
          << "token " << t;
  }
}

TEST(ReferenceMoeTest, Errors) {
  Tensor x = f32({2, 1}, {1, 2});
  EXPECT_THAT(invalidArgumentMessage([&] {
                moeDispatch(x, i64({2, 1}, {0, 4}), 4, 2);
              }),
              HasSubstr("moe_dispatch: expert index 4 is out of range for 4 "
                        "experts"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                moeDispatch(x, i64({3, 1}, {0, 0, 0}), 4, 2);
              }),
              HasSubstr("input has 2 tokens but experts has 3"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                moeCombine(f32({1, 1, 1}, {1}), i64({2, 1}, {0, 0}),
                           f32({1, 2}, {1, 1}));
              }),
              HasSubstr("moe_combine: weights shape [1, 2] differs from "
                        "experts shape [2, 1]"));
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

TEST(ReferenceCrossEntropyTest, Reductions) {
  // Sample 0: logits (0, 0, 0), label 2: log 3 - 0 = 1.0986122886681098.
  // Sample 1: logits (1, 2, 3), label 2: log(e + e^2 + e^3) - 3
  //   = 3.40760596444438 - 3 = 0.40760596444438013.
  Tensor logits = f32({2, 3}, {0, 0, 0, 1, 2, 3});
  Tensor labels = i64({2}, {2, 2});
  expectF32Tensor(crossEntropy(logits, labels, LossReduction::None), {2},
                  {1.0986122886681098, 0.40760596444438013});
  // Sum 1.50621825311249; mean 0.753109126556245.
  expectF32Tensor(crossEntropy(logits, labels, LossReduction::Sum), {},
                  {1.50621825311249});
  expectF32Tensor(crossEntropy(logits, labels, LossReduction::Mean), {},
                  {0.753109126556245});
  // Label 0 of sample 1: 3.40760596444438 - 1 = 2.40760596444438.
  expectF32(
      crossEntropy(f32({3}, {1, 2, 3}), i64({}, {0}), LossReduction::None).f[0],
      2.40760596444438);
  // Stable for large logits: (1000, 1000), label 1 -> log 2.
  expectF32(crossEntropy(f32({1, 2}, {1000, 1000}), i64({1}, {1}),
                         LossReduction::None)
                .f[0],
            0.6931471805599453);
  EXPECT_THAT(invalidArgumentMessage([&] {
                crossEntropy(logits, i64({2}, {0, 3}), LossReduction::None);
              }),
              HasSubstr("cross_entropy: label 3 is out of range for 3 "
                        "classes"));
  EXPECT_THAT(invalidArgumentMessage([&] {
                crossEntropy(logits, i64({3}, {0, 0, 0}), LossReduction::Mean);
              }),
              HasSubstr("labels shape [3] must be the logits shape [2, 3] "
                        "without its class dimension"));
}

} // namespace
