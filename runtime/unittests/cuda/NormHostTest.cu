//===- NormHostTest.cu - the row-wise CUDA kernels' math on the host ------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Runs the functors and row routines of NormOps.cuh on the host, through
// the same plans and path choices as Norm.cu, and compares them with the
// reference kernels on random data, for every element type the ops take.
// The row routines run through runRowsOnHost, which mirrors the warp
// (32 workers) and block (more) kernels' partial / butterfly / write steps.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/NormOps.cuh"
#include "runtime/reference/ReferenceKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>

namespace braid::rt::cuda {
namespace {

//===----------------------------------------------------------------------===//
// Host buffers and comparisons
//===----------------------------------------------------------------------===//

/// Elements of T in 64-byte aligned host memory (std::vector<bool> would
/// not do), starting `shift` elements past the aligned start so tests can
/// make misaligned pointers.
template <typename T> class HostArray {
public:
  explicit HostArray(int64_t count, int64_t shift = 0)
      : storage_(std::aligned_alloc(64, ((count + shift) * sizeof(T) + 64) /
                                            64 * 64),
                 &std::free),
        data_(static_cast<T *>(storage_.get()) + shift), count_(count) {}
  T *data() const { return data_; }
  int64_t size() const { return count_; }
  T &operator[](int64_t i) const { return data_[i]; }

private:
  std::unique_ptr<void, void (*)(void *)> storage_;
  T *data_;
  int64_t count_;
};

template <typename T> constexpr bool isFloatType() {
  return std::is_same_v<T, float> || std::is_same_v<T, f16> ||
         std::is_same_v<T, bf16>;
}

template <typename T> HostArray<T> toHost(const ref::Tensor &t) {
  HostArray<T> array(t.numElements());
  for (int64_t k = 0; k < array.size(); ++k) {
    if constexpr (isFloatType<T>())
      array[k] = fromFloat<T>(static_cast<float>(t.f[k]));
    else
      array[k] = static_cast<T>(t.i[k]);
  }
  return array;
}

template <typename T> HostArray<T> copyOf(const HostArray<T> &from) {
  HostArray<T> array(from.size());
  for (int64_t k = 0; k < from.size(); ++k)
    array[k] = from[k];
  return array;
}

std::mt19937 &rng() {
  static std::mt19937 generator(1234);
  return generator;
}

ref::Tensor randomTensor(DType dtype, const std::vector<int64_t> &shape,
                         double offset = 0, double scale = 1) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  if (dtype == DType::I64 || dtype == DType::I32 || dtype == DType::I1) {
    std::uniform_int_distribution<int64_t> values(dtype == DType::I1 ? 0 : -50,
                                                  dtype == DType::I1 ? 1 : 50);
    std::vector<int64_t> data(count);
    for (int64_t &value : data)
      value = values(rng());
    return ref::Tensor::ofInts(dtype, shape, std::move(data));
  }
  std::normal_distribution<double> values(offset, scale);
  std::vector<double> data(count);
  for (double &value : data)
    value = values(rng());
  return ref::Tensor::ofFloats(dtype, shape, std::move(data));
}

struct Tolerance {
  double relative, absolute;
};
template <typename T> Tolerance toleranceOf() {
  if constexpr (std::is_same_v<T, float>)
    return {1e-5, 1e-5};
  else if constexpr (std::is_same_v<T, f16>)
    return {2e-3, 1e-3};
  else
    return {1.6e-2, 1e-2};
}

template <typename T> DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<T, f16>)
    return DType::F16;
  else if constexpr (std::is_same_v<T, bf16>)
    return DType::BF16;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::I32;
  else
    return DType::I1;
}

