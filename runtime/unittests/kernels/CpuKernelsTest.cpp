//===- CpuKernelsTest.cpp - every CPU kernel against the reference --------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Each case runs one CPU kernel on random data in arena-like storage, through
// the registry (verify, then run), and compares with the reference kernel
// called directly. f32 kernels that do not go through the reference (GEMM,
// elementwise arithmetic, softmax, normalizations) must agree to a relative
// error below 1e-5; the others must agree exactly.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Shape.h"
#include "runtime/kernels/CpuKernels.h"

#include "runtime/kernels/ElementIO.h"
#include "runtime/kernels/FloatKernels.h"
#include "runtime/plan/Plan.pb.h"
#include "runtime/plan/PlanError.h"
#include "runtime/reference/ReferenceKernels.h"

#include "../kernels/RandomTensors.h"
#include "../plan/PlanBuilder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>

using namespace braid::rt;
namespace plan = braid::plan;
using namespace braid::rt::test;
using Shape = std::vector<int64_t>;
using ref::Tensor;

namespace {

/// The largest relative error allowed for f32 results, measured against the
/// largest magnitude of the reference result.
constexpr double kF32Tolerance = 1e-5;

/// One kernel call: the op, its attributes and indices, inputs and the
/// dtype and shape of each output.
class KernelCall {
public:
  explicit KernelCall(const std::string &op) { kernel.set_op(op); }

  KernelCall &in(Tensor tensor) {
    inputs.push_back(std::move(tensor));
    return *this;
  }
  KernelCall &out(DType dtype, Shape shape) {
    outputs.emplace_back(dtype, std::move(shape));
    return *this;
  }
  KernelCall &index(int64_t value) {
    indices.push_back(value);
    kernel.add_indices()->set_constant(value);
    return *this;
  }

  /// Verifies and runs the CPU kernel; returns its outputs. With
  /// `constantInputs`, first lets the kernel prepare as an executor would
  /// with those inputs constant, and `prepared` says whether it did.
  std::vector<Tensor> run(const std::vector<bool> &constantInputs = {},
                          bool *prepared = nullptr) {
    const KernelInfo *info = cpuKernels().lookup(kernel.op());
    if (!info)
      throw std::runtime_error("no CPU kernel " + kernel.op());
    std::vector<std::vector<uint8_t>> storage;
    KernelArgs args;
    args.kernel = &kernel;
    args.indices = indices;
    args.numIndices = static_cast<int>(indices.size());
    for (const Tensor &tensor : inputs) {
      storage.emplace_back(count(tensor.shape) * byteSize(tensor.dtype) + 1);
      writeTensor(tensor, tensor.dtype, tensor.shape, storage.back().data());
    }
    for (const auto &[dtype, shape] : outputs)
      storage.emplace_back(count(shape) * byteSize(dtype) + 1, 0xcd);
    size_t k = 0;
    for (const Tensor &tensor : inputs)
      args.inputs.push_back({tensor.dtype, tensor.shape, storage[k++].data()});
    for (const auto &[dtype, shape] : outputs)
      args.outputs.push_back({dtype, shape, storage[k++].data()});
    cpuKernels().verify(*info, args);
    std::map<std::string, std::shared_ptr<void>> shared;
    PreparedKernel state;
    if (!constantInputs.empty() && info->prepare) {
      PrepareInputs given;
      given.constant = constantInputs;
      given.soleReader.assign(constantInputs.size(), false);
      given.shared = &shared;
      state = info->prepare(args, given);
      args.prepared = state.state.get();
    }
    if (prepared)
      *prepared = args.prepared != nullptr;
    info->run(args);
    std::vector<Tensor> results;
    for (const TensorView &view : args.outputs)
      results.push_back(readTensor(view.dtype, view.shape, view.data));
    return results;
  }

