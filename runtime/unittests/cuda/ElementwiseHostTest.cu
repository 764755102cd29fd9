//===- ElementwiseHostTest.cu - elementwise functors against the reference ===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Runs the drivers and functors of ElementwiseOps.cuh on the host (the same
// code the GPU runs, launched with runOnHost over host memory) and compares
// every op with the reference kernels on random data: all element types the
// CPU checks admit, ranks 0 and 1, broadcasting of every kind, aligned
// buffers (the 16-byte-pack paths) and buffers shifted by one element (the
// one-element paths).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/ElementwiseOps.cuh"
#include "runtime/kernels/ElementIO.h"
#include "runtime/reference/ReferenceKernels.h"

#include "HostBuffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace braid::rt;
namespace ew = braid::rt::cuda::ew;
using Shape = std::vector<int64_t>;

const DType kAllTypes[] = {DType::F32, DType::F16, DType::BF16,
                           DType::I64, DType::I32, DType::I1};
const DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

/// Runs every functor on the host and remembers how many indices it ran
/// (to see which variant the planner picked).
struct HostLaunch {
  int64_t *count = nullptr;
  template <typename F> void operator()(const F &functor, int64_t n) const {
    if (count)
      *count = n;
    cuda::runOnHost(functor, n);
  }
};

using Buffer = braid::rt::test::HostBuffer;
using braid::rt::test::isFloatType;
using braid::rt::test::numElements;

/// Random values: floats uniform in [lo, hi] (a `zeros` share of exact
/// zeros), integers uniform in [lo, hi] (i1: 0 / 1).
ref::Tensor randomTensor(std::mt19937 &rng, DType dtype, const Shape &shape,
                         double lo, double hi, double zeros = 0) {
  int64_t n = numElements(shape);
  std::uniform_real_distribution<double> unit(0, 1);
  if (isFloatType(dtype)) {
    std::vector<double> values(n);
    for (double &v : values)
      v = unit(rng) < zeros ? 0.0 : lo + (hi - lo) * unit(rng);
    return ref::Tensor::ofFloats(dtype, shape, values);
  }
  std::vector<int64_t> values(n);
  if (dtype == DType::I1) {
    for (int64_t &v : values)
      v = unit(rng) < 0.5;
  } else {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo),
                                                static_cast<int64_t>(hi));
    for (int64_t &v : values)
      v = unit(rng) < zeros ? 0 : dist(rng);
  }
  return ref::Tensor::ofInts(dtype, shape, values);
}

struct Tolerance {
  double atol = 0, rtol = 0;
};
const Tolerance kExact;
/// One rounding step of the element type apart (float math vs the
/// reference's double math rounded once).
Tolerance approx(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return {1e-4, 1e-3};
  case DType::BF16:
    return {1e-3, 8e-3};
  default:
    return {1e-6, 4e-6};
  }
}

void expectMatches(const ref::Tensor &got, const ref::Tensor &want,
                   Tolerance tol, const std::string &what) {
  ASSERT_EQ(got.dtype, want.dtype) << what;
  ASSERT_EQ(got.shape, want.shape) << what;
  int64_t n = want.numElements();
  int failures = 0;
  for (int64_t k = 0; k < n && failures < 5; ++k) {
    if (want.isFloat()) {
      double g = got.f[k], w = want.f[k];
      bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
                std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w);
      if (!ok) {
        ++failures;
        ADD_FAILURE() << what << ": element " << k << " is " << g
                      << ", expected " << w;
      }
    } else if (got.i[k] != want.i[k]) {
      ++failures;
      ADD_FAILURE() << what << ": element " << k << " is " << got.i[k]
                    << ", expected " << want.i[k];
    }
  }
}