/// Element-wise comparison with the reference: floats within `tolerance`
/// (scaled by `scale`), NaN where the reference has NaN; integers exact.
template <typename T>
void expectMatches(const HostArray<T> &got, const ref::Tensor &want,
                   const std::string &what, double scale = 1) {
  ASSERT_EQ(got.size(), want.numElements()) << what;
  Tolerance tolerance = toleranceOf<T>();
  int failures = 0;
  for (int64_t k = 0; k < got.size() && failures < 5; ++k) {
    if constexpr (isFloatType<T>()) {
      double value = toFloat(got[k]), expected = want.f[k];
      bool ok;
      if (std::isnan(expected) || std::isinf(expected))
        ok = std::isnan(expected) ? std::isnan(value) : value == expected;
      else
        ok = std::fabs(value - expected) <=
             scale * (tolerance.absolute +
                      tolerance.relative * std::fabs(expected));
      if (!ok) {
        ADD_FAILURE() << what << ": element " << k << " is " << value
                      << ", expected " << expected;
        ++failures;
      }
    } else {
      int64_t value = static_cast<int64_t>(got[k]);
      if (value != want.i[k]) {
        ADD_FAILURE() << what << ": element " << k << " is " << value
                      << ", expected " << want.i[k];
        ++failures;
      }
    }
  }
}