  plan::Kernel kernel;
  std::vector<Tensor> inputs;
  std::vector<std::pair<DType, Shape>> outputs;
  std::vector<int64_t> indices;
};

/// Checks `actual` against `expected`: same dtype and shape, integers exactly,
/// floats within `tolerance` of the largest reference magnitude (0: exactly).
void expectMatches(const Tensor &actual, const Tensor &expected,
                   double tolerance, const std::string &what) {
  ASSERT_EQ(actual.dtype, expected.dtype) << what;
  ASSERT_EQ(actual.shape, expected.shape) << what;
  if (!expected.isFloat()) {
    EXPECT_EQ(actual.i, expected.i) << what;
    return;
  }
  double scale = 0;
  for (double value : expected.f)
    if (std::isfinite(value))
      scale = std::max(scale, std::fabs(value));
  double worst = 0;
  for (size_t k = 0; k < expected.f.size(); ++k) {
    double a = actual.f[k], e = expected.f[k];
    if (std::isnan(e) || std::isinf(e)) {
      EXPECT_TRUE(std::isnan(e) ? std::isnan(a) : a == e)
          << what << " element " << k << ": " << a << " vs " << e;
      continue;
    }
    worst = std::max(worst, std::fabs(a - e));
  }
  if (tolerance == 0)
    EXPECT_EQ(worst, 0.0) << what;
  else
    EXPECT_LE(worst, tolerance * std::max(scale, 1e-30)) << what;
  // A test must be able to fail: random data is never all zeros.
  if (expected.numElements() > 0 && scale == 0 && tolerance != 0)
    ADD_FAILURE() << what << ": reference result is all zeros";
}

void expectMatches(KernelCall call, const std::vector<Tensor> &expected,
                   double tolerance = 0) {
  std::string what = call.kernel.op();
  for (const Tensor &input : call.inputs)
    what +=
        " " + std::string(toString(input.dtype)) + shapeToString(input.shape);
  std::vector<Tensor> actual = call.run();
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    expectMatches(actual[i], expected[i], tolerance,
                  what + " output " + std::to_string(i));
}

double toleranceFor(DType dtype, bool direct) {
  return dtype == DType::F32 && direct ? kF32Tolerance : 0;
}

TEST(CpuKernelsTest, RegistryKnowsEveryBraidOp) {
  for (const char *op : {"neg",
                         "exp",
                         "log",
                         "sqrt",
                         "rsqrt",
                         "tanh",
                         "erf",
                         "sigmoid",
                         "silu",
                         "relu",
                         "gelu",
                         "add",
                         "sub",
                         "mul",
                         "div",
                         "pow",
                         "max",
                         "min",
                         "compare",
                         "select",
                         "cast",
                         "matmul",
                         "grouped_matmul",
                         "reduce_sum",
                         "reduce_mean",
                         "reduce_max",
                         "softmax",
                         "layer_norm",
                         "rms_norm",
                         "rotary",
                         "gather",
                         "scatter_add",
                         "reshape",
                         "transpose",
                         "slice",
                         "concat",
                         "split",
                         "broadcast_to",
                         "attention",
                         "attention_partial",
                         "attention_merge",
                         "router_topk",
                         "moe_dispatch",
                         "moe_combine",
                         "cross_entropy",
                         "copy"})
    EXPECT_NE(cpuKernels().lookup(op), nullptr) << op;
  EXPECT_EQ(cpuKernels().lookup("constant"), nullptr);
  EXPECT_EQ(cpuKernels().lookup("all_reduce"), nullptr);
}

TEST(CpuKernelsTest, Unary) {
  using U = ref::UnaryKind;
  const std::pair<const char *, U> kinds[] = {
      {"neg", U::Neg},   {"exp", U::Exp},         {"log", U::Log},
      {"sqrt", U::Sqrt}, {"rsqrt", U::Rsqrt},     {"tanh", U::Tanh},
      {"erf", U::Erf},   {"sigmoid", U::Sigmoid}, {"silu", U::Silu},
      {"relu", U::Relu}, {"gelu", U::Gelu}};
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    for (const auto &[op, kind] : kinds) {
      bool positive = kind == U::Log || kind == U::Sqrt || kind == U::Rsqrt;
      Tensor x = randomFloats(dtype, {3, 5}, positive ? 0.1 : -2, 2);
      // f32 tanh is a float approximation (TanhWithinFourUlp below), the
      // rest the reference's double rounded once.
      bool approximated = kind == U::Tanh || kind == U::Exp ||
                          kind == U::Sigmoid || kind == U::Silu ||
                          kind == U::Gelu;
      double tolerance = approximated && dtype == DType::F32 ? 1e-6 : 0;
      expectMatches(KernelCall(op).in(x).out(dtype, {3, 5}),
                    {ref::unary(kind, x)}, tolerance);
    }
  Tensor x = randomFloats(DType::F32, {4, 6}, -3, 3);
  KernelCall gelu("gelu");
  setBool(gelu.kernel, "tanh", true);
  expectMatches(gelu.in(x).out(DType::F32, {4, 6}),
                {ref::unary(U::GeluTanh, x)}, 2e-5);
  Tensor ints = randomInts(DType::I64, {7}, -50, 50);
  expectMatches(KernelCall("neg").in(ints).out(DType::I64, {7}),
                {ref::unary(U::Neg, ints)});
  expectMatches(KernelCall("relu").in(ints).out(DType::I64, {7}),
                {ref::unary(U::Relu, ints)});
}

/// Distance in representable floats (same sign assumed or zero between).
int64_t ulpDistance(float a, float b) {
  auto ordered = [](float f) {
    int32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    return bits < 0 ? int64_t(INT32_MIN) - bits : int64_t(bits);
  };
  return std::llabs(ordered(a) - ordered(b));
}

/// Which copy of the float approximations the accuracy tests below check:
/// each runs for the baseline copy and, where the CPU has it, for the
/// AVX-512 one (built with fused multiply-adds, so its bits differ).
bool gWideCopy = false;
template <ref::UnaryKind K> float approximate(float x) {
  return cpu::approximateF32(K, x, gWideCopy);
}
void forEachCopy(const std::function<void()> &body) {
  for (bool wide : {false, true}) {
    if (wide && !cpu::hasAvx512())
      continue;
    gWideCopy = wide;
    SCOPED_TRACE(wide ? "AVX-512 copy" : "baseline copy");
    body();
  }
  gWideCopy = false;
}

// The f32 tanh against double tanh rounded to float: every float in
// [-12, 12] at a stride (and the neighbourhood of the two formulas' seam at
// 0.55), tiny and denormal inputs, and the special values.
/// The largest relative error of `got` against `exact` (in double, rounded
/// to float) on every float in [-limit, limit] at a stride and on tiny
/// inputs of both signs, at `worstAt`; where the exact result is below
/// FLT_MIN, `got` must be too.
double worstRelativeError(float (*got)(float), double (*exact)(double),
                          float limit, float &worstAt) {
  double worst = 0;
  auto check = [&](float x) {
    float expected = static_cast<float>(exact(x));
    float value = got(x);
    if (std::fabs(expected) < FLT_MIN) {
      EXPECT_LE(std::fabs(value), FLT_MIN) << "at x = " << x;
      return;
    }
    double error = std::fabs(static_cast<double>(value) - expected) /
                   std::fabs(static_cast<double>(expected));
    if (error > worst) {
      worst = error;
      worstAt = x;
    }
  };
  for (float x = -limit; x <= limit; x = std::nextafter(x, limit + 1) + 1e-5f)
    check(x);
  for (float x = 1e-38f; x < 1e-3f; x *= 1.001f)
    check(x), check(-x);
  return worst;
}

// The f32 tanh-GELU against the function in double, rounded to float, on
// [-12, 12], tiny inputs, and the special values (measured worst: 1.3e-5 at
// x = -10.0). The expected value is x sigmoid(2u), not the reference's
// 0.5 x (1 + tanh(u)), which cancels to 0 in double below x = -5.9 where the
// function is still a normal float down to x = -10.
TEST(CpuKernelsTest, GeluTanhWithinRelativeTwoEMinusFive) {
  forEachCopy([] {
    float worstAt = 0;
    double worst = worstRelativeError(
        approximate<ref::UnaryKind::GeluTanh>,
        [](double x) {
          double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
          return x / (1.0 + std::exp(-2.0 * u));
        },
        12.0f, worstAt);
    EXPECT_LE(worst, 2e-5) << "at x = " << worstAt;
    EXPECT_EQ(approximate<ref::UnaryKind::GeluTanh>(0.0f), 0.0f);
    EXPECT_EQ(approximate<ref::UnaryKind::GeluTanh>(INFINITY), INFINITY);
    EXPECT_EQ(approximate<ref::UnaryKind::GeluTanh>(100.0f), 100.0f);
    EXPECT_EQ(approximate<ref::UnaryKind::GeluTanh>(-100.0f), 0.0f);
    EXPECT_TRUE(std::isnan(approximate<ref::UnaryKind::GeluTanh>(NAN)));
  });
}

// The f32 exact GELU against x erfc(-x / sqrt 2) / 2 in double, rounded to
// float, on [-14, 14] and tiny inputs (measured worst: 1.9e-5 at x = -13.1,
// where the exponent -x^2 / 2 is rounded to float).
TEST(CpuKernelsTest, GeluErfWithinRelativeThreeEMinusFive) {
  forEachCopy([] {
    float worstAt = 0;
    double worst = worstRelativeError(
        approximate<ref::UnaryKind::Gelu>,
        [](double x) { return 0.5 * x * std::erfc(-x * M_SQRT1_2); }, 14.0f,
        worstAt);
    EXPECT_LE(worst, 3e-5) << "at x = " << worstAt;
    EXPECT_EQ(approximate<ref::UnaryKind::Gelu>(0.0f), 0.0f);
    EXPECT_TRUE(std::signbit(approximate<ref::UnaryKind::Gelu>(-0.0f)));
    EXPECT_EQ(approximate<ref::UnaryKind::Gelu>(INFINITY), INFINITY);
    EXPECT_EQ(approximate<ref::UnaryKind::Gelu>(100.0f), 100.0f);
    EXPECT_EQ(approximate<ref::UnaryKind::Gelu>(-100.0f), 0.0f);
    EXPECT_TRUE(std::isnan(approximate<ref::UnaryKind::Gelu>(NAN)));
  });
}

// The AVX-512 copy of the float approximations (fused multiply-adds) agrees
// with the baseline copy on a sweep with the special values, for every kind
// it computes: NaN, infinities and zeros (with their signs) exactly, and
// elsewhere, where the result is a normal float, within twice the accuracy
// each copy is tested for on its own above and below (8 ulp; 4e-5 and 6e-5
// relative for the GELUs, whose error at large negative x comes from the
// exponent's rounding, which the two copies round differently).
TEST(CpuKernelsTest, Avx512ApproximationsAgreeWithTheBaseline) {
  if (!cpu::hasAvx512())
    GTEST_SKIP() << "no AVX-512 on this CPU (or in this build)";
  std::vector<float> x;
  for (float v = -120.0f; v <= 120.0f; v += 0.0137f)
    x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-38f, 3e38f, -3e38f, INFINITY,
                  -INFINITY, NAN})
    x.push_back(v);
  using U = ref::UnaryKind;
  for (U kind : {U::Tanh, U::Exp, U::Sigmoid, U::Silu, U::Gelu, U::GeluTanh}) {
    std::vector<float> base(x.size()), wide(x.size());
    ASSERT_TRUE(cpu::mapFloatUnary(kind, x.data(), base.data(),
                                   static_cast<int64_t>(x.size()), false));
    ASSERT_TRUE(cpu::mapFloatUnary(kind, x.data(), wide.data(),
                                   static_cast<int64_t>(x.size()), true));
    double tolerance = kind == U::GeluTanh ? 4e-5
                       : kind == U::Gelu   ? 6e-5
                                           : 8 * FLT_EPSILON;
    for (size_t i = 0; i < x.size(); ++i) {
      float b = base[i], w = wide[i];
      std::string at = "kind " + std::to_string(static_cast<int>(kind)) +
                       " at x = " + std::to_string(x[i]);
      if (std::isnan(b) || std::isinf(b) || b == 0.0f) {
        EXPECT_TRUE(std::isnan(b) ? std::isnan(w)
                                  : std::memcmp(&b, &w, sizeof(float)) == 0)
            << at << ": " << b << " against " << w;
      } else if (std::fabs(b) >= FLT_MIN) {
        EXPECT_LE(std::fabs(static_cast<double>(w) - b) / std::fabs(b),
                  tolerance)
            << at << ": " << b << " against " << w;
      } else {
        EXPECT_LE(std::fabs(w), FLT_MIN) << at;
      }
    }
  }
  EXPECT_FALSE(cpu::mapFloatUnary(U::Neg, x.data(), x.data(), 1, true));
}

// Both copies of the normalizations stay within 1e-5 of the reference, on
// rows whose sizes leave every remainder modulo 16 (the sixteen lanes'
// tail) and far from zero mean (the variance is taken about the mean: one
// pass of E[x^2] - mean^2 in float would lose every digit here).
TEST(CpuKernelsTest, NormalizationsInFloatMatchTheReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (int64_t size : {1, 5, 16, 31, 64, 333, 4096}) {
    int64_t rows = 3;
    std::vector<float> x(rows * size), gamma(size), beta(size);
    for (float &v : x)
      v = 100.0f + normal(rng);
    for (float &v : gamma)
      v = 1.0f + 0.1f * normal(rng);
    for (float &v : beta)
      v = normal(rng);
    for (bool centered : {true, false}) {
      const float *b = centered ? beta.data() : nullptr;
      auto tensor = [](std::vector<int64_t> shape,
                       const std::vector<float> &values) {
        return Tensor::ofFloats(DType::F32, std::move(shape),
                                {values.begin(), values.end()});
      };
      Tensor input = tensor({rows, size}, x);
      Tensor g = tensor({size}, gamma);
      Tensor be = tensor({size}, beta);
      Tensor expected = centered ? ref::layerNorm(input, g, &be, 1, 1e-5)
                                 : ref::rmsNorm(input, g, 1, 1e-5);
      for (bool wide : {false, true}) {
        std::vector<float> y(x.size());
        cpu::normRows(x.data(), gamma.data(), b, y.data(), rows, size, 1e-5,
                      centered, wide);
        expectMatches(tensor({rows, size}, y), expected, kF32Tolerance,
                      "size " + std::to_string(size) +
                          (wide ? " AVX-512 copy" : " baseline copy"));
      }
    }
  }
}