std::string describe(const std::string &op, DType dtype,
                     const std::vector<Shape> &shapes, bool misalign) {
  std::string text = op + " " + std::string(toString(dtype));
  for (const Shape &shape : shapes)
    text += " " + shapeToString(shape);
  return text + (misalign ? " (misaligned)" : "");
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

const std::vector<Shape> kUnaryShapes = {
    {}, {1}, {7}, {33}, {4, 1000}, {2, 3, 0}, {3, 1, 17, 2}};

/// `AnyType`: neg and relu, which also take integers and i1.
template <ew::Unary K, bool AnyType = false>
void checkUnary(ref::UnaryKind kind, const char *name, bool exact, double lo,
                double hi) {
  constexpr bool anyType = AnyType;
  std::mt19937 rng(1234);
  for (DType dtype : kAllTypes) {
    if (!anyType && !isFloatType(dtype))
      continue;
    for (const Shape &shape : kUnaryShapes)
      for (bool misalign : {false, true}) {
        ref::Tensor x = randomTensor(rng, dtype, shape, lo, hi, 0.05);
        Buffer in(x, misalign), out(dtype, shape, misalign);
        if constexpr (AnyType)
          ew::runUnaryAny<K>(in.view, out.view, name, HostLaunch{});
        else
          ew::runUnaryFloat<K>(in.view, out.view, name, HostLaunch{});
        expectMatches(out.read(), ref::unary(kind, x),
                      exact ? kExact : approx(dtype),
                      describe(name, dtype, {shape}, misalign));
      }
  }
}

TEST(ElementwiseHost, UnaryExact) {
  checkUnary<ew::Unary::Neg, true>(ref::UnaryKind::Neg, "neg", true, -50, 50);
  checkUnary<ew::Unary::Relu, true>(ref::UnaryKind::Relu, "relu", true, -50,
                                    50);
  checkUnary<ew::Unary::Sqrt>(ref::UnaryKind::Sqrt, "sqrt", true, 0, 100);
}

TEST(ElementwiseHost, UnaryIntegerWraps) {
  // neg of the smallest i32 / i64 wraps to itself.
  for (DType dtype : {DType::I32, DType::I64}) {
    int64_t lowest = dtype == DType::I32 ? INT32_MIN : INT64_MIN;
    ref::Tensor x = ref::Tensor::ofInts(dtype, {3}, {lowest, -1, 5});
    Buffer in(x, false), out(dtype, {3}, false);
    ew::runUnaryAny<ew::Unary::Neg>(in.view, out.view, "neg", HostLaunch{});
    expectMatches(out.read(), ref::unary(ref::UnaryKind::Neg, x), kExact,
                  "neg wraps");
  }
}

TEST(ElementwiseHost, UnaryTranscendental) {
  checkUnary<ew::Unary::Exp>(ref::UnaryKind::Exp, "exp", false, -8, 8);
  checkUnary<ew::Unary::Log>(ref::UnaryKind::Log, "log", false, 0.01, 100);
  checkUnary<ew::Unary::Rsqrt>(ref::UnaryKind::Rsqrt, "rsqrt", false, 0.01,
                               100);
  checkUnary<ew::Unary::Tanh>(ref::UnaryKind::Tanh, "tanh", false, -6, 6);
  checkUnary<ew::Unary::Erf>(ref::UnaryKind::Erf, "erf", false, -4, 4);
  checkUnary<ew::Unary::Sigmoid>(ref::UnaryKind::Sigmoid, "sigmoid", false, -10,
                                 10);
  checkUnary<ew::Unary::Silu>(ref::UnaryKind::Silu, "silu", false, -10, 10);
  checkUnary<ew::Unary::Gelu>(ref::UnaryKind::Gelu, "gelu", false, -6, 6);
  checkUnary<ew::Unary::GeluTanh>(ref::UnaryKind::GeluTanh, "gelu(tanh)", false,
                                  -6, 6);
}

TEST(ElementwiseHost, UnarySpecialValues) {
  // log(0) = -inf, log(-1) = NaN, sqrt(-1) = NaN, relu(NaN) = NaN,
  // exp(100) = inf (f32 and f16 overflow).
  double nan = std::nan(""), inf = INFINITY;
  std::vector<double> values = {0.0, -1.0, nan, inf, -inf, 100.0, -0.0};
  for (DType dtype : kFloatTypes) {
    ref::Tensor x = ref::Tensor::ofFloats(dtype, {7}, values);
    Buffer in(x, false);
    auto check = [&](auto runner, ref::UnaryKind kind, const char *name) {
      Buffer out(dtype, {7}, false);
      runner(in.view, out.view);
      expectMatches(out.read(), ref::unary(kind, x), approx(dtype),
                    std::string(name) + " specials " +
                        std::string(toString(dtype)));
    };
    check(
        [](auto &a, auto &b) {
          ew::runUnaryFloat<ew::Unary::Log>(a, b, "log", HostLaunch{});
        },
        ref::UnaryKind::Log, "log");
    check(
        [](auto &a, auto &b) {
          ew::runUnaryFloat<ew::Unary::Sqrt>(a, b, "sqrt", HostLaunch{});
        },
        ref::UnaryKind::Sqrt, "sqrt");
    check(
        [](auto &a, auto &b) {
          ew::runUnaryAny<ew::Unary::Relu>(a, b, "relu", HostLaunch{});
        },
        ref::UnaryKind::Relu, "relu");
    check(
        [](auto &a, auto &b) {
          ew::runUnaryFloat<ew::Unary::Exp>(a, b, "exp", HostLaunch{});
        },
        ref::UnaryKind::Exp, "exp");
    check(
        [](auto &a, auto &b) {
          ew::runUnaryFloat<ew::Unary::Sigmoid>(a, b, "sigmoid", HostLaunch{});
        },
        ref::UnaryKind::Sigmoid, "sigmoid");
  }
}

//===----------------------------------------------------------------------===//
// Binary, compare
//===----------------------------------------------------------------------===//

/// (lhs, rhs) pairs and the output shape they broadcast to.
struct BinaryShapes {
  Shape lhs, rhs, out;
};
const std::vector<BinaryShapes> kBinaryShapes = {
    {{}, {}, {}},
    {{7}, {7}, {7}},
    {{1}, {5}, {5}},
    {{5}, {}, {5}},
    {{}, {3, 2}, {3, 2}},
    {{1000}, {1000}, {1000}},
    {{3, 1, 5}, {4, 5}, {3, 4, 5}},
    {{2, 3, 16}, {16}, {2, 3, 16}},
    {{32}, {4, 3, 32}, {4, 3, 32}},
    {{2, 3, 16}, {2, 1, 16}, {2, 3, 16}},
    {{64, 8}, {64, 1}, {64, 8}},
    {{4, 1}, {1, 48}, {4, 48}},
    {{2, 1, 3, 1}, {1, 4, 1, 5}, {2, 4, 3, 5}},
    {{0, 3}, {3}, {0, 3}},
    {{2, 5, 1, 16}, {5, 4, 16}, {2, 5, 4, 16}},
};

/// Runs `run(lhs, rhs, out)` for every dtype and shape pair and compares with
/// `reference(lhs, rhs)`. `makeRhs` draws the right operand (to keep
/// integer divisors non-zero).
template <typename Run, typename Reference, typename Draw>
void checkBinaryLike(const char *name, const DType *types, size_t numTypes,
                     DType outType, bool sameOutType, bool exact, Draw draw,
                     Run run, Reference reference) {
  std::mt19937 rng(99);
  for (size_t t = 0; t < numTypes; ++t) {
    DType dtype = types[t];
    for (const BinaryShapes &s : kBinaryShapes)
      for (bool misalign : {false, true}) {
        ref::Tensor a = draw(rng, dtype, s.lhs, false);
        ref::Tensor b = draw(rng, dtype, s.rhs, true);
        DType resultType = sameOutType ? dtype : outType;
        Buffer lhs(a, misalign), rhs(b, misalign),
            out(resultType, s.out, misalign);
        run(lhs.view, rhs.view, out.view);
        expectMatches(out.read(), reference(a, b),
                      exact ? kExact : approx(dtype),
                      describe(name, dtype, {s.lhs, s.rhs}, misalign));
      }
  }
}

template <ew::Binary K>
void checkBinary(ref::BinaryKind kind, const char *name, bool exact) {
  auto draw = [&](std::mt19937 &rng, DType dtype, const Shape &shape,
                  bool isRhs) {
    if (kind == ref::BinaryKind::Pow) {
      if (isFloatType(dtype))
        return isRhs ? randomTensor(rng, dtype, shape, -3, 3)
                     : randomTensor(rng, dtype, shape, 0.1, 3);
      // Integer exponents from -2 (bases are never 0) to 9.
      return isRhs ? randomTensor(rng, dtype, shape, -2, 9)
                   : randomTensor(rng, dtype, shape, 1, 7);
    }
    if (kind == ref::BinaryKind::Div && isRhs && !isFloatType(dtype)) {
      ref::Tensor t = randomTensor(rng, dtype, shape, -9, 9);
      for (int64_t &v : t.i)
        v = v == 0 ? 1 : v;
      return t;
    }
    if (dtype == DType::I32)
      return randomTensor(rng, dtype, shape, INT32_MIN, INT32_MAX);
    if (dtype == DType::I64)
      return randomTensor(rng, dtype, shape, -(int64_t(1) << 62),
                          int64_t(1) << 62);
    return randomTensor(rng, dtype, shape, -100, 100, 0.05);
  };
  checkBinaryLike(
      name, kAllTypes, std::size(kAllTypes), DType::F32, true, exact, draw,
      [&](const TensorView &a, const TensorView &b, const TensorView &out) {
        ew::runBinary<K>(a, b, out, name, HostLaunch{});
      },
      [&](const ref::Tensor &a, const ref::Tensor &b) {
        return ref::binary(kind, a, b);
      });
}

TEST(ElementwiseHost, BinaryArithmetic) {
  checkBinary<ew::Binary::Add>(ref::BinaryKind::Add, "add", true);
  checkBinary<ew::Binary::Sub>(ref::BinaryKind::Sub, "sub", true);
  checkBinary<ew::Binary::Mul>(ref::BinaryKind::Mul, "mul", true);
  checkBinary<ew::Binary::Div>(ref::BinaryKind::Div, "div", true);
  checkBinary<ew::Binary::Max>(ref::BinaryKind::Max, "max", true);
  checkBinary<ew::Binary::Min>(ref::BinaryKind::Min, "min", true);
  checkBinary<ew::Binary::Pow>(ref::BinaryKind::Pow, "pow", false);
}

TEST(ElementwiseHost, BinarySpecialValues) {
  // NaN propagation of max / min, signed zeros, inf arithmetic, the one
  // overflowing integer quotient.
  double nan = std::nan(""), inf = INFINITY;
  std::vector<double> lhs = {nan, 1.0, 0.0, -0.0, inf, inf, 2.0, -3.0};
  std::vector<double> rhs = {1.0, nan, -0.0, 0.0, inf, -inf, 0.0, 0.5};
  for (DType dtype : kFloatTypes) {
    ref::Tensor a = ref::Tensor::ofFloats(dtype, {8}, lhs);
    ref::Tensor b = ref::Tensor::ofFloats(dtype, {8}, rhs);
    Buffer x(a, false), y(b, false);
    auto check = [&](auto runner, ref::BinaryKind kind, const char *name) {
      Buffer out(dtype, {8}, false);
      runner(x.view, y.view, out.view);
      ref::Tensor want = ref::binary(kind, a, b);
      ref::Tensor got = out.read();
      expectMatches(got, want,
                    kind == ref::BinaryKind::Pow ? approx(dtype) : kExact,
                    std::string(name) + " specials");
      for (int64_t k = 0; k < 8; ++k)
        if (!std::isnan(want.f[k]) && kind != ref::BinaryKind::Pow)
          EXPECT_EQ(std::signbit(got.f[k]), std::signbit(want.f[k]))
              << name << " element " << k;
    };
    check(
        [](auto &a, auto &b, auto &o) {
          ew::runBinary<ew::Binary::Max>(a, b, o, "max", HostLaunch{});
        },
        ref::BinaryKind::Max, "max");
    check(
        [](auto &a, auto &b, auto &o) {
          ew::runBinary<ew::Binary::Min>(a, b, o, "min", HostLaunch{});
        },
        ref::BinaryKind::Min, "min");
    check(
        [](auto &a, auto &b, auto &o) {
          ew::runBinary<ew::Binary::Add>(a, b, o, "add", HostLaunch{});
        },
        ref::BinaryKind::Add, "add");
    check(
        [](auto &a, auto &b, auto &o) {
          ew::runBinary<ew::Binary::Div>(a, b, o, "div", HostLaunch{});
        },
        ref::BinaryKind::Div, "div");
    check(
        [](auto &a, auto &b, auto &o) {
          ew::runBinary<ew::Binary::Pow>(a, b, o, "pow", HostLaunch{});
        },
        ref::BinaryKind::Pow, "pow");
  }
  for (DType dtype : {DType::I32, DType::I64}) {
    int64_t lowest = dtype == DType::I32 ? INT32_MIN : INT64_MIN;
    ref::Tensor a = ref::Tensor::ofInts(dtype, {4}, {lowest, -7, 7, lowest});
    ref::Tensor b = ref::Tensor::ofInts(dtype, {4}, {-1, 2, -2, 1});
    Buffer x(a, false), y(b, false), out(dtype, {4}, false);
    ew::runBinary<ew::Binary::Div>(x.view, y.view, out.view, "div",
                                   HostLaunch{});
    expectMatches(out.read(), ref::binary(ref::BinaryKind::Div, a, b), kExact,
                  "integer div");
  }
}

TEST(ElementwiseHost, Compare) {
  const std::pair<ew::Compare, ref::CompareKind> kinds[] = {
      {ew::Compare::EQ, ref::CompareKind::EQ},
      {ew::Compare::NE, ref::CompareKind::NE},
      {ew::Compare::LT, ref::CompareKind::LT},
      {ew::Compare::LE, ref::CompareKind::LE},
      {ew::Compare::GT, ref::CompareKind::GT},
      {ew::Compare::GE, ref::CompareKind::GE}};
  // Few distinct values, so that ties are common.
  auto draw = [](std::mt19937 &rng, DType dtype, const Shape &shape, bool) {
    ref::Tensor t = randomTensor(rng, dtype, shape, -3, 3);
    for (double &v : t.f)
      v = std::round(v * 2) / 2;
    return t;
  };
  for (const auto &entry : kinds) {
    ew::Compare kind = entry.first;
    ref::CompareKind refKind = entry.second;
    checkBinaryLike(
        "compare", kAllTypes, std::size(kAllTypes), DType::I1, false, true,
        draw,
        [&](const TensorView &a, const TensorView &b, const TensorView &out) {
          ew::runCompare(kind, a, b, out, HostLaunch{});
        },
        [&](const ref::Tensor &a, const ref::Tensor &b) {
          return ref::compare(refKind, a, b);
        });
  }
  // NaN compares unequal to everything, itself included.
  ref::Tensor a = ref::Tensor::ofFloats(DType::F32, {3}, {std::nan(""), 1, 2});
  ref::Tensor b = ref::Tensor::ofFloats(DType::F32, {3}, {std::nan(""), 1, 3});
  Buffer x(a, false), y(b, false);
  for (auto [kind, refKind] : kinds) {
    Buffer out(DType::I1, {3}, false);
    ew::runCompare(kind, x.view, y.view, out.view, HostLaunch{});
    expectMatches(out.read(), ref::compare(refKind, a, b), kExact,
                  "compare NaN");
  }
}

//===----------------------------------------------------------------------===//
// Select, cast
//===----------------------------------------------------------------------===//

TEST(ElementwiseHost, Select) {
  struct Shapes {
    Shape condition, whenTrue, whenFalse, out;
  };
  const Shapes shapes[] = {
      {{}, {}, {}, {}},
      {{9}, {9}, {9}, {9}},
      {{1000}, {1000}, {1000}, {1000}},
      {{4, 5}, {5}, {4, 1}, {4, 5}},
      {{}, {3}, {}, {3}},
      {{2, 16}, {2, 16}, {16}, {2, 16}},
      {{3, 1, 32}, {1, 4, 32}, {32}, {3, 4, 32}},
      {{6, 1}, {6, 16}, {}, {6, 16}},
      {{2, 1, 3}, {1}, {5, 1}, {2, 5, 3}},
  };
  std::mt19937 rng(7);
  for (DType dtype : kAllTypes)
    for (const Shapes &s : shapes)
      for (bool misalign : {false, true}) {
        ref::Tensor c = randomTensor(rng, DType::I1, s.condition, 0, 1);
        ref::Tensor t = randomTensor(rng, dtype, s.whenTrue, -1000, 1000);
        ref::Tensor f = randomTensor(rng, dtype, s.whenFalse, -1000, 1000);
        Buffer cb(c, misalign), tb(t, misalign), fb(f, misalign),
            out(dtype, s.out, misalign);
        ew::runSelect(cb.view, tb.view, fb.view, out.view, HostLaunch{});
        expectMatches(out.read(), ref::select(c, t, f), kExact,
                      describe("select", dtype,
                               {s.condition, s.whenTrue, s.whenFalse},
                               misalign));
      }
}

/// Source values for casts that the reference accepts for every target:
/// floats in i32 range with fractions, signs and zeros; integers wide
/// enough to round in f32 / bf16 / f16 (double rounding would show).
ref::Tensor castSource(std::mt19937 &rng, DType dtype, const Shape &shape) {
  switch (dtype) {
  case DType::I64: {
    ref::Tensor t = randomTensor(rng, dtype, shape, -(int64_t(1) << 62),
                                 int64_t(1) << 62, 0.05);
    // Small values too (they convert exactly), and 2^k + small offsets
    // (where rounding ties and near-ties live).
    for (size_t k = 0; k < t.i.size(); ++k)
      if (k % 3 == 1)
        t.i[k] %= 70000;
      else if (k % 3 == 2)
        t.i[k] = (int64_t(1) << (24 + k % 30)) + (t.i[k] % 1025);
    // Just above a rounding midpoint of bf16 (2^m + 2^(m-8) + 1) and of f32
    // (2^m + 2^(m-24) + 1, m > 53): rounding through float, or directly
    // instead of through double, gives another result than the reference.
    for (size_t k = 0; k < t.i.size(); k += 7) {
      int m = 20 + static_cast<int>(k % 43);
      int64_t value = m > 53 ? (int64_t(1) << m) + (int64_t(1) << (m - 24)) + 1
                             : (int64_t(1) << m) + (int64_t(1) << (m - 8)) + 1;
      t.i[k] = k % 2 ? -value : value;
    }
    return t;
  }
  case DType::I32: {
    ref::Tensor t = randomTensor(rng, dtype, shape, INT32_MIN, INT32_MAX, 0.05);
    for (size_t k = 0; k < t.i.size(); k += 2)
      t.i[k] %= 70000;
    for (size_t k = 1; k < t.i.size(); k += 6) {
      int m = 9 + static_cast<int>(k % 22);
      t.i[k] = (int64_t(1) << m) + (int64_t(1) << (m - 8)) + 1;
    }
    return t;
  }
  case DType::I1:
    return randomTensor(rng, dtype, shape, 0, 1);
  default: {
    ref::Tensor t = randomTensor(rng, dtype, shape, -40000, 40000, 0.1);
    for (size_t k = 0; k < t.f.size(); k += 3)
      t.f[k] = ref::roundTo(dtype, t.f[k] / 10000);
    return t;
  }
  }
}

TEST(ElementwiseHost, CastEveryPair) {
  const std::vector<Shape> shapes = {{}, {1}, {17}, {1000}, {3, 5, 64}};
  std::mt19937 rng(42);
  for (DType from : kAllTypes)
    for (DType to : kAllTypes)
      for (const Shape &shape : shapes)
        for (bool misalign : {false, true}) {
          ref::Tensor x = castSource(rng, from, shape);
          Buffer in(x, misalign), out(to, shape, misalign);
          ew::runCast(in.view, out.view, HostLaunch{});
          expectMatches(out.read(), ref::cast(x, to), kExact,
                        "cast " + std::string(toString(from)) + " -> " +
                            describe("", to, {shape}, misalign));
        }
}

TEST(ElementwiseHost, CastOutOfRangeSaturates) {
  // The reference throws; the GPU cannot, and saturates (NaN gives 0).
  double nan = std::nan("");
  ref::Tensor x = ref::Tensor::ofFloats(DType::F32, {5},
                                        {3e9, -3e9, nan, 1e20, -2147483648.0});
  Buffer in(x, false), out32(DType::I32, {5}, false),
      out64(DType::I64, {5}, false);
  ew::runCast(in.view, out32.view, HostLaunch{});
  ew::runCast(in.view, out64.view, HostLaunch{});
  EXPECT_EQ(out32.read().i, (std::vector<int64_t>{INT32_MAX, INT32_MIN, 0,
                                                  INT32_MAX, INT32_MIN}));
  EXPECT_EQ(out64.read().i,
            (std::vector<int64_t>{3000000000LL, -3000000000LL, 0, INT64_MAX,
                                  -2147483648LL}));
}

//===----------------------------------------------------------------------===//
// The planner
//===----------------------------------------------------------------------===//

TEST(ElementwiseHost, PlannerPicksPacks) {
  std::mt19937 rng(5);
  auto countOf = [&](DType dtype, const Shape &lhs, const Shape &rhs,
                     const Shape &out, bool misalign) {
    Buffer a(randomTensor(rng, dtype, lhs, -5, 5), misalign),
        b(randomTensor(rng, dtype, rhs, -5, 5), misalign),
        o(dtype, out, misalign);
    int64_t count = -1;
    ew::runBinary<ew::Binary::Add>(a.view, b.view, o.view, "add",
                                   HostLaunch{&count});
    return count;
  };
  // Contiguous: 16-byte packs plus a tail of single elements.
  EXPECT_EQ(countOf(DType::F32, {1026}, {1026}, {1026}, false), 256 + 2);
  EXPECT_EQ(countOf(DType::F16, {1024}, {1024}, {1024}, false), 128);
  EXPECT_EQ(countOf(DType::I1, {64}, {64}, {64}, false), 4);
  EXPECT_EQ(countOf(DType::I64, {64}, {64}, {64}, false), 32);
  EXPECT_EQ(countOf(DType::F32, {1024}, {1024}, {1024}, true), 1024);
  // Bias add and row broadcast: packs; a column broadcast splats.
  EXPECT_EQ(countOf(DType::F32, {2, 3, 16}, {16}, {2, 3, 16}, false), 24);
  EXPECT_EQ(countOf(DType::BF16, {8, 64}, {8, 1}, {8, 64}, false), 64);
  // An inner size that no pack divides: one element per index.
  EXPECT_EQ(countOf(DType::F32, {5, 6}, {6}, {5, 6}, false), 30);
}

TEST(ElementwiseHost, Coalesce) {
  // [2, 3, 4] + [3, 4] -> one dimension each after merging... except that
  // the broadcast operand repeats: [2, 12] with strides (12, 1) and (0, 1).
  cuda::Dims dims[2] = {cuda::broadcastDims({2, 3, 4}, {2, 3, 4}),
                        cuda::broadcastDims({3, 4}, {2, 3, 4})};
  ew::coalesce(dims, 2);
  ASSERT_EQ(dims[0].rank, 2);
  EXPECT_EQ(dims[0].size[0], 2);
  EXPECT_EQ(dims[0].size[1], 12);
  EXPECT_EQ(dims[0].stride[0], 12);
  EXPECT_EQ(dims[1].stride[0], 0);
  EXPECT_EQ(dims[1].stride[1], 1);
  // Size-1 dimensions vanish; all of them: rank 0.
  cuda::Dims ones[1] = {cuda::broadcastDims({1, 1}, {1, 1, 1})};
  ew::coalesce(ones, 1);
  EXPECT_EQ(ones[0].rank, 0);
  EXPECT_EQ(ew::offsetOf(ones[0], 0), 0);
}

} // namespace