std::string describe(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

/// The row kernels' worker counts: the warp kernel, and blocks.
const int kWorkerCounts[] = {32, 128, 1024};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

TEST(NormHostTest, ReducePlanMergesAndChoosesRows) {
  ReducePlan plan = planReduce({2, 3, 8, 5}, {2, 3});
  EXPECT_TRUE(plan.rows);
  EXPECT_EQ(plan.outputs, 6);
  EXPECT_EQ(plan.count, 40);
  // Reduced dims on both sides of a kept one are not rows.
  EXPECT_FALSE(planReduce({2, 3, 33}, {0, 2}).rows);

  plan = planReduce({2, 3, 4, 5}, {0, 1});
  EXPECT_FALSE(plan.rows);
  ASSERT_EQ(plan.kept.rank, 1);
  EXPECT_EQ(plan.kept.size[0], 20);
  EXPECT_EQ(plan.kept.stride[0], 1);
  ASSERT_EQ(plan.reduced.rank, 1);
  EXPECT_EQ(plan.reduced.size[0], 6);
  EXPECT_EQ(plan.reduced.stride[0], 20);

  plan = planReduce({2, 3, 4, 5}, {1, 3});
  EXPECT_FALSE(plan.rows);
  ASSERT_EQ(plan.kept.rank, 2);
  EXPECT_EQ(plan.kept.size[1], 4);
  EXPECT_EQ(plan.kept.stride[1], 5);
  ASSERT_EQ(plan.reduced.rank, 2);
  EXPECT_EQ(plan.reduced.stride[0], 20);

  // Size-1 dims do not break a trailing block.
  plan = planReduce({3, 40, 1, 2}, {1, 3});
  EXPECT_TRUE(plan.rows);
  EXPECT_EQ(plan.count, 80);

  // Short rows go to one thread per output.
  EXPECT_FALSE(planReduce({100, 8}, {1}).rows);
  // Nothing reduced: one element per output.
  plan = planReduce({4, 5}, {});
  EXPECT_EQ(plan.count, 1);
  EXPECT_EQ(plan.outputs, 20);
}

/// reduce on the host, choosing paths as runReduce does (rows run with
/// `workers`, vectorized when `vectorize` and possible).
template <typename T, ReduceOp Op>
void reduceOnHost(const HostArray<T> &x, const std::vector<int64_t> &shape,
                  const std::vector<int64_t> &dims, HostArray<T> &y,
                  int workers, bool vectorize) {
  ReducePlan plan = planReduce(shape, dims);
  if (plan.outputs == 0)
    return;
  if (plan.rows) {
    constexpr int vec = vectorWidth<T>();
    if (vectorize && canVectorize<T>(vec, plan.count, {x.data()}))
      runRowsOnHost(ReduceRows<T, vec, Op>{x.data(), y.data(), plan.count},
                    plan.outputs, workers);
    else
      runRowsOnHost(ReduceRows<T, 1, Op>{x.data(), y.data(), plan.count},
                    plan.outputs, workers);
    return;
  }
  runOnHost(ReduceLines<T, Op>{x.data(), y.data(), plan.kept, plan.reduced,
                               plan.count},
            plan.outputs);
}

template <typename T, ReduceOp Op> void checkReduce() {
  struct Case {
    std::vector<int64_t> shape, dims;
  };
  const Case cases[] = {{{2, 3, 4}, {1}},
                        {{2, 3, 4}, {0, 2}},
                        {{5, 64}, {1}},
                        {{3, 1000}, {1}},
                        {{4, 5, 6, 7}, {1, 3}},
                        {{4, 5, 6, 7}, {0, 1}},
                        {{4, 5, 6, 7}, {2, 3}},
                        {{6}, {0}},
                        {{6}, {}},
                        {{2, 0, 3}, {1}},
                        {{2, 0, 3}, {0}},
                        {{3, 37}, {0, 1}},
                        {{1, 4, 1, 50}, {0, 3}},
                        {{2, 3, 33}, {0, 2}},
                        {{7, 9, 8}, {0, 1, 2}},
                        {{130, 33}, {1}}};
  ref::ReduceKind kind = Op == ReduceOp::Sum    ? ref::ReduceKind::Sum
                         : Op == ReduceOp::Mean ? ref::ReduceKind::Mean
                                                : ref::ReduceKind::Max;
  for (const Case &c : cases) {
    for (bool keepDims : {false, true}) {
      ref::Tensor x = randomTensor(dtypeOf<T>(), c.shape);
      std::string what = std::string(toString(dtypeOf<T>())) + " " +
                         describe(c.shape) + " over " + describe(c.dims);
      ReducePlan plan = planReduce(c.shape, c.dims);
      if (plan.outputs > 0 && plan.count == 0 &&
          (Op == ReduceOp::Max ||
           (Op == ReduceOp::Mean && !isFloatType<T>()))) {
        // runReduce throws here, as the reference does.
        EXPECT_THROW(ref::reduce(kind, x, c.dims, keepDims),
                     std::invalid_argument)
            << what;
        continue;
      }
      ref::Tensor want = ref::reduce(kind, x, c.dims, keepDims);
      HostArray<T> in = toHost<T>(x);
      for (int workers : kWorkerCounts)
        for (bool vectorize : {true, false}) {
          HostArray<T> out(want.numElements());
          reduceOnHost<T, Op>(in, c.shape, c.dims, out, workers, vectorize);
          // Float sums: rounding grows with the group.
          expectMatches(out, want, what + " workers " + std::to_string(workers),
                        1 + std::sqrt(double(plan.count)));
          if (!plan.rows)
            break;
        }
    }
  }
}

template <typename T> void checkReduceAllOps() {
  checkReduce<T, ReduceOp::Sum>();
  checkReduce<T, ReduceOp::Mean>();
  checkReduce<T, ReduceOp::Max>();
}

TEST(NormHostTest, ReduceF32) { checkReduceAllOps<float>(); }
TEST(NormHostTest, ReduceF16) { checkReduceAllOps<f16>(); }
TEST(NormHostTest, ReduceBF16) { checkReduceAllOps<bf16>(); }
TEST(NormHostTest, ReduceI64) { checkReduceAllOps<int64_t>(); }
TEST(NormHostTest, ReduceI32) { checkReduceAllOps<int32_t>(); }
TEST(NormHostTest, ReduceI1) { checkReduceAllOps<bool>(); }

TEST(NormHostTest, ReduceMaxSkipsNaNAsTheReference) {
  ref::Tensor x =
      ref::Tensor::ofFloats(DType::F32, {2, 40}, std::vector<double>(80, 1.0));
  x.f[3] = NAN;
  x.f[0] = NAN;
  x.f[45] = NAN;
  x.f[50] = 7;
  ref::Tensor want = ref::reduce(ref::ReduceKind::Max, x, {1}, false);
  HostArray<float> in = toHost<float>(x);
  for (int workers : kWorkerCounts) {
    HostArray<float> out(2);
    reduceOnHost<float, ReduceOp::Max>(in, x.shape, {1}, out, workers, true);
    expectMatches(out, want, "max with NaN");
  }
}

TEST(NormHostTest, ReduceI32SumWraps) {
  ref::Tensor x = ref::Tensor::ofInts(DType::I32, {2, 64},
                                      std::vector<int64_t>(128, 2000000000));
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
    ref::Tensor want = ref::reduce(op == ReduceOp::Sum ? ref::ReduceKind::Sum
                                                       : ref::ReduceKind::Mean,
                                   x, {1}, false);
    HostArray<int32_t> in = toHost<int32_t>(x);
    HostArray<int32_t> out(2);
    if (op == ReduceOp::Sum)
      reduceOnHost<int32_t, ReduceOp::Sum>(in, x.shape, {1}, out, 32, true);
    else
      reduceOnHost<int32_t, ReduceOp::Mean>(in, x.shape, {1}, out, 32, true);
    expectMatches(out, want, "i32 sum beyond int32");
  }
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// softmax on the host, choosing paths as runSoftmax does.
template <typename T>
void softmaxOnHost(const HostArray<T> &x, const std::vector<int64_t> &shape,
                   int64_t dim, HostArray<T> &y, int workers, bool vectorize) {
  int64_t outer = 1, inner = 1, size = shape[dim];
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
  if (outer == 0 || size == 0 || inner == 0)
    return;
  if (inner == 1 && size >= kThreadRowLimit) {
    constexpr int vec = vectorWidth<T>();
    if (vectorize && canVectorize<T>(vec, size, {x.data(), y.data()}))
      runRowsOnHost(SoftmaxRows<T, vec>{x.data(), y.data(), size}, outer,
                    workers);
    else
      runRowsOnHost(SoftmaxRows<T, 1>{x.data(), y.data(), size}, outer,
                    workers);
    return;
  }
  runOnHost(SoftmaxLines<T>{x.data(), y.data(), size, inner}, outer * inner);
}

template <typename T> void checkSoftmax() {
  struct Case {
    std::vector<int64_t> shape;
    int64_t dim;
  };
  const Case cases[] = {{{4, 50}, 1},    {{3, 64}, 1},   {{2, 2000}, 1},
                        {{3, 4, 5}, 0},  {{3, 4, 5}, 1}, {{3, 4, 5}, 2},
                        {{7, 8}, 1},     {{2, 3, 1}, 1}, {{5, 1}, 1},
                        {{2, 40, 3}, 1}, {{1, 1024}, 1}, {{3, 1032}, 1},
                        {{4, 0, 3}, 1},  {{2, 96}, 0}};
  for (const Case &c : cases) {
    ref::Tensor x = randomTensor(dtypeOf<T>(), c.shape, 0, 3);
    ref::Tensor want = ref::softmax(x, c.dim);
    HostArray<T> in = toHost<T>(x);
    std::string what = std::string(toString(dtypeOf<T>())) + " softmax " +
                       describe(c.shape) + " dim " + std::to_string(c.dim);
    for (int workers : kWorkerCounts)
      for (bool vectorize : {true, false}) {
        HostArray<T> out(want.numElements());
        softmaxOnHost(in, c.shape, c.dim, out, workers, vectorize);
        expectMatches(out, want, what + " workers " + std::to_string(workers));
        // In place.
        HostArray<T> inPlace = copyOf(in);
        softmaxOnHost(inPlace, c.shape, c.dim, inPlace, workers, vectorize);
        expectMatches(inPlace, want, what + " in place");
      }
  }
}

TEST(NormHostTest, SoftmaxF32) { checkSoftmax<float>(); }
TEST(NormHostTest, SoftmaxF16) { checkSoftmax<f16>(); }
TEST(NormHostTest, SoftmaxBF16) { checkSoftmax<bf16>(); }

TEST(NormHostTest, SoftmaxSpecialValuesAsTheReference) {
  // Rows: some -inf; all -inf (NaN); a NaN (NaN); a +inf (NaN where the
  // reference computes inf - inf); large values (stability).
  const int64_t width = 40;
  std::vector<double> values;
  for (int row = 0; row < 5; ++row)
    for (int64_t j = 0; j < width; ++j)
      values.push_back(0.1 * j - 2);
  for (int64_t j = 0; j < width; j += 3)
    values[j] = -INFINITY;
  for (int64_t j = 0; j < width; ++j)
    values[width + j] = -INFINITY;
  values[2 * width + 17] = NAN;
  values[3 * width + 5] = INFINITY;
  for (int64_t j = 0; j < width; ++j)
    values[4 * width + j] = 1000 + j;
  ref::Tensor x = ref::Tensor::ofFloats(DType::F32, {5, width}, values);
  ref::Tensor want = ref::softmax(x, 1);
  HostArray<float> in = toHost<float>(x);
  for (int workers : kWorkerCounts)
    for (bool vectorize : {true, false}) {
      HostArray<float> out(want.numElements());
      softmaxOnHost(in, x.shape, 1, out, workers, vectorize);
      expectMatches(out, want, "softmax special rows");
    }
  // The same lines along dim 0 (the strided path).
  std::vector<double> transposed(values.size());
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t j = 0; j < width; ++j)
      transposed[j * 5 + r] = values[r * width + j];
  ref::Tensor xt = ref::Tensor::ofFloats(DType::F32, {width, 5}, transposed);
  ref::Tensor wantT = ref::softmax(xt, 0);
  HostArray<float> inT = toHost<float>(xt);
  HostArray<float> outT(wantT.numElements());
  softmaxOnHost(inT, xt.shape, 0, outT, 32, true);
  expectMatches(outT, wantT, "softmax special lines");
}