TEST(CpuKernelsTest, TanhWithinFourUlp) {
  forEachCopy([] {
    int64_t worst = 0;
    float worstAt = 0;
    auto check = [&](float x) {
      float expected = static_cast<float>(std::tanh(static_cast<double>(x)));
      int64_t ulps =
          ulpDistance(approximate<ref::UnaryKind::Tanh>(x), expected);
      if (ulps > worst) {
        worst = ulps;
        worstAt = x;
      }
    };
    for (float x = -12.0f; x <= 12.0f; x = std::nextafter(x, 13.0f) + 1e-5f)
      check(x);
    for (float x = 0.54f; x <= 0.56f; x = std::nextafter(x, 1.0f))
      check(x), check(-x);
    for (float x = 1e-38f; x < 1e-3f; x *= 1.001f)
      check(x), check(-x);
    check(1e-45f); // the smallest denormal
    EXPECT_LE(worst, 4) << "at x = " << worstAt;
    EXPECT_EQ(approximate<ref::UnaryKind::Tanh>(0.0f), 0.0f);
    EXPECT_TRUE(std::signbit(approximate<ref::UnaryKind::Tanh>(-0.0f)));
    EXPECT_EQ(approximate<ref::UnaryKind::Tanh>(INFINITY), 1.0f);
    EXPECT_EQ(approximate<ref::UnaryKind::Tanh>(-INFINITY), -1.0f);
    EXPECT_EQ(approximate<ref::UnaryKind::Tanh>(100.0f), 1.0f);
    EXPECT_EQ(approximate<ref::UnaryKind::Tanh>(-3e38f), -1.0f);
    EXPECT_TRUE(std::isnan(approximate<ref::UnaryKind::Tanh>(NAN)));
  });
}

// exp, sigmoid and silu against double rounded to float: within 4 ulp
// where the exact result is a normal float, within FLT_MIN below (results
// that underflow), on every float in [-110, 110] at a stride and the
// special values.
TEST(CpuKernelsTest, ExpSigmoidSiluWithinFourUlp) {
  forEachCopy([] {
    struct Case {
      const char *name;
      float (*fast)(float);
      double (*exact)(double);
    };
    const Case cases[] = {{"exp", approximate<ref::UnaryKind::Exp>,
                           [](double x) { return std::exp(x); }},
                          {"sigmoid", approximate<ref::UnaryKind::Sigmoid>,
                           [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
                          {"silu", approximate<ref::UnaryKind::Silu>,
                           [](double x) { return x / (1.0 + std::exp(-x)); }}};
    for (const Case &c : cases) {
      int64_t worst = 0;
      float worstAt = 0;
      for (float x = -110.0f; x <= 110.0f;
           x = std::nextafter(x, 111.0f) + 1e-4f) {
        float expected = static_cast<float>(c.exact(x));
        float actual = c.fast(x);
        if (std::isinf(expected)) {
          EXPECT_EQ(actual, expected) << c.name << " at " << x;
          continue;
        }
        if (std::fabs(expected) < std::numeric_limits<float>::min()) {
          EXPECT_LE(std::fabs(actual - expected),
                    std::numeric_limits<float>::min())
              << c.name << " at " << x;
          continue;
        }
        int64_t ulps = ulpDistance(actual, expected);
        if (ulps > worst) {
          worst = ulps;
          worstAt = x;
        }
      }
      EXPECT_LE(worst, 4) << c.name << " at x = " << worstAt;
      EXPECT_TRUE(std::isnan(c.fast(NAN))) << c.name;
    }
    EXPECT_EQ(approximate<ref::UnaryKind::Exp>(0.0f), 1.0f);
    EXPECT_EQ(approximate<ref::UnaryKind::Exp>(INFINITY), INFINITY);
    EXPECT_EQ(approximate<ref::UnaryKind::Exp>(-INFINITY), 0.0f);
    EXPECT_EQ(approximate<ref::UnaryKind::Exp>(1000.0f), INFINITY);
    EXPECT_GT(approximate<ref::UnaryKind::Exp>(-100.0f),
              0.0f); // a denormal, not 0
    EXPECT_EQ(approximate<ref::UnaryKind::Sigmoid>(INFINITY), 1.0f);
    EXPECT_EQ(approximate<ref::UnaryKind::Sigmoid>(-INFINITY), 0.0f);
    EXPECT_EQ(approximate<ref::UnaryKind::Sigmoid>(0.0f), 0.5f);
    EXPECT_EQ(approximate<ref::UnaryKind::Silu>(0.0f), 0.0f);
  });
}

TEST(CpuKernelsTest, BinaryWithBroadcasting) {
  using B = ref::BinaryKind;
  const std::pair<const char *, B> kinds[] = {
      {"add", B::Add}, {"sub", B::Sub}, {"mul", B::Mul}, {"div", B::Div},
      {"pow", B::Pow}, {"max", B::Max}, {"min", B::Min}};
  const std::pair<Shape, Shape> shapes[] = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},      {{2, 1, 4}, {3, 1}},
      {{2, 3, 4}, {}},        {{}, {2, 3}},          {{3, 1}, {1, 5}},
      {{4}, {2, 3, 4}},       {{2, 3, 1}, {2, 1, 5}}};
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    for (const auto &[op, kind] : kinds)
      for (const auto &[shapeA, shapeB] : shapes) {
        bool positive = kind == B::Pow || kind == B::Div;
        Tensor a = randomFloats(dtype, shapeA, positive ? 0.5 : -2, 2);
        Tensor b = randomFloats(dtype, shapeB, positive ? 0.5 : -2, 2);
        Tensor expected = ref::binary(kind, a, b);
        bool direct = kind == B::Add || kind == B::Sub || kind == B::Mul ||
                      kind == B::Div;
        expectMatches(KernelCall(op).in(a).in(b).out(dtype, expected.shape),
                      {expected}, toleranceFor(dtype, direct));
      }
  Tensor a = randomInts(DType::I64, {2, 3}, -9, 9);
  Tensor b = randomInts(DType::I64, {3}, 1, 9);
  for (const auto &[op, kind] : kinds) {
    if (kind == B::Pow)
      continue;
    expectMatches(KernelCall(op).in(a).in(b).out(DType::I64, {2, 3}),
                  {ref::binary(kind, a, b)});
  }
}

TEST(CpuKernelsTest, CompareSelectCast) {
  // Small integers as floats, so that equal pairs occur.
  Tensor a = ref::cast(randomInts(DType::I64, {4, 5}, -2, 2), DType::F32);
  Tensor b = ref::cast(randomInts(DType::I64, {5}, -2, 2), DType::F32);
  const std::pair<const char *, ref::CompareKind> kinds[] = {
      {"eq", ref::CompareKind::EQ}, {"ne", ref::CompareKind::NE},
      {"lt", ref::CompareKind::LT}, {"le", ref::CompareKind::LE},
      {"gt", ref::CompareKind::GT}, {"ge", ref::CompareKind::GE}};
  for (const auto &[name, kind] : kinds) {
    KernelCall call("compare");
    setString(call.kernel, "kind", name);
    expectMatches(call.in(a).in(b).out(DType::I1, {4, 5}),
                  {ref::compare(kind, a, b)});
  }
  Tensor condition = randomInts(DType::I1, {4, 1}, 0, 1);
  Tensor t = randomFloats(DType::F32, {4, 5});
  Tensor f = randomFloats(DType::F32, {5});
  expectMatches(
      KernelCall("select").in(condition).in(t).in(f).out(DType::F32, {4, 5}),
      {ref::select(condition, t, f)});
  Tensor x = randomFloats(DType::F32, {3, 4}, -5, 5);
  for (DType to :
       {DType::I64, DType::I32, DType::F16, DType::BF16, DType::I1, DType::F32})
    expectMatches(KernelCall("cast").in(x).out(to, {3, 4}), {ref::cast(x, to)});
  Tensor ids = randomInts(DType::I64, {6}, -100, 100);
  expectMatches(KernelCall("cast").in(ids).out(DType::F32, {6}),
                {ref::cast(ids, DType::F32)});
}