namespace {

// A fused chain (the `elementwise` kernel) gives the bits of its ops run one
// by one through their own functors: inputs of the output's shape, a
// broadcast row, a broadcast column and a scalar; every binary op and unary
// ops; an output that is its first input; and the errors for an output
// overlapping a broadcast input and a chain over the limits.
TEST(ElementwiseHost, FusedChainGivesTheUnfusedOpsBits) {
  std::mt19937 rng(11);
  Shape shape = {3, 5, 12};
  // bf16 and f16 (braidc --precision): each step rounded to the type.
  for (DType dtype : {DType::BF16, DType::F16}) {
    Buffer x(randomTensor(rng, dtype, shape, -3, 3), false);
    Buffer y(randomTensor(rng, dtype, shape, 0.5, 2), false);
    Buffer scalar(randomTensor(rng, dtype, {1}, 1, 2), false);
    auto binary = [&](auto kind, const Buffer &a, const Buffer &b) {
      auto out = std::make_unique<Buffer>(dtype, shape, false);
      ew::runBinary<decltype(kind)::value>(a.view, b.view, out->view, "b",
                                           HostLaunch{});
      return out;
    };
    using B = ew::Binary;
    using U = ew::Unary;
    // t = gelu_tanh((x * y) / scalar) - y
    auto t0 = binary(std::integral_constant<B, B::Mul>{}, x, y);
    auto t1 = binary(std::integral_constant<B, B::Div>{}, *t0, scalar);
    Buffer t2(dtype, shape, false);
    ew::runUnaryFloat<U::GeluTanh>(t1->view, t2.view, "u", HostLaunch{});
    auto t3 = binary(std::integral_constant<B, B::Sub>{}, t2, y);
    std::vector<ew::ChainOp> ops(4);
    ops[0].isUnary = ops[1].isUnary = ops[3].isUnary = false;
    ops[0].binary = B::Mul, ops[0].a = 0, ops[0].b = 1;
    ops[1].binary = B::Div, ops[1].a = 3, ops[1].b = 2;
    ops[2].isUnary = true, ops[2].unary = U::GeluTanh, ops[2].a = 4;
    ops[2].b = -1;
    ops[3].binary = B::Sub, ops[3].a = 5, ops[3].b = 1;
    Buffer fused(dtype, shape, false);
    ew::runChain(ops, {x.view, y.view, scalar.view}, fused.view, HostLaunch{});
    EXPECT_EQ(fused.read().f, t3->read().f) << toString(dtype);
    EXPECT_NE(fused.read().f, x.read().f);
  }
  Buffer x(randomTensor(rng, DType::F32, shape, -3, 3), false);
  Buffer y(randomTensor(rng, DType::F32, shape, 0.5, 2), false);
  Buffer row(randomTensor(rng, DType::F32, {12}, -1, 1), false);
  Buffer column(randomTensor(rng, DType::F32, {3, 5, 1}, 0.5, 1.5), false);
  Buffer scalar(randomTensor(rng, DType::F32, {1}, 1, 2), false);
  // Unfused: t0 = x * column; t1 = t0 + row; t2 = gelu_tanh(t1);
  // t3 = t2 - y; t4 = t3 / scalar; t5 = rsqrt(t4 * t4 + y); t6 = -exp(t5).
  auto binary = [&](auto kind, const Buffer &a, const Buffer &b) {
    auto out = std::make_unique<Buffer>(DType::F32, shape, false);
    ew::runBinary<decltype(kind)::value>(a.view, b.view, out->view, "b",
                                         HostLaunch{});
    return out;
  };
  auto unary = [&](auto kind, const Buffer &a) {
    auto out = std::make_unique<Buffer>(DType::F32, shape, false);
    ew::runUnaryFloat<decltype(kind)::value>(a.view, out->view, "u",
                                             HostLaunch{});
    return out;
  };
  using B = ew::Binary;
  using U = ew::Unary;
  auto t0 = binary(std::integral_constant<B, B::Mul>{}, x, column);
  auto t1 = binary(std::integral_constant<B, B::Add>{}, *t0, row);
  auto t2 = unary(std::integral_constant<U, U::GeluTanh>{}, *t1);
  auto t3 = binary(std::integral_constant<B, B::Sub>{}, *t2, y);
  auto t4 = binary(std::integral_constant<B, B::Div>{}, *t3, scalar);
  auto t5a = binary(std::integral_constant<B, B::Mul>{}, *t4, *t4);
  auto t5b = binary(std::integral_constant<B, B::Add>{}, *t5a, y);
  auto t5 = unary(std::integral_constant<U, U::Rsqrt>{}, *t5b);
  auto t6a = unary(std::integral_constant<U, U::Exp>{}, *t5);
  auto t6 = unary(std::integral_constant<U, U::Neg>{}, *t6a);

  auto op = [](bool isUnary, U u, B b, int a, int r) {
    ew::ChainOp o;
    o.isUnary = isUnary, o.unary = u, o.binary = b, o.a = a, o.b = r;
    return o;
  };
  // Registers: x 0, y 1, row 2, column 3, scalar 4, steps from 5.
  std::vector<ew::ChainOp> ops = {
      op(false, U::Neg, B::Mul, 0, 3),      op(false, U::Neg, B::Add, 5, 2),
      op(true, U::GeluTanh, B::Add, 6, -1), op(false, U::Neg, B::Sub, 7, 1),
      op(false, U::Neg, B::Div, 8, 4),      op(false, U::Neg, B::Mul, 9, 9),
      op(false, U::Neg, B::Add, 10, 1),     op(true, U::Rsqrt, B::Add, 11, -1),
      op(true, U::Exp, B::Add, 12, -1),     op(true, U::Neg, B::Add, 13, -1)};
  Buffer fused(DType::F32, shape, false);
  ew::runChain(ops, {x.view, y.view, row.view, column.view, scalar.view},
               fused.view, HostLaunch{});
  EXPECT_EQ(fused.read().f, t6->read().f);

  // In place over the first input: (x + y) * x.
  ref::Tensor before = x.read();
  std::vector<ew::ChainOp> small = {op(false, U::Neg, B::Add, 0, 1),
                                    op(false, U::Neg, B::Mul, 2, 0)};
  ew::runChain(small, {x.view, y.view}, x.view, HostLaunch{});
  ref::Tensor after = x.read(), other = y.read();
  for (size_t i = 0; i < after.f.size(); ++i)
    EXPECT_EQ(after.f[i], static_cast<double>((static_cast<float>(before.f[i]) +
                                               static_cast<float>(other.f[i])) *
                                              static_cast<float>(before.f[i])));

  // An output over a broadcast input (x's first row read by every row of
  // x), and too many steps.
  TensorView firstRow = x.view;
  firstRow.shape = {12};
  EXPECT_THROW(ew::runChain(small, {firstRow, y.view}, x.view, HostLaunch{}),
               std::exception);
  std::vector<ew::ChainOp> tooMany(braid::rt::kMaxChainSteps + 1,
                                   op(true, U::Neg, B::Add, 0, -1));
  EXPECT_THROW(ew::runChain(tooMany, {x.view}, fused.view, HostLaunch{}),
               std::exception);
}

} // namespace