//===----------------------------------------------------------------------===//
// Layer norm and RMS norm
//===----------------------------------------------------------------------===//

template <typename T>
void layerNormOnHost(const HostArray<T> &x, const HostArray<T> &gamma,
                     const HostArray<T> *beta, int64_t rows, int64_t size,
                     float epsilon, HostArray<T> &y, int workers,
                     bool vectorize) {
  constexpr int vec = vectorWidth<T>();
  const T *b = beta ? beta->data() : nullptr;
  if (vectorize &&
      canVectorize<T>(vec, size, {x.data(), gamma.data(), b, y.data()}))
    runRowsOnHost(LayerNormRows<T, vec>{x.data(), gamma.data(), b, y.data(),
                                        size, epsilon},
                  rows, workers);
  else
    runRowsOnHost(
        LayerNormRows<T, 1>{x.data(), gamma.data(), b, y.data(), size, epsilon},
        rows, workers);
}

template <typename T>
void rmsNormOnHost(const HostArray<T> &x, const HostArray<T> &gamma,
                   int64_t rows, int64_t size, float epsilon, HostArray<T> &y,
                   int workers, bool vectorize) {
  constexpr int vec = vectorWidth<T>();
  if (vectorize &&
      canVectorize<T>(vec, size, {x.data(), gamma.data(), y.data()}))
    runRowsOnHost(
        RmsNormRows<T, vec>{x.data(), gamma.data(), y.data(), size, epsilon},
        rows, workers);
  else
    runRowsOnHost(
        RmsNormRows<T, 1>{x.data(), gamma.data(), y.data(), size, epsilon},
        rows, workers);
}