// The direct compare, select and cast kernels (FloatKernels.cpp) against the
// reference on every broadcasting pattern of their rows, the integer types,
// and NaN.
TEST(CpuKernelsTest, CompareSelectCastDirectPathsMatchTheReference) {
  // The one-hot of a cross-entropy gradient: labels [2, 3, 1] against the
  // vocabulary's iota [7], and the other layouts of rows.
  const std::pair<Shape, Shape> layouts[] = {
      {{2, 3, 1}, {7}}, {{7}, {2, 3, 1}}, {{2, 3, 7}, {2, 3, 7}},
      {{2, 3, 7}, {}},  {{1, 7}, {3, 1}}, {{2, 1, 7}, {3, 7}}};
  for (DType type : {DType::I64, DType::I32, DType::F32})
    for (const auto &[shapeA, shapeB] : layouts) {
      Tensor a = ref::cast(randomInts(DType::I64, shapeA, 0, 6), type);
      Tensor b = ref::cast(randomInts(DType::I64, shapeB, 0, 6), type);
      Shape out = *broadcastShapes(shapeA, shapeB);
      KernelCall eq("compare"), ge("compare");
      setString(eq.kernel, "kind", "eq");
      setString(ge.kernel, "kind", "ge");
      expectMatches(eq.in(a).in(b).out(DType::I1, out),
                    {ref::compare(ref::CompareKind::EQ, a, b)});
      expectMatches(ge.in(a).in(b).out(DType::I1, out),
                    {ref::compare(ref::CompareKind::GE, a, b)});
    }
  Tensor nan = Tensor::ofFloats(
      DType::F32, {3}, {std::nan(""), 1.0, std::numeric_limits<double>::infinity()});
  Tensor same = Tensor::ofFloats(DType::F32, {3}, {std::nan(""), 1.0, 2.0});
  for (const char *name : {"eq", "ne", "lt"}) {
    KernelCall call("compare");
    setString(call.kernel, "kind", name);
    ref::CompareKind kind = std::string(name) == "eq"   ? ref::CompareKind::EQ
                            : std::string(name) == "ne" ? ref::CompareKind::NE
                                                        : ref::CompareKind::LT;
    expectMatches(call.in(nan).in(same).out(DType::I1, {3}),
                  {ref::compare(kind, nan, same)});
  }
  expectMatches(KernelCall("cast").in(nan).out(DType::I1, {3}),
                {ref::cast(nan, DType::I1)});
  const Shape selects[][3] = {{{1, 5}, {}, {4, 1}},
                              {{4, 5}, {4, 5}, {4, 5}},
                              {{4, 1}, {1, 5}, {}}};
  for (const auto &shapes : selects) {
    Tensor condition = randomInts(DType::I1, shapes[0], 0, 1);
    Tensor t = randomFloats(DType::F32, shapes[1]);
    Tensor f = randomFloats(DType::F32, shapes[2]);
    expectMatches(
        KernelCall("select").in(condition).in(t).in(f).out(DType::F32, {4, 5}),
        {ref::select(condition, t, f)});
  }
  for (DType from : {DType::I1, DType::I32, DType::I64}) {
    Tensor x = randomInts(from, {3, 5}, from == DType::I1 ? 0 : -1000,
                          from == DType::I1 ? 1 : 1000);
    expectMatches(KernelCall("cast").in(x).out(DType::F32, {3, 5}),
                  {ref::cast(x, DType::F32)});
  }
}

TEST(CpuKernelsTest, MatmulF32UsesBlasAndMatchesReference) {
  struct Case {
    Shape a, b;
    bool transposeA, transposeB;
  };
  const Case cases[] = {
      {{5, 7}, {7, 3}, false, false},
      {{2, 5, 7}, {7, 3}, false, false},       // one weight: one GEMM
      {{2, 7, 5}, {2, 3, 7}, true, true},      // both transposed
      {{2, 1, 5, 7}, {3, 7, 4}, false, false}, // batch broadcast
      {{5, 7}, {2, 7, 3}, false, false},       // lhs broadcast
      {{2, 3, 7, 5}, {7, 6}, true, false},     // transposed lhs, no batch
      {{2, 5, 7}, {1, 6, 7}, false, true},
      {{3, 0}, {0, 4}, false, false}, // empty contraction
      {{33, 65}, {65, 17}, false, false}};
  for (const Case &c : cases) {
    Tensor a = randomFloats(DType::F32, c.a);
    Tensor b = randomFloats(DType::F32, c.b);
    Tensor expected = ref::matmul(a, b, c.transposeA, c.transposeB);
    KernelCall call("matmul");
    setBool(call.kernel, "transpose_lhs", c.transposeA);
    setBool(call.kernel, "transpose_rhs", c.transposeB);
    std::vector<Tensor> actual =
        call.in(a).in(b).out(DType::F32, expected.shape).run();
    if (expected.numElements() > 0 && c.a.back() != 0)
      expectMatches(actual[0], expected, kF32Tolerance,
                    "matmul " + shapeToString(c.a) + " x " +
                        shapeToString(c.b));
    else
      EXPECT_EQ(actual[0].f, expected.f);
  }
  // Other element types go through the reference.
  for (DType dtype : {DType::F16, DType::BF16}) {
    Tensor a = randomFloats(dtype, {2, 3, 4});
    Tensor b = randomFloats(dtype, {4, 5});
    expectMatches(KernelCall("matmul").in(a).in(b).out(dtype, {2, 3, 5}),
                  {ref::matmul(a, b, false, false)});
  }
  Tensor a = randomInts(DType::I64, {3, 4}, -5, 5);
  Tensor b = randomInts(DType::I64, {4, 2}, -5, 5);
  expectMatches(KernelCall("matmul").in(a).in(b).out(DType::I64, {3, 2}),
                {ref::matmul(a, b, false, false)});
}

TEST(CpuKernelsTest, MatmulEpiloguesMatchTheReference) {
  // out = activation(a b + bias) + addend, on the direct path and, above
  // the packing threshold, on oneDNN's prepared one (bias and post-ops).
  struct Case {
    bool bias;
    const char *activation;
    bool addend;
  };
  const Case cases[] = {{true, "", false},         {true, "gelu_tanh", false},
                        {true, "gelu", false},     {false, "silu", false},
                        {true, "relu", false},     {false, "", true},
                        {true, "", true},          {true, "gelu_tanh", true}};
  auto kindOf = [](const std::string &name) {
    return name == "gelu"        ? ref::UnaryKind::Gelu
           : name == "gelu_tanh" ? ref::UnaryKind::GeluTanh
           : name == "silu"      ? ref::UnaryKind::Silu
                                 : ref::UnaryKind::Relu;
  };
  for (bool large : {false, true})
    for (bool transposed : {false, true})
      for (const Case &c : cases) {
        Shape aShape = large ? Shape{4, 16, 256} : Shape{2, 3, 16};
        int64_t k = aShape.back(), n = large ? 160 : 24;
        Tensor a = randomFloats(DType::F32, aShape);
        Tensor b = randomFloats(DType::F32, transposed ? Shape{n, k}
                                                       : Shape{k, n});
        Tensor expected = ref::matmul(a, b, false, transposed);
        KernelCall call("matmul");
        setBool(call.kernel, "transpose_rhs", transposed);
        call.in(a).in(b);
        std::string what = std::string("matmul ") + (c.bias ? "bias " : "") +
                           c.activation + (c.addend ? " addend" : "") +
                           (large ? " large" : "") +
                           (transposed ? " transposed" : "");
        if (c.bias) {
          // [N] or [1, N]: both are the columns.
          Tensor bias = randomFloats(DType::F32, transposed ? Shape{1, n}
                                                            : Shape{n});
          setBool(call.kernel, "has_bias", true);
          call.in(bias);
          expected = ref::binary(ref::BinaryKind::Add, expected, bias);
        }
        if (*c.activation) {
          setString(call.kernel, "activation", c.activation);
          expected = ref::unary(kindOf(c.activation), expected);
        }
        if (c.addend) {
          Tensor addend = randomFloats(DType::F32, expected.shape);
          setBool(call.kernel, "has_addend", true);
          call.in(addend);
          expected = ref::binary(ref::BinaryKind::Add, expected, addend);
        }
        call.out(DType::F32, expected.shape);
        expectMatches(call.run()[0], expected, kF32Tolerance, what);
        std::vector<bool> constant(call.inputs.size(), false);
        constant[1] = true;
        bool prepared = false;
        expectMatches(call.run(constant, &prepared)[0], expected,
                      kF32Tolerance, what + " prepared");
        // The products above 4 MFLOP are packed wherever oneDNN is the GEMM.
        if (cpuGemmLibrary().rfind("oneDNN", 0) == 0 &&
            !std::getenv("BRAID_CPU_PACK")) {
          EXPECT_EQ(prepared, large) << what;
        }
      }
}

// bf16 and f16 epilogues (braidc --precision): the unfused kernels' bits,
// each stage rounded to the type.
TEST(CpuKernelsTest, HalfMatmulEpiloguesGiveTheUnfusedOpsBits) {
  for (DType dtype : {DType::BF16, DType::F16})
    for (const char *activation : {"", "gelu_tanh", "silu"}) {
      Tensor a = randomFloats(dtype, {2, 3, 16});
      Tensor b = randomFloats(dtype, {16, 24});
      Tensor bias = randomFloats(dtype, {24});
      Tensor addend = randomFloats(dtype, {2, 3, 24});
      auto one = [&](const char *op, const std::vector<Tensor> &in) {
        KernelCall call(op);
        if (std::string(op) == "gelu")
          setBool(call.kernel, "tanh", true);
        for (const Tensor &t : in)
          call.in(t);
        return call.out(dtype, {2, 3, 24}).run()[0];
      };
      Tensor expected = one("add", {one("matmul", {a, b}), bias});
      if (*activation)
        expected = one(std::string(activation) == "silu" ? "silu" : "gelu",
                       {expected});
      expected = one("add", {expected, addend});
      KernelCall call("matmul");
      setBool(call.kernel, "has_bias", true);
      setBool(call.kernel, "has_addend", true);
      if (*activation)
        setString(call.kernel, "activation", activation);
      Tensor fused =
          call.in(a).in(b).in(bias).in(addend).out(dtype, {2, 3, 24}).run()[0];
      EXPECT_EQ(fused.f, expected.f) << toString(dtype) << " " << activation;
    }
}