template <typename T> void checkNorms() {
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
    double offset;
  };
  const Case cases[] = {
      {{4, 64}, 1, 0},      {{2, 3, 40}, 1, 0}, {{3, 2048}, 1, 0},
      {{5, 7}, 1, 0},       {{6, 10}, 0, 0},    {{3, 5, 16}, 2, 100},
      {{2, 1500}, 1, 1000}, {{9, 1}, 1, 0},     {{2, 2, 3, 5}, 1, 0}};
  const double epsilon = 1e-5;
  for (const Case &c : cases) {
    std::vector<int64_t> normalized(c.shape.begin() + c.axis, c.shape.end());
    ref::Tensor x = randomTensor(dtypeOf<T>(), c.shape, c.offset, 2);
    ref::Tensor gamma = randomTensor(dtypeOf<T>(), normalized, 1, 0.5);
    ref::Tensor beta = randomTensor(dtypeOf<T>(), normalized);
    int64_t size = gamma.numElements();
    int64_t rows = x.numElements() / size;
    HostArray<T> in = toHost<T>(x), g = toHost<T>(gamma), b = toHost<T>(beta);
    std::string what = std::string(toString(dtypeOf<T>())) + " " +
                       describe(c.shape) + " axis " + std::to_string(c.axis);
    // A large offset costs the float statistics some digits: (x - mean) is
    // exact only to about |offset| * 2^-24.
    double scale = 1 + (std::is_same_v<T, float> ? c.offset / 10 : 0);
    for (bool withBeta : {true, false}) {
      ref::Tensor want =
          ref::layerNorm(x, gamma, withBeta ? &beta : nullptr, c.axis, epsilon);
      for (int workers : kWorkerCounts)
        for (bool vectorize : {true, false}) {
          HostArray<T> out(x.numElements());
          layerNormOnHost(in, g, withBeta ? &b : nullptr, rows, size,
                          float(epsilon), out, workers, vectorize);
          expectMatches(out, want, "layer_norm " + what, scale);
          HostArray<T> inPlace = copyOf(in);
          layerNormOnHost(inPlace, g, withBeta ? &b : nullptr, rows, size,
                          float(epsilon), inPlace, workers, vectorize);
          expectMatches(inPlace, want, "layer_norm in place " + what, scale);
        }
    }
    ref::Tensor want = ref::rmsNorm(x, gamma, c.axis, epsilon);
    for (int workers : kWorkerCounts)
      for (bool vectorize : {true, false}) {
        HostArray<T> out(x.numElements());
        rmsNormOnHost(in, g, rows, size, float(epsilon), out, workers,
                      vectorize);
        expectMatches(out, want, "rms_norm " + what);
        HostArray<T> inPlace = copyOf(in);
        rmsNormOnHost(inPlace, g, rows, size, float(epsilon), inPlace, workers,
                      vectorize);
        expectMatches(inPlace, want, "rms_norm in place " + what);
      }
  }
}

TEST(NormHostTest, NormsF32) { checkNorms<float>(); }
TEST(NormHostTest, NormsF16) { checkNorms<f16>(); }
TEST(NormHostTest, NormsBF16) { checkNorms<bf16>(); }

TEST(NormHostTest, VectorizationNeedsAlignmentAndWholeVectors) {
  HostArray<float> aligned(64), shifted(64, 1);
  EXPECT_TRUE(canVectorize<float>(4, 64, {aligned.data(), nullptr}));
  EXPECT_FALSE(canVectorize<float>(4, 62, {aligned.data()}));
  EXPECT_FALSE(canVectorize<float>(4, 64, {aligned.data(), shifted.data()}));
  EXPECT_EQ(vectorWidth<f16>(), 8);
  EXPECT_EQ(vectorWidth<bool>(), 16);
}

//===----------------------------------------------------------------------===//
// Rotary
//===----------------------------------------------------------------------===//

template <typename T> void checkRotary() {
  struct Case {
    std::vector<int64_t> shape, table;
  };
  const Case cases[] = {{{2, 3, 4, 8}, {8}},
                        {{2, 3, 4, 8}, {4, 8}},
                        {{2, 4, 3, 8}, {3, 8}},
                        {{2, 3, 4, 8}, {3, 1, 8}},
                        {{2, 3, 4, 8}, {1, 3, 1, 8}},
                        {{2, 3, 4, 8}, {2, 3, 4, 8}},
                        {{5, 6}, {5, 6}},
                        {{2, 1, 3, 4}, {1, 3, 4}},
                        {{2}, {2}},
                        {{3, 2, 5, 6}, {2, 1, 6}}};
  for (const Case &c : cases)
    for (bool interleaved : {false, true}) {
      ref::Tensor x = randomTensor(dtypeOf<T>(), c.shape);
      ref::Tensor cos = randomTensor(dtypeOf<T>(), c.table);
      // sin a different shape where one broadcasts: drop leading 1s.
      std::vector<int64_t> sinShape = c.table;
      while (sinShape.size() > 1 && sinShape.front() == 1)
        sinShape.erase(sinShape.begin());
      ref::Tensor sin = randomTensor(dtypeOf<T>(), sinShape);
      ref::Tensor want = ref::rotary(x, cos, sin, interleaved);
      HostArray<T> in = toHost<T>(x), cosValues = toHost<T>(cos),
                   sinValues = toHost<T>(sin);
      std::string what = std::string(toString(dtypeOf<T>())) + " rotary " +
                         describe(c.shape) + " cos " + describe(c.table) +
                         (interleaved ? " interleaved" : "");
      HostArray<T> out(x.numElements());
      runOnHost(makeRotaryPairs<T>(c.shape, cos.shape, sin.shape, in.data(),
                                   cosValues.data(), sinValues.data(),
                                   out.data(), interleaved),
                x.numElements() / 2);
      expectMatches(out, want, what);
      HostArray<T> inPlace = copyOf(in);
      runOnHost(makeRotaryPairs<T>(c.shape, cos.shape, sin.shape,
                                   inPlace.data(), cosValues.data(),
                                   sinValues.data(), inPlace.data(),
                                   interleaved),
                x.numElements() / 2);
      expectMatches(inPlace, want, what + " in place");
    }
}