TEST(CpuKernelsTest, GroupedMatmul) {
  for (bool transposed : {false, true}) {
    Tensor x = randomFloats(DType::F32, {3, 4, 6});
    Tensor w =
        randomFloats(DType::F32, transposed ? Shape{3, 5, 6} : Shape{3, 6, 5});
    KernelCall call("grouped_matmul");
    setBool(call.kernel, "transpose_rhs", transposed);
    expectMatches(call.in(x).in(w).out(DType::F32, {3, 4, 5}),
                  {ref::groupedMatmul(x, w, transposed)}, kF32Tolerance);
  }
  Tensor x = randomFloats(DType::BF16, {2, 3, 4});
  Tensor w = randomFloats(DType::BF16, {2, 4, 3});
  expectMatches(
      KernelCall("grouped_matmul").in(x).in(w).out(DType::BF16, {2, 3, 3}),
      {ref::groupedMatmul(x, w, false)});
}

TEST(CpuKernelsTest, Reductions) {
  Tensor x = randomFloats(DType::F32, {3, 4, 5});
  const std::pair<const char *, ref::ReduceKind> kinds[] = {
      {"reduce_sum", ref::ReduceKind::Sum},
      {"reduce_mean", ref::ReduceKind::Mean},
      {"reduce_max", ref::ReduceKind::Max}};
  for (const auto &[op, kind] : kinds)
    for (const std::vector<int64_t> &dims :
         {std::vector<int64_t>{1}, {0, 2}, {0, 1, 2}})
      for (bool keep : {false, true}) {
        Tensor expected = ref::reduce(kind, x, dims, keep);
        KernelCall call(op);
        setInts(call.kernel, "dims", dims);
        setBool(call.kernel, "keep_dims", keep);
        expectMatches(call.in(x).out(DType::F32, expected.shape), {expected});
      }
}

TEST(CpuKernelsTest, SoftmaxAndNormalizations) {
  for (DType dtype : {DType::F32, DType::F16}) {
    double tolerance = toleranceFor(dtype, true);
    Tensor x = randomFloats(dtype, {3, 4, 5}, -4, 4);
    for (int64_t dim = 0; dim < 3; ++dim) {
      KernelCall call("softmax");
      setInt(call.kernel, "dim", dim);
      expectMatches(call.in(x).out(dtype, {3, 4, 5}), {ref::softmax(x, dim)},
                    tolerance);
    }
    for (int64_t axis : {1, 2}) {
      Shape normalized(x.shape.begin() + axis, x.shape.end());
      Tensor gamma = randomFloats(dtype, normalized, 0.5, 1.5);
      Tensor beta = randomFloats(dtype, normalized);
      for (bool withBeta : {false, true}) {
        KernelCall call("layer_norm");
        setInt(call.kernel, "axis", axis);
        setFloat(call.kernel, "epsilon", 1e-5);
        call.in(x).in(gamma);
        if (withBeta)
          call.in(beta);
        expectMatches(
            call.out(dtype, x.shape),
            {ref::layerNorm(x, gamma, withBeta ? &beta : nullptr, axis, 1e-5)},
            tolerance);
      }
      KernelCall rms("rms_norm");
      setInt(rms.kernel, "axis", axis);
      setFloat(rms.kernel, "epsilon", 1e-6);
      expectMatches(rms.in(x).in(gamma).out(dtype, x.shape),
                    {ref::rmsNorm(x, gamma, axis, 1e-6)}, tolerance);
    }
  }
}

TEST(CpuKernelsTest, InPlaceAndOverlappingOutputs) {
  // Elementwise and row-wise f32 kernels may write over their input.
  Tensor x = randomFloats(DType::F32, {4, 6});
  Tensor y = randomFloats(DType::F32, {6});
  std::vector<float> storage(24 + 6);
  writeTensor(x, DType::F32, {4, 6}, storage.data());
  writeTensor(y, DType::F32, {6}, storage.data() + 24);
  plan::Kernel kernel;
  kernel.set_op("add");
  KernelArgs args;
  args.kernel = &kernel;
  args.inputs = {{DType::F32, {4, 6}, storage.data()},
                 {DType::F32, {6}, storage.data() + 24}};
  args.outputs = {{DType::F32, {4, 6}, storage.data()}};
  cpuKernels().lookup("add")->run(args);
  expectMatches(readTensor(DType::F32, {4, 6}, storage.data()),
                ref::binary(ref::BinaryKind::Add, x, y), kF32Tolerance,
                "in-place add");

  // A matmul whose output overlaps its input computes into scratch first.
  Tensor a = randomFloats(DType::F32, {3, 3});
  Tensor b = randomFloats(DType::F32, {3, 3});
  std::vector<float> square(18);
  writeTensor(a, DType::F32, {3, 3}, square.data());
  writeTensor(b, DType::F32, {3, 3}, square.data() + 9);
  kernel.set_op("matmul");
  args.inputs = {{DType::F32, {3, 3}, square.data()},
                 {DType::F32, {3, 3}, square.data() + 9}};
  args.outputs = {{DType::F32, {3, 3}, square.data()}};
  cpuKernels().lookup("matmul")->run(args);
  expectMatches(readTensor(DType::F32, {3, 3}, square.data()),
                ref::matmul(a, b, false, false), kF32Tolerance,
                "overlapping matmul");
}

TEST(CpuKernelsTest, RotaryAndGather) {
  Tensor x = randomFloats(DType::F32, {1, 2, 4, 8});
  Tensor cos = randomFloats(DType::F32, {4, 8});
  Tensor sin = randomFloats(DType::F32, {4, 8});
  // f32 rotary is direct (in float): kF32Tolerance. Tables of the rows'
  // shape, broadcast over heads ([1, 1, 4, 8], as the exporters keep them)
  // or per (head, row); an output that is the input (through scratch).
  Tensor cos4 = randomFloats(DType::F32, {1, 1, 4, 8});
  Tensor sinHeads = randomFloats(DType::F32, {2, 4, 8});
  for (bool interleaved : {false, true}) {
    for (auto [c, s] : {std::pair{&cos, &sin}, std::pair{&cos4, &sinHeads}}) {
      KernelCall call("rotary");
      setBool(call.kernel, "interleaved", interleaved);
      expectMatches(call.in(x).in(*c).in(*s).out(DType::F32, x.shape),
                    {ref::rotary(x, *c, *s, interleaved)}, kF32Tolerance);
    }
    Tensor xh = randomFloats(DType::F16, {1, 2, 4, 8});
    Tensor ch = randomFloats(DType::F16, {4, 8});
    KernelCall half("rotary");
    setBool(half.kernel, "interleaved", interleaved);
    expectMatches(half.in(xh).in(ch).in(ch).out(DType::F16, xh.shape),
                  {ref::rotary(xh, ch, ch, interleaved)});
  }
  Tensor table = randomFloats(DType::F32, {10, 4});
  Tensor ids = randomInts(DType::I64, {2, 3}, -10, 9);
  KernelCall gather("gather");
  setInt(gather.kernel, "axis", 0);
  expectMatches(gather.in(table).in(ids).out(DType::F32, {2, 3, 4}),
                {ref::gather(table, ids, 0)});
  Tensor columns = randomInts(DType::I32, {5}, 0, 3);
  KernelCall gather1("gather");
  setInt(gather1.kernel, "axis", 1);
  expectMatches(gather1.in(table).in(columns).out(DType::F32, {10, 5}),
                {ref::gather(table, columns, 1)});
}

/// Runs scatter_add of `updates` at `ids` along `axis` into `shape`.
std::vector<Tensor> runScatterAdd(const Tensor &updates, const Tensor &ids,
                               int64_t axis, Shape shape) {
  KernelCall call("scatter_add");
  setInt(call.kernel, "axis", axis);
  return call.in(updates).in(ids).out(updates.dtype, std::move(shape)).run();
}

TEST(CpuKernelsTest, ScatterAddAccumulatesRepeatedAndNegativeIndices) {
  // 24 indices into 5 rows, from -5 to 4: every row is hit several times,
  // by its positive and its negative index.
  Tensor ids = randomInts(DType::I64, {4, 6}, -5, 4);
  Tensor columns = randomInts(DType::I32, {7}, -3, 2);
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    // f32 adds in f32 directly (within rounding of the reference's double
    // sums); the 16-bit types go through the reference: exact.
    double tolerance = dtype == DType::F32 ? kF32Tolerance : 0;
    Tensor updates = randomFloats(dtype, {4, 6, 3});
    KernelCall rows("scatter_add");
    setInt(rows.kernel, "axis", 0);
    expectMatches(rows.in(updates).in(ids).out(dtype, {5, 3}),
                  {ref::scatterAdd(updates, ids, 0, {5, 3})}, tolerance);
    Tensor middle = randomFloats(dtype, {2, 7, 4});
    KernelCall cols("scatter_add");
    setInt(cols.kernel, "axis", 1);
    expectMatches(cols.in(middle).in(columns).out(dtype, {2, 3, 4}),
                  {ref::scatterAdd(middle, columns, 1, {2, 3, 4})}, tolerance);
  }
  // Hand-computed: rows (3, -1, 0) of a [4, 1]: row 3 gets 1 + 2.
  Tensor exact =
      runScatterAdd(Tensor::ofFloats(DType::F32, {3, 1}, {1, 2, 4}),
                    Tensor::ofInts(DType::I64, {3}, {3, -1, 0}), 0, {4, 1})[0];
  EXPECT_THAT(exact.f, testing::ElementsAre(4, 0, 0, 3));
}