TEST(NormHostTest, RotaryF32) { checkRotary<float>(); }
TEST(NormHostTest, RotaryF16) { checkRotary<f16>(); }
TEST(NormHostTest, RotaryBF16) { checkRotary<bf16>(); }

TEST(NormHostTest, RotaryMergesBroadcastRowDims) {
  float dummy = 0;
  // cos [S, 1, D] against x [B, S, H, D]: B and H stay separate dims (S
  // sits between them); cos [S, D] against [B, H, S, D] merges B and H;
  // cos [D] makes every row dim one.
  RotaryPairs<float> f =
      makeRotaryPairs<float>({2, 3, 4, 8}, {3, 1, 8}, {3, 1, 8}, &dummy, &dummy,
                             &dummy, &dummy, false);
  EXPECT_EQ(f.rank, 3);
  f = makeRotaryPairs<float>({2, 4, 3, 8}, {3, 8}, {3, 8}, &dummy, &dummy,
                             &dummy, &dummy, false);
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.rowSize[0], 8);
  EXPECT_EQ(f.cosStride[0], 0);
  f = makeRotaryPairs<float>({2, 3, 4, 8}, {8}, {8}, &dummy, &dummy, &dummy,
                             &dummy, false);
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.rowSize[0], 24);
  f = makeRotaryPairs<float>({2, 3, 4, 8}, {2, 3, 4, 8}, {2, 3, 4, 8}, &dummy,
                             &dummy, &dummy, &dummy, false);
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.cosStride[0], 8);
}

} // namespace
} // namespace braid::rt::cuda