TEST(CpuKernelsTest, ScatterAddRejectsIndicesOutOfRange) {
  for (DType dtype : {DType::F32, DType::BF16})
    for (int64_t bad : {4, -5}) {
      Tensor updates = randomFloats(dtype, {3, 2});
      Tensor ids = Tensor::ofInts(DType::I64, {3}, {0, bad, 1});
      try {
        runScatterAdd(updates, ids, 0, {4, 2});
        ADD_FAILURE() << "index " << bad << " was accepted";
      } catch (const std::invalid_argument &e) {
        EXPECT_THAT(e.what(),
                    testing::HasSubstr("scatter_add: index " +
                                       std::to_string(bad) +
                                       " is out of range for dimension 0 "
                                       "of size 4"));
      }
    }
}

TEST(CpuKernelsTest, ShapeOps) {
  Tensor x = randomFloats(DType::F32, {2, 3, 4});
  expectMatches(KernelCall("reshape").in(x).out(DType::F32, {6, 4}),
                {ref::reshape(x, {6, 4})});
  expectMatches(KernelCall("copy").in(x).out(DType::F32, {2, 3, 4}), {x});
  KernelCall transpose("transpose");
  setInts(transpose.kernel, "permutation", {2, 0, 1});
  expectMatches(transpose.in(x).out(DType::F32, {4, 2, 3}),
                {ref::transpose(x, {2, 0, 1})});

  KernelCall slice("slice");
  int64_t dynamic = std::numeric_limits<int64_t>::min();
  setInts(slice.kernel, "static_offsets", {dynamic, 1, 0});
  setInts(slice.kernel, "static_sizes", {1, 2, 2});
  setInts(slice.kernel, "static_strides", {1, 1, 2});
  expectMatches(slice.in(x).index(1).out(DType::F32, {1, 2, 2}),
                {ref::slice(x, {1, 1, 0}, {1, 2, 2}, {1, 1, 2})});

  Tensor y = randomFloats(DType::F32, {2, 1, 4});
  Tensor z = randomFloats(DType::F32, {2, 2, 4});
  KernelCall concat("concat");
  setInt(concat.kernel, "dim", 1);
  expectMatches(concat.in(x).in(y).in(z).out(DType::F32, {2, 6, 4}),
                {ref::concat({x, y, z}, 1)});

  Tensor w = randomFloats(DType::F32, {2, 6, 4});
  KernelCall split("split");
  setInt(split.kernel, "dim", 1);
  expectMatches(split.in(w)
                    .out(DType::F32, {2, 1, 4})
                    .out(DType::F32, {2, 2, 4})
                    .out(DType::F32, {2, 3, 4}),
                ref::split(w, 1, {1, 2, 3}));

  Tensor column = randomFloats(DType::F32, {3, 1});
  expectMatches(
      KernelCall("broadcast_to").in(column).out(DType::F32, {2, 3, 4}),
      {ref::broadcastTo(column, {2, 3, 4})});
}

/// The byte-moving kernels (MoveKernels.h) on random layouts and element
/// types, exactly against the reference: every permutation, strided and
/// unit-size slices, broadcasts of every pattern, gathers on every axis.
TEST(CpuKernelsTest, DataMovementMatchesTheReferenceOnRandomLayouts) {
  std::mt19937_64 rng(20261204);
  auto between = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const DType dtypes[] = {DType::F32, DType::F16, DType::BF16, DType::I64,
                          DType::I32};
  auto random = [&](DType dtype, Shape shape) {
    return dtype == DType::I64 || dtype == DType::I32
               ? randomInts(dtype, std::move(shape), -1000, 1000)
               : randomFloats(dtype, std::move(shape));
  };
  for (int trial = 0; trial < 150; ++trial) {
    DType dtype = dtypes[between(0, 4)];
    int64_t rank = between(1, 5);
    Shape shape;
    for (int64_t d = 0; d < rank; ++d)
      shape.push_back(between(1, 5));
    Tensor x = random(dtype, shape);

    std::vector<int64_t> permutation(rank);
    for (int64_t d = 0; d < rank; ++d)
      permutation[d] = d;
    std::shuffle(permutation.begin(), permutation.end(), rng);
    Shape permuted;
    for (int64_t p : permutation)
      permuted.push_back(shape[p]);
    KernelCall transpose("transpose");
    setInts(transpose.kernel, "permutation", permutation);
    expectMatches(transpose.in(x).out(dtype, permuted),
                  {ref::transpose(x, permutation)});

    Shape offsets, sizes, strides;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t stride = between(1, 3);
      int64_t offset = between(0, shape[d] - 1);
      int64_t most = (shape[d] - 1 - offset) / stride + 1;
      offsets.push_back(offset);
      strides.push_back(stride);
      sizes.push_back(between(1, most));
    }
    KernelCall slice("slice");
    setInts(slice.kernel, "static_offsets", offsets);
    setInts(slice.kernel, "static_sizes", sizes);
    setInts(slice.kernel, "static_strides", strides);
    expectMatches(slice.in(x).out(dtype, sizes),
                  {ref::slice(x, offsets, sizes, strides)});

    int64_t dim = between(0, rank - 1);
    std::vector<Tensor> pieces;
    Shape joined = shape;
    joined[dim] = 0;
    KernelCall concat("concat");
    setInt(concat.kernel, "dim", dim);
    for (int64_t k = between(1, 3); k > 0; --k) {
      Shape piece = shape;
      piece[dim] = between(1, 3);
      joined[dim] += piece[dim];
      pieces.push_back(random(dtype, piece));
      concat.in(pieces.back());
    }
    expectMatches(concat.out(dtype, joined), {ref::concat(pieces, dim)});
    Tensor whole = ref::concat(pieces, dim);
    KernelCall split("split");
    setInt(split.kernel, "dim", dim);
    split.in(whole);
    std::vector<int64_t> splitSizes;
    for (const Tensor &piece : pieces) {
      split.out(dtype, piece.shape);
      splitSizes.push_back(piece.shape[dim]);
    }
    expectMatches(split, ref::split(whole, dim, splitSizes));

    // A source of fewer or as many dimensions, each 1 or the target's.
    Shape source;
    for (int64_t d = between(0, rank - 1); d < rank; ++d)
      source.push_back(between(0, 1) ? shape[d] : 1);
    Tensor small = random(dtype, source);
    expectMatches(KernelCall("broadcast_to").in(small).out(dtype, shape),
                  {ref::broadcastTo(small, shape)});

    int64_t axis = between(0, rank - 1);
    Shape idShape;
    for (int64_t d = between(0, 2); d > 0; --d)
      idShape.push_back(between(1, 3));
    Tensor ids = randomInts(between(0, 1) ? DType::I64 : DType::I32, idShape,
                            -shape[axis], shape[axis] - 1);
    Shape gathered(shape.begin(), shape.begin() + axis);
    gathered.insert(gathered.end(), idShape.begin(), idShape.end());
    gathered.insert(gathered.end(), shape.begin() + axis + 1, shape.end());
    KernelCall gather("gather");
    setInt(gather.kernel, "axis", axis);
    expectMatches(gather.in(x).in(ids).out(dtype, gathered),
                  {ref::gather(x, ids, axis)});
  }
}

TEST(CpuKernelsTest, GatherRejectsAnIndexOutOfRange) {
  Tensor table = randomFloats(DType::F32, {4, 3});
  Tensor ids = randomInts(DType::I64, {2}, 4, 4);
  KernelCall gather("gather");
  setInt(gather.kernel, "axis", 0);
  EXPECT_THAT([&] { gather.in(table).in(ids).out(DType::F32, {2, 3}).run(); },
              testing::ThrowsMessage<std::invalid_argument>(testing::HasSubstr(
                  "gather: index 4 is out of range for dimension 0 of size 4")));
}

// Heads too large for the direct products: the scores through sgemm, and
// causal attention in blocks of 32 query rows, each with only the keys it
// can see (rows past a block edge, a partial last block, causal offsets
// that hide every key from the first rows or show all of them, a float
// mask on top); and small heads through the direct products with a mask.
TEST(CpuKernelsTest, AttentionInBlocksAndSmallHeadsMatchTheReference) {
  struct Case {
    int64_t sq, sk, d;
  };
  for (Case c : {Case{100, 100, 16}, Case{70, 90, 24}, Case{6, 9, 4}}) {
    Tensor q = randomFloats(DType::F32, {1, 4, c.sq, c.d});
    Tensor k = randomFloats(DType::F32, {1, 2, c.sk, c.d});
    Tensor v = randomFloats(DType::F32, {1, 2, c.sk, 8});
    Tensor mask = randomFloats(DType::F32, {1, 1, c.sq, c.sk}, -3, 0);
    for (int64_t offset : {int64_t{0}, int64_t{7}, int64_t{-5}, c.sk})
      for (bool withMask : {false, true}) {
        KernelCall call("attention");
        setBool(call.kernel, "causal", true);
        setFloat(call.kernel, "scale", 0.3);
        call.in(q).in(k).in(v);
        if (withMask)
          call.in(mask);
        ref::AttentionResult expected = ref::attention(
            q, k, v, withMask ? &mask : nullptr, true, offset, 0.3);
        SCOPED_TRACE("sq " + std::to_string(c.sq) + " offset " +
                     std::to_string(offset) + (withMask ? " masked" : ""));
        expectMatches(call.index(offset).out(DType::F32, {1, 4, c.sq, 8}),
                      {expected.out}, kF32Tolerance);
      }
    KernelCall full("attention");
    setFloat(full.kernel, "scale", 0.3);
    expectMatches(
        full.in(q).in(k).in(v).out(DType::F32, {1, 4, c.sq, 8}),
        {ref::attention(q, k, v, nullptr, false, std::nullopt, 0.3).out},
        kF32Tolerance);
  }
}

TEST(CpuKernelsTest, Attention) {
  Tensor q = randomFloats(DType::F32, {2, 4, 3, 8});
  Tensor k = randomFloats(DType::F32, {2, 2, 5, 8});
  Tensor v = randomFloats(DType::F32, {2, 2, 5, 6});
  for (bool causal : {false, true}) {
    KernelCall call("attention");
    setBool(call.kernel, "causal", causal);
    setFloat(call.kernel, "scale", 0.35);
    // f32 attention is direct (sgemm per head): kF32Tolerance.
    expectMatches(
        call.in(q).in(k).in(v).out(DType::F32, {2, 4, 3, 6}),
        {ref::attention(q, k, v, nullptr, causal, std::nullopt, 0.35).out},
        kF32Tolerance);
  }
  // A causal offset from the plan's index operand, and a boolean mask.
  Tensor mask = randomInts(DType::I1, {1, 1, 3, 5}, 0, 1);
  KernelCall masked("attention_partial");
  setBool(masked.kernel, "causal", true);
  setFloat(masked.kernel, "scale", 0.5);
  setBool(masked.kernel, "has_mask", true);
  ref::AttentionResult expected = ref::attention(q, k, v, &mask, true, 1, 0.5);
  expectMatches(masked.in(q)
                    .in(k)
                    .in(v)
                    .in(mask)
                    .index(1)
                    .out(DType::F32, {2, 4, 3, 6})
                    .out(DType::F32, {2, 4, 3}),
                {expected.out, expected.lse});

  // A mask hiding every key (a Ring Attention block in the queries' future)
  // is skipped: zero output and log-sum-exp -inf, as the reference gives.
  Tensor hidden = randomInts(DType::I1, {3, 5}, 0, 0);
  KernelCall skipped("attention_partial");
  setFloat(skipped.kernel, "scale", 0.5);
  setBool(skipped.kernel, "has_mask", true);
  ref::AttentionResult none =
      ref::attention(q, k, v, &hidden, false, std::nullopt, 0.5);
  expectMatches(skipped.in(q)
                    .in(k)
                    .in(v)
                    .in(hidden)
                    .out(DType::F32, {2, 4, 3, 6})
                    .out(DType::F32, {2, 4, 3}),
                {none.out, none.lse});

  Tensor additive = randomFloats(DType::F32, {3, 5});
  KernelCall added("attention");
  setFloat(added.kernel, "scale", 0.25);
  expectMatches(
      added.in(q).in(k).in(v).in(additive).out(DType::F32, {2, 4, 3, 6}),
      {ref::attention(q, k, v, &additive, false, std::nullopt, 0.25).out},
      kF32Tolerance);
  // A padding mask of -1e9 (the exporters' 1 - mask times a large
  // negative): batch 0 hides its last two keys; batch 1 hides every key,
  // so its rows are the softmax of the scores themselves (the reference
  // keeps them in double; the kernel must not round them away at 1e9).
  Tensor padding =
      Tensor::ofFloats(DType::F32, {2, 1, 1, 5},
                       {0, 0, 0, -1e9, -1e9, -1e9, -1e9, -1e9, -1e9, -1e9});
  for (bool causal : {false, true}) {
    KernelCall padded("attention");
    setBool(padded.kernel, "causal", causal);
    setFloat(padded.kernel, "scale", 0.25);
    expectMatches(
        padded.in(q).in(k).in(v).in(padding).out(DType::F32, {2, 4, 3, 6}),
        {ref::attention(q, k, v, &padding, causal, std::nullopt, 0.25).out},
        kF32Tolerance);
  }
  // The direct kernel with a boolean mask and a causal offset from the
  // plan's index operand; queries that see no key give zero rows.
  KernelCall direct("attention");
  setBool(direct.kernel, "causal", true);
  setFloat(direct.kernel, "scale", 0.5);
  expectMatches(direct.in(q).in(k).in(v).in(mask).index(1).out(
                    DType::F32, {2, 4, 3, 6}),
                {ref::attention(q, k, v, &mask, true, 1, 0.5).out},
                kF32Tolerance);
  KernelCall blind("attention");
  setFloat(blind.kernel, "scale", 0.5);
  expectMatches(
      blind.in(q).in(k).in(v).in(hidden).out(DType::F32, {2, 4, 3, 6}),
      {ref::attention(q, k, v, &hidden, false, std::nullopt, 0.5).out});

  // Two halves of the keys merge into the whole.
  Tensor k0 = ref::slice(k, {0, 0, 0, 0}, {2, 2, 2, 8}, {1, 1, 1, 1});
  Tensor k1 = ref::slice(k, {0, 0, 2, 0}, {2, 2, 3, 8}, {1, 1, 1, 1});
  Tensor v0 = ref::slice(v, {0, 0, 0, 0}, {2, 2, 2, 6}, {1, 1, 1, 1});
  Tensor v1 = ref::slice(v, {0, 0, 2, 0}, {2, 2, 3, 6}, {1, 1, 1, 1});
  ref::AttentionResult p0 =
      ref::attention(q, k0, v0, nullptr, false, std::nullopt, 0.3);
  ref::AttentionResult p1 =
      ref::attention(q, k1, v1, nullptr, false, std::nullopt, 0.3);
  ref::AttentionResult merged =
      ref::attentionMerge({p0.out, p1.out}, {p0.lse, p1.lse});
  expectMatches(KernelCall("attention_merge")
                    .in(p0.out)
                    .in(p1.out)
                    .in(p0.lse)
                    .in(p1.lse)
                    .out(DType::F32, {2, 4, 3, 6})
                    .out(DType::F32, {2, 4, 3}),
                {merged.out, merged.lse});
}

TEST(CpuKernelsTest, MixtureOfExperts) {
  Tensor logits = randomFloats(DType::F32, {6, 4}, -3, 3);
  for (bool normalize : {false, true}) {
    KernelCall router("router_topk");
    setInt(router.kernel, "k", 2);
    setBool(router.kernel, "normalize", normalize);
    ref::RouterResult expected = ref::routerTopK(logits, 2, normalize);
    expectMatches(
        router.in(logits).out(DType::F32, {6, 2}).out(DType::I64, {6, 2}),
        {expected.weights, expected.experts});
  }
  ref::RouterResult routed = ref::routerTopK(logits, 2, true);
  Tensor x = randomFloats(DType::F32, {6, 5});
  expectMatches(KernelCall("moe_dispatch")
                    .in(x)
                    .in(routed.experts)
                    .out(DType::F32, {4, 3, 5}),
                {ref::moeDispatch(x, routed.experts, 4, 3)});
  Tensor y = randomFloats(DType::F32, {4, 3, 5});
  expectMatches(KernelCall("moe_combine")
                    .in(y)
                    .in(routed.experts)
                    .in(routed.weights)
                    .out(DType::F32, {6, 5}),
                {ref::moeCombine(y, routed.experts, routed.weights)});
}

TEST(CpuKernelsTest, CrossEntropy) {
  Tensor logits = randomFloats(DType::F32, {2, 3, 7}, -3, 3);
  Tensor labels = randomInts(DType::I64, {2, 3}, 0, 6);
  const std::pair<const char *, ref::LossReduction> kinds[] = {
      {"none", ref::LossReduction::None},
      {"mean", ref::LossReduction::Mean},
      {"sum", ref::LossReduction::Sum}};
  for (const auto &[name, kind] : kinds) {
    KernelCall call("cross_entropy");
    setString(call.kernel, "reduction", name);
    Tensor expected = ref::crossEntropy(logits, labels, kind);
    expectMatches(call.in(logits).in(labels).out(DType::F32, expected.shape),
                  {expected});
  }
}

// A chain braid-to-exec fused gives the bits of its ops run one by one:
// inputs of the output's shape, broadcast rows ([N]), a broadcast column
// ([.., 1]) and a scalar; every arithmetic op and unary ops of both kinds
// (the float approximations and the double formulas); outputs of 240
// elements (one tile) and 2100 (tiles crossing rows); and an output that is
// the chain's first input.
TEST(CpuKernelsTest, ElementwiseChainGivesTheUnfusedOpsBits) {
  // f32 on the tiled path; bf16 and f16 (braidc --precision) step by step,
  // each result rounded to the type as the unfused kernels round theirs.
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{2, 3, 40}, std::vector<int64_t>{3, 700}}) {
    int64_t width = shape.back();
    Shape columnShape = shape;
    columnShape.back() = 1;
    Tensor x = randomFloats(dtype, shape, -3, 3);
    Tensor y = randomFloats(dtype, shape, 0.5, 2);
    Tensor bias = randomFloats(dtype, {width});
    Tensor column = randomFloats(dtype, columnShape, 0.5, 1.5);
    Tensor scalar = randomFloats(dtype, {1}, 1, 2);
    auto one = [&](const char *op, const std::vector<Tensor> &in,
                   const char *tanh = nullptr) {
      KernelCall call(op);
      if (tanh)
        setBool(call.kernel, "tanh", std::string(tanh) == "tanh");
      for (const Tensor &t : in)
        call.in(t);
      return call.out(dtype, shape).run()[0];
    };
    // t0 = x * column; t1 = t0 + bias; t2 = tanh(t1); t3 = t2 - y;
    // t4 = t3 / scalar; t5 = gelu_tanh(t4); t6 = exp(t5); t7 = t6 * t6... as
    // registers: x 0, y 1, bias 2, column 3, scalar 4.
    Tensor t0 = one("mul", {x, column});
    Tensor t1 = one("add", {t0, bias});
    Tensor t2 = one("tanh", {t1});
    Tensor t3 = one("sub", {t2, y});
    Tensor t4 = one("div", {t3, scalar});
    Tensor t5 = one("gelu", {t4}, "tanh");
    Tensor t6 = one("rsqrt", {one("add", {one("mul", {t5, t5}), y})});
    Tensor t7 = one("neg", {one("sigmoid", {t6})});
    KernelCall chain("elementwise");
    setString(chain.kernel, "ops",
              "mul,add,tanh,sub,div,gelu_tanh,mul,add,rsqrt,sigmoid,neg");
    setInts(chain.kernel, "operands",
            {0,  3,  5,  2,  6, -1, 7,  1,  8,  4,  9,
             -1, 10, 10, 11, 1, 12, -1, 13, -1, 14, -1});
    std::vector<Tensor> fused = chain.in(x)
                                    .in(y)
                                    .in(bias)
                                    .in(column)
                                    .in(scalar)
                                    .out(dtype, shape)
                                    .run();
    ASSERT_EQ(fused.size(), 1u);
    EXPECT_EQ(fused[0].f, t7.f)
        << toString(dtype) << " " << shapeToString(shape);
  }
  // In place: the output is the first input's buffer.
  std::vector<float> data(2100), other(2100);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-2, 2);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = uniform(rng), other[i] = uniform(rng);
  std::vector<float> expected(data.size());
  for (size_t i = 0; i < data.size(); ++i)
    expected[i] = (data[i] + other[i]) * data[i];
  KernelArgs args;
  plan::Kernel kernel;
  kernel.set_op("elementwise");
  setString(kernel, "ops", "add,mul");
  setInts(kernel, "operands", {0, 1, 2, 0});
  args.kernel = &kernel;
  args.inputs = {{DType::F32, {3, 700}, data.data()},
                 {DType::F32, {3, 700}, other.data()}};
  args.outputs = {{DType::F32, {3, 700}, data.data()}};
  cpuKernels().lookup("elementwise")->run(args);
  EXPECT_EQ(data, expected);
}

TEST(CpuKernelsTest, ChecksRejectBadShapesAndAttributes) {
  auto error = [](KernelCall call) -> std::string {
    try {
      call.run();
    } catch (const PlanError &e) {
      return e.what();
    }
    return "";
  };
  Tensor x = randomFloats(DType::F32, {2, 3});
  EXPECT_THAT(error(KernelCall("add")
                        .in(x)
                        .in(randomFloats(DType::F32, {4}))
                        .out(DType::F32, {2, 3})),
              testing::HasSubstr("do not broadcast"));
  EXPECT_THAT(error(KernelCall("exp").in(x).out(DType::F32, {3, 2})),
              testing::HasSubstr("output must have shape [2, 3]"));
  KernelCall compare("compare");
  setString(compare.kernel, "kind", "approx");
  EXPECT_THAT(error(compare.in(x).in(x).out(DType::I1, {2, 3})),
              testing::HasSubstr("compare kind 'approx'"));
  auto chain = [&](const char *ops, std::vector<int64_t> operands,
                   std::vector<int64_t> inputShape = {2, 3}) {
    KernelCall call("elementwise");
    setString(call.kernel, "ops", ops);
    setInts(call.kernel, "operands", std::move(operands));
    return call.in(randomFloats(DType::F32, inputShape))
        .out(DType::F32, {2, 3});
  };
  EXPECT_THAT(error(chain("add,cosh", {0, 0, 1, -1})),
              testing::HasSubstr("step 1 is 'cosh', not an elementwise op"));
  EXPECT_THAT(error(chain("add,tanh", {0, 0, 2, -1})),
              testing::HasSubstr("operands of step 1 (tanh): 2, -1"));
  EXPECT_THAT(error(chain("tanh", {0, 0})),
              testing::HasSubstr("a unary op's second is -1"));
  EXPECT_THAT(error(chain("add", {0, 0, 1})),
              testing::HasSubstr("operands: 3 registers for 1 steps"));
  EXPECT_THAT(error(chain("exp", {0, -1}, {4})),
              testing::HasSubstr("input 0 f32 [4] does not broadcast to the "
                                 "output f32 [2, 3]"));
  KernelCall slice("slice");
  setInts(slice.kernel, "static_offsets", {1, 2});
  setInts(slice.kernel, "static_sizes", {1, 2});
  setInts(slice.kernel, "static_strides", {1, 1});
  EXPECT_THAT(error(slice.in(x).out(DType::F32, {1, 2})),
              testing::HasSubstr("reads outside the input"));
  KernelCall scatter("scatter_add");
  setInt(scatter.kernel, "axis", 0);
  EXPECT_THAT(error(scatter.in(x)
                        .in(Tensor::ofInts(DType::I64, {2}, {0, 1}))
                        .out(DType::F32, {5, 4})),
              testing::HasSubstr("updates must have shape [2, 4]"));
  KernelCall scatterInts("scatter_add");
  setInt(scatterInts.kernel, "axis", 0);
  EXPECT_THAT(error(scatterInts.in(Tensor::ofInts(DType::I32, {2}, {1, 2}))
                        .in(Tensor::ofInts(DType::I64, {2}, {0, 1}))
                        .out(DType::I32, {5})),
              testing::HasSubstr("updates must be a floating tensor"));
  KernelCall reduce("reduce_sum");
  setInts(reduce.kernel, "dims", {1, 1});
  EXPECT_THAT(error(reduce.in(x).out(DType::F32, {2})),
              testing::HasSubstr("reduced twice"));
  // Matmul epilogues: operands that has_bias / has_addend do not account
  // for, a bias that is not the product's columns, an addend of another
  // shape, an unknown activation, an epilogue on f16.
  Tensor w = randomFloats(DType::F32, {3, 4});
  KernelCall noBias("matmul");
  setBool(noBias.kernel, "has_bias", true);
  EXPECT_THAT(error(noBias.in(x).in(w).out(DType::F32, {2, 4})),
              testing::HasSubstr("has 2 inputs, but has_bias and has_addend "
                                 "call for 3"));
  KernelCall rowBias("matmul");
  setBool(rowBias.kernel, "has_bias", true);
  EXPECT_THAT(error(rowBias.in(x).in(w).in(randomFloats(DType::F32, {2, 1}))
                        .out(DType::F32, {2, 4})),
              testing::HasSubstr("must hold the 4 columns of the product"));
  KernelCall badAddend("matmul");
  setBool(badAddend.kernel, "has_addend", true);
  EXPECT_THAT(error(badAddend.in(x).in(w).in(randomFloats(DType::F32, {4}))
                        .out(DType::F32, {2, 4})),
              testing::HasSubstr("addend must have shape [2, 4]"));
  KernelCall swish("matmul");
  setString(swish.kernel, "activation", "swish");
  EXPECT_THAT(error(swish.in(x).in(w).out(DType::F32, {2, 4})),
              testing::HasSubstr("activation 'swish' is not one of"));
  // f16 and bf16 epilogues run (HalfMatmulEpiloguesGiveTheUnfusedOpsBits);
  // integers take none.
  KernelCall integer("matmul");
  setString(integer.kernel, "activation", "relu");
  EXPECT_THAT(error(integer.in(randomInts(DType::I64, {2, 3}, -9, 9))
                        .in(randomInts(DType::I64, {3, 4}, -9, 9))
                        .out(DType::I64, {2, 4})),
              testing::HasSubstr("lhs of a matmul with an epilogue must be a "
                                 "floating tensor"));
  KernelCall attention("attention");
  setFloat(attention.kernel, "scale", 1);
  setBool(attention.kernel, "has_mask", true);
  Tensor q = randomFloats(DType::F32, {1, 1, 2, 4});
  EXPECT_THAT(error(attention.in(q).in(q).in(q).out(DType::F32, {1, 1, 2, 4})),
              testing::HasSubstr("has_mask is true but there are 3 inputs"));
}

TEST(CpuKernelsTest, RunTimeErrorsComeFromTheReference) {
  // An index out of range is known only when the kernel runs.
  Tensor table = randomFloats(DType::F32, {4, 2});
  Tensor ids = Tensor::ofInts(DType::I64, {1}, {9});
  KernelCall gather("gather");
  setInt(gather.kernel, "axis", 0);
  EXPECT_THROW(gather.in(table).in(ids).out(DType::F32, {1, 2}).run(),
               std::invalid_argument);
}

} // namespace
