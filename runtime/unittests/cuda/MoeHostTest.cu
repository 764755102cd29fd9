//===- MoeHostTest.cu - MoE and loss index math on the host ---------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Runs the functors and per-lane pieces of MoeOps.cuh on the host against
// ref::routerTopK, ref::moeDispatch, ref::moeCombine and ref::crossEntropy,
// on random data, for f32, f16 and bf16 and both index types. The warp and
// block kernels of Moe.cu are replayed here: their per-lane pieces run for
// every lane and are merged by the same xor butterfly (32 lanes) and, for
// the slot scan, the same chunked exclusive prefix counts.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/MoeOps.cuh"
#include "runtime/reference/ReferenceKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace braid::rt::cuda {
namespace {
using namespace moe;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

template <typename F> void forEachFloatType(F f) {
  f(float{}, DType::F32);
  f(f16{}, DType::F16);
  f(bf16{}, DType::BF16);
}

template <typename F> void forEachIndexType(F f) {
  f(int64_t{}, DType::I64);
  f(int32_t{}, DType::I32);
}

/// The relative spacing of a dtype's values near 1.
double epsilonOf(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return 1.0 / 1024;
  case DType::BF16:
    return 1.0 / 128;
  default:
    return 1.0 / (1 << 23);
  }
}

/// Host elements of a floating reference tensor (already rounded to T).
template <typename T> std::vector<T> hostFloats(const ref::Tensor &t) {
  std::vector<T> out(t.f.size());
  for (size_t i = 0; i < t.f.size(); ++i)
    out[i] = fromFloat<T>(static_cast<float>(t.f[i]));
  return out;
}

template <typename I> std::vector<I> hostInts(const ref::Tensor &t) {
  std::vector<I> out(t.i.size());
  for (size_t i = 0; i < t.i.size(); ++i)
    out[i] = static_cast<I>(t.i[i]);
  return out;
}

ref::Tensor randomFloats(DType dtype, std::vector<int64_t> shape,
                         std::mt19937 &rng, double lo, double hi) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(n);
  for (double &v : values)
    v = dist(rng);
  return ref::Tensor::ofFloats(dtype, std::move(shape), std::move(values));
}

/// Logits from a few values (exact in every dtype), so rows have many ties.
ref::Tensor tiedFloats(DType dtype, std::vector<int64_t> shape,
                       std::mt19937 &rng) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::uniform_int_distribution<int> dist(-3, 3);
  std::vector<double> values(n);
  for (double &v : values)
    v = dist(rng) * 0.5;
  return ref::Tensor::ofFloats(dtype, std::move(shape), std::move(values));
}

/// Expert ids in [0, experts); with `skewed` half of them go to expert 0.
ref::Tensor randomExperts(DType dtype, int64_t tokens, int64_t choices,
                          int64_t experts, bool skewed, std::mt19937 &rng) {
  std::uniform_int_distribution<int64_t> dist(0, experts - 1);
  std::vector<int64_t> ids(tokens * choices);
  for (int64_t &id : ids)
    id = skewed && rng() % 2 ? 0 : dist(rng);
  return ref::Tensor::ofInts(dtype, {tokens, choices}, std::move(ids));
}

/// |ours - expected| within a few units of the dtype's rounding (plus
/// `atol` for values near zero and float-versus-double accumulation).
void expectClose(double ours, double expected, DType dtype, double atol,
                 const std::string &where) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(ours)) << where;
    return;
  }
  if (std::isinf(expected)) {
    EXPECT_EQ(ours, expected) << where;
    return;
  }
  double tol = 2 * epsilonOf(dtype) * std::fabs(expected) + atol;
  EXPECT_NEAR(ours, expected, tol) << where;
}

/// The xor butterfly of Moe.cu's WarpReduce over 32 lane values; checks
/// that every lane ends with the same value (bitwise) and returns it.
template <typename V, typename Merge>
V butterfly(std::vector<V> lanes, Merge merge) {
  EXPECT_EQ(lanes.size(), 32u);
  for (int offset = 16; offset > 0; offset /= 2) {
    std::vector<V> next(32);
    for (int l = 0; l < 32; ++l)
      next[l] = merge(lanes[l], lanes[l ^ offset]);
    lanes = next;
  }
  for (int l = 1; l < 32; ++l)
    EXPECT_EQ(std::memcmp(&lanes[l], &lanes[0], sizeof(V)), 0)
        << "lane " << l << " disagrees after the butterfly";
  return lanes[0];
}

//===----------------------------------------------------------------------===//
// router_topk
//===----------------------------------------------------------------------===//

struct RouterCase {
  int64_t tokens, experts, k;
  bool ties;
};

const RouterCase kRouterCases[] = {
    {7, 4, 2, false},   {16, 8, 2, false},  {5, 31, 3, true}, {9, 64, 8, false},
    {3, 160, 6, true},  {4, 8, 8, true},    {6, 1, 1, false}, {12, 32, 4, true},
    {2, 33, 33, false}, {11, 128, 1, true},
};

TEST(MoeHostTest, RouterTopKMatchesReference) {
  std::mt19937 rng(1);
  for (const RouterCase &c : kRouterCases)
    for (bool normalize : {false, true})
      forEachFloatType([&](auto tag, DType dtype) {
        using T = decltype(tag);
        std::string where =
            std::string(toString(dtype)) + " [" + std::to_string(c.tokens) +
            ", " + std::to_string(c.experts) + "] k " + std::to_string(c.k) +
            (normalize ? " normalized" : "");
        ref::Tensor logits =
            c.ties ? tiedFloats(dtype, {c.tokens, c.experts}, rng)
                   : randomFloats(dtype, {c.tokens, c.experts}, rng, -4, 4);
        ref::RouterResult expected = ref::routerTopK(logits, c.k, normalize);
        std::vector<T> x = hostFloats<T>(logits);
        std::vector<T> weights(c.tokens * c.k);
        std::vector<int64_t> ids(c.tokens * c.k, -7);
        RouterTopK<T> f{x.data(), weights.data(), ids.data(),
                        c.tokens, c.experts,      c.k,
                        normalize};
        runOnHost(f, c.tokens);
        for (int64_t i = 0; i < c.tokens * c.k; ++i) {
          ASSERT_EQ(ids[i], expected.experts.i[i]) << where << " at " << i;
          expectClose(toFloat(weights[i]), expected.weights.f[i], dtype, 1e-6,
                      where + " weight " + std::to_string(i));
        }
      });
}

/// The warp kernel's decomposition: 32 lanes with strided experts, merged by
/// the butterfly, pick the reference's experts with the reference's
/// probabilities.
TEST(MoeHostTest, RouterTopKWarpLanesMatchReference) {
  std::mt19937 rng(2);
  for (const RouterCase &c : kRouterCases)
    forEachFloatType([&](auto tag, DType dtype) {
      using T = decltype(tag);
      ref::Tensor logits =
          c.ties ? tiedFloats(dtype, {c.tokens, c.experts}, rng)
                 : randomFloats(dtype, {c.tokens, c.experts}, rng, -4, 4);
      ref::RouterResult expected = ref::routerTopK(logits, c.k, false);
      std::vector<T> x = hostFloats<T>(logits);
      for (int64_t t = 0; t < c.tokens; ++t) {
        const T *row = x.data() + t * c.experts;
        std::vector<float> part(32);
        for (int l = 0; l < 32; ++l)
          part[l] = laneMax(row, c.experts, l, 32);
        float max =
            butterfly(part, [](float a, float b) { return fmaxf(a, b); });
        for (int l = 0; l < 32; ++l)
          part[l] = laneExpSum(row, c.experts, max, l, 32);
        float sum = butterfly(part, [](float a, float b) { return a + b; });
        Candidate prev{0.f, -1};
        for (int64_t j = 0; j < c.k; ++j) {
          std::vector<Candidate> picks(32);
          for (int l = 0; l < 32; ++l)
            picks[l] = laneNext(row, c.experts, j == 0, prev, l, 32);
          prev = butterfly(picks, better);
          ASSERT_EQ(prev.index, expected.experts.i[t * c.k + j])
              << toString(dtype) << " token " << t << " pick " << j;
          expectClose(expf(prev.value - max) / sum,
                      expected.weights.f[t * c.k + j], dtype, 1e-6,
                      "warp lanes weight");
        }
      }
    });
}

//===----------------------------------------------------------------------===//
// Slot assignment, moe_dispatch and moe_combine
//===----------------------------------------------------------------------===//

struct MoeCase {
  int64_t tokens, choices, experts, capacity, hidden;
  bool skewed;
};

const MoeCase kMoeCases[] = {
    {16, 2, 8, 8, 64, false},     {16, 2, 8, 3, 5, true},
    {37, 3, 5, 40, 16, false},    {1, 1, 1, 1, 1, false},
    {0, 2, 3, 4, 8, false},       {5000, 2, 4, 3000, 8, false},
    {5000, 2, 4, 100, 8, true},   {3000, 4, 64, 200, 12, true},
    {700, 1, 3, 700, 3, false},   {9, 8, 8, 2, 32, false},
    {9000, 3, 6, 5000, 4, false},
};

/// Replays slotScanKernel: one "block" per expert, chunk by chunk, the
/// threads' counts prefix-summed in thread order.
template <typename I>
void emulateSlotScanKernel(const SlotScan<I> &scan, int64_t experts) {
  for (int64_t e = 0; e < experts; ++e) {
    int64_t count = 0;
    for (int64_t base = 0; base < scan.pairs && count < scan.capacity;
         base += kScanChunk) {
      std::vector<int> mine(kScanThreads);
      for (int t = 0; t < kScanThreads; ++t)
        mine[t] = scan.countItems(e, base + int64_t(t) * kScanItems);
      int64_t before = 0;
      for (int t = 0; t < kScanThreads; ++t) {
        scan.writeItems(e, base + int64_t(t) * kScanItems, count + before);
        before += mine[t];
      }
      count += before;
    }
    for (int t = 0; t < kScanThreads; ++t)
      scan.fillUnused(e, count, t, kScanThreads);
  }
}

/// Calls `make` with pack width 1, and with the 16-byte width when rows of
/// `rowLength` elements at `a` and `b` allow it.
template <typename T, typename Make>
void forEachWidth(int64_t rowLength, const void *a, const void *b, Make make) {
  make(std::integral_constant<int, 1>{});
  if (vectorizable<T>(a, rowLength) && vectorizable<T>(b, rowLength))
    make(std::integral_constant<int, vecWidth<T>()>{});
}

TEST(MoeHostTest, DispatchMatchesReference) {
  std::mt19937 rng(3);
  for (const MoeCase &c : kMoeCases)
    forEachIndexType([&](auto itag, DType idtype) {
      using I = decltype(itag);
      ref::Tensor experts =
          randomExperts(idtype, c.tokens, c.choices, c.experts, c.skewed, rng);
      std::vector<I> ids = hostInts<I>(experts);
      int64_t pairs = c.tokens * c.choices, rows = c.experts * c.capacity;
      // Both scans must give the same token per slot, every slot set.
      std::vector<int32_t> serial(rows, 12345), emulated(rows, 12345);
      runOnHost(
          AssignSlotsSerial<I>{SlotScan<I>{ids.data(), pairs, c.choices,
                                           c.capacity, nullptr, serial.data()}},
          c.experts);
      emulateSlotScanKernel(SlotScan<I>{ids.data(), pairs, c.choices,
                                        c.capacity, nullptr, emulated.data()},
                            c.experts);
      ASSERT_EQ(serial, emulated);
      for (int32_t token : serial)
        ASSERT_TRUE(token >= -1 && token < c.tokens);
      forEachFloatType([&](auto tag, DType dtype) {
        using T = decltype(tag);
        std::string where =
            std::string(toString(dtype)) + "/" + std::string(toString(idtype)) +
            " T " + std::to_string(c.tokens) + " k " +
            std::to_string(c.choices) + " E " + std::to_string(c.experts) +
            " C " + std::to_string(c.capacity);
        ref::Tensor x = randomFloats(dtype, {c.tokens, c.hidden}, rng, -2, 2);
        ref::Tensor expected =
            ref::moeDispatch(x, experts, c.experts, c.capacity);
        std::vector<T> hx = hostFloats<T>(x);
        std::vector<T> out(rows * c.hidden);
        forEachWidth<T>(c.hidden, hx.data(), out.data(), [&](auto width) {
          constexpr int W = decltype(width)::value;
          std::fill(out.begin(), out.end(), fromFloat<T>(99.f));
          DispatchGather<T, W> f{hx.data(), serial.data(), out.data(),
                                 c.hidden};
          runOnHost(f, f.size(rows));
          for (int64_t i = 0; i < rows * c.hidden; ++i)
            ASSERT_EQ(toFloat(out[i]), expected.f[i])
                << where << " W " << W << " at " << i;
        });
      });
    });
}

TEST(MoeHostTest, CombineMatchesReference) {
  std::mt19937 rng(4);
  for (const MoeCase &c : kMoeCases)
    forEachIndexType([&](auto itag, DType idtype) {
      using I = decltype(itag);
      ref::Tensor experts =
          randomExperts(idtype, c.tokens, c.choices, c.experts, c.skewed, rng);
      std::vector<I> ids = hostInts<I>(experts);
      int64_t pairs = c.tokens * c.choices, rows = c.experts * c.capacity;
      std::vector<int32_t> serial(pairs, -1), emulated(pairs, -1);
      runOnHost(
          AssignSlotsSerial<I>{SlotScan<I>{ids.data(), pairs, c.choices,
                                           c.capacity, serial.data(), nullptr}},
          c.experts);
      emulateSlotScanKernel(SlotScan<I>{ids.data(), pairs, c.choices,
                                        c.capacity, emulated.data(), nullptr},
                            c.experts);
      ASSERT_EQ(serial, emulated);
      for (int32_t row : serial)
        ASSERT_TRUE(row >= -1 && row < rows);
      forEachFloatType([&](auto tag, DType dtype) {
        using T = decltype(tag);
        std::string where =
            std::string(toString(dtype)) + "/" + std::string(toString(idtype)) +
            " T " + std::to_string(c.tokens) + " k " +
            std::to_string(c.choices) + " E " + std::to_string(c.experts) +
            " C " + std::to_string(c.capacity);
        ref::Tensor y =
            randomFloats(dtype, {c.experts, c.capacity, c.hidden}, rng, -2, 2);
        ref::Tensor weights =
            randomFloats(dtype, {c.tokens, c.choices}, rng, 0, 1);
        ref::Tensor expected = ref::moeCombine(y, experts, weights);
        std::vector<T> hy = hostFloats<T>(y), hw = hostFloats<T>(weights);
        std::vector<T> out(c.tokens * c.hidden);
        forEachWidth<T>(c.hidden, hy.data(), out.data(), [&](auto width) {
          constexpr int W = decltype(width)::value;
          std::fill(out.begin(), out.end(), fromFloat<T>(99.f));
          CombineGather<T, W> f{hy.data(),  hw.data(), serial.data(),
                                out.data(), c.choices, c.hidden};
          runOnHost(f, f.size(c.tokens));
          for (int64_t i = 0; i < c.tokens * c.hidden; ++i)
            expectClose(toFloat(out[i]), expected.f[i], dtype, 1e-5,
                        where + " W " + std::to_string(W) + " at " +
                            std::to_string(i));
        });
      });
    });
}

/// Expert ids the reference rejects (negative, >= E) are dropped without a
/// write out of bounds and without taking a slot.
TEST(MoeHostTest, OutOfRangeExpertsAreDropped) {
  std::vector<int64_t> ids = {0, -1, 3, 1, 0, 7, 1, 0};
  int64_t experts = 2, capacity = 2;
  std::vector<int32_t> target(ids.size(), -1), source(experts * capacity, 9);
  SlotScan<int64_t> scan{ids.data(), int64_t(ids.size()), 2,
                         capacity,   target.data(),       source.data()};
  emulateSlotScanKernel(scan, experts);
  EXPECT_EQ(target, (std::vector<int32_t>{0, -1, -1, 2, 1, -1, 3, -1}));
  EXPECT_EQ(source, (std::vector<int32_t>{0, 2, 1, 3}));
}

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

/// Replays crossEntropyWarpKernel (lanes 32) or crossEntropyBlockKernel
/// (lanes kRowBlockThreads = 512: per-warp butterflies, then warp 0 merges
/// the 16 warp states padded with empty ones).
template <typename T, int W>
LseState emulateRowReduction(const T *row, int64_t packs, int lanes) {
  std::vector<LseState> states(lanes);
  for (int l = 0; l < lanes; ++l)
    states[l] = lanePartial<T, W>(row, packs, l, lanes);
  std::vector<LseState> warpStates;
  for (int w = 0; w < lanes / 32; ++w)
    warpStates.push_back(
        butterfly(std::vector<LseState>(states.begin() + w * 32,
                                        states.begin() + (w + 1) * 32),
                  mergeLse));
  if (lanes == 32)
    return warpStates[0];
  warpStates.resize(32, emptyLse());
  return butterfly(warpStates, mergeLse);
}

/// Replays the two-level sumKernel reduction.
float emulateSum(const std::vector<float> &in, float divisor) {
  auto block = [](const std::vector<float> &v, int64_t b, int64_t blocks) {
    std::vector<float> sums(kSumThreads);
    for (int t = 0; t < kSumThreads; ++t)
      sums[t] = threadSum(v.data(), int64_t(v.size()), b, blocks, t);
    for (int stride = kSumThreads / 2; stride > 0; stride /= 2)
      for (int t = 0; t < stride; ++t)
        sums[t] += sums[t + stride];
    return sums[0];
  };
  int64_t blocks = sumBlocks(int64_t(in.size()));
  if (blocks == 1)
    return block(in, 0, 1) / divisor;
  std::vector<float> partials(blocks);
  for (int64_t b = 0; b < blocks; ++b)
    partials[b] = block(in, b, blocks);
  return block(partials, 0, 1) / divisor;
}

const std::vector<std::vector<int64_t>> kLossShapes = {
    {7, 1}, {9, 5},     {4, 31},    {6, 32}, {5, 100},   {3, 2056}, {2, 5000},
    {40},   {2, 3, 17}, {2, 3, 64}, {0, 8},  {40000, 3}, {1, 4099},
};

TEST(MoeHostTest, CrossEntropyMatchesReference) {
  std::mt19937 rng(5);
  for (const std::vector<int64_t> &shape : kLossShapes)
    forEachIndexType([&](auto itag, DType idtype) {
      using I = decltype(itag);
      int64_t classes = shape.back();
      std::vector<int64_t> samplesShape(shape.begin(), shape.end() - 1);
      int64_t samples = 1;
      for (int64_t d : samplesShape)
        samples *= d;
      std::uniform_int_distribution<int64_t> labelDist(0, classes - 1);
      std::vector<int64_t> labelValues(samples);
      for (int64_t &l : labelValues)
        l = labelDist(rng);
      ref::Tensor labels =
          ref::Tensor::ofInts(idtype, samplesShape, std::move(labelValues));
      std::vector<I> hl = hostInts<I>(labels);
      forEachFloatType([&](auto tag, DType dtype) {
        using T = decltype(tag);
        std::string where = std::string(toString(dtype)) + "/" +
                            std::string(toString(idtype)) + " " +
                            shapeToString(shape);
        ref::Tensor logits = randomFloats(dtype, shape, rng, -4, 4);
        // Some -inf logits (never at a label) add nothing.
        for (int64_t s = 0; s < samples && classes > 2; s += 3) {
          int64_t c = (labels.i[s] + 1) % classes;
          logits.f[s * classes + c] = -INFINITY;
        }
        ref::Tensor none =
            ref::crossEntropy(logits, labels, ref::LossReduction::None);
        ref::Tensor mean =
            ref::crossEntropy(logits, labels, ref::LossReduction::Mean);
        ref::Tensor sum =
            ref::crossEntropy(logits, labels, ref::LossReduction::Sum);
        std::vector<T> hx = hostFloats<T>(logits);
        // The loss of a row of ~C terms in float: a few ulps of float
        // relative to the row's log-sum-exp.
        double atol = 1e-5 * (1 + std::log(double(classes) + 1));
        auto checkLosses = [&](const std::vector<float> &losses,
                               const std::vector<T> &out,
                               const std::string &variant) {
          for (int64_t s = 0; s < samples; ++s) {
            // The reference's losses are rounded to the dtype.
            expectClose(losses[s], none.f[s], dtype, atol,
                        where + " " + variant + " sample " + std::to_string(s));
            expectClose(toFloat(out[s]), none.f[s], dtype, atol,
                        where + " " + variant + " stored sample " +
                            std::to_string(s));
          }
        };
        auto run = [&](auto width) {
          constexpr int W = decltype(width)::value;
          std::string w = " W " + std::to_string(W);
          int64_t packs = classes / W;
          std::vector<float> losses(samples, 77.f);
          std::vector<T> out(samples, fromFloat<T>(77.f));
          CrossEntropyRows<T, I> toFloats{hx.data(), hl.data(), samples,
                                          classes,   nullptr,   losses.data()};
          CrossEntropyRows<T, I> toOut{hx.data(), hl.data(),  samples,
                                       classes,   out.data(), nullptr};
          runOnHost(CrossEntropyRow<T, I, W>{toFloats}, samples);
          runOnHost(CrossEntropyRow<T, I, W>{toOut}, samples);
          checkLosses(losses, out, "thread" + w);
          // Replays only the row sizes the launcher sends to them.
          if (samples > 40)
            return;
          for (int lanes : {32, 512}) {
            std::fill(losses.begin(), losses.end(), 77.f);
            std::fill(out.begin(), out.end(), fromFloat<T>(77.f));
            for (int64_t s = 0; s < samples; ++s) {
              LseState state =
                  emulateRowReduction<T, W>(toFloats.row(s), packs, lanes);
              toFloats.finish(s, state);
              toOut.finish(s, state);
            }
            checkLosses(losses, out, std::to_string(lanes) + " lanes" + w);
          }
        };
        run(std::integral_constant<int, 1>{});
        if (vectorizable<T>(hx.data(), classes))
          run(std::integral_constant<int, vecWidth<T>()>{});
        // mean and sum over the float losses, as sumKernel reduces them.
        std::vector<float> losses(samples);
        runOnHost(CrossEntropyRow<T, I, 1>{CrossEntropyRows<T, I>{
                      hx.data(), hl.data(), samples, classes, nullptr,
                      losses.data()}},
                  samples);
        double sumAtol = atol * double(samples) + 1e-6;
        expectClose(toFloat(fromFloat<T>(emulateSum(losses, 1.f))), sum.f[0],
                    dtype, sumAtol, where + " sum");
        float meanValue = emulateSum(losses, float(samples));
        if (samples == 0) {
          EXPECT_TRUE(std::isnan(mean.f[0])) << where;
          EXPECT_TRUE(std::isnan(meanValue)) << where;
        } else {
          expectClose(toFloat(fromFloat<T>(meanValue)), mean.f[0], dtype,
                      atol + 1e-6, where + " mean");
        }
      });
    });
}

/// A label the reference rejects gives NaN, and touches nothing else.
TEST(MoeHostTest, CrossEntropyBadLabelIsNaN) {
  std::vector<float> logits = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> labels = {3, -1};
  std::vector<float> losses(2, 0.f);
  runOnHost(CrossEntropyRow<float, int32_t, 1>{CrossEntropyRows<float, int32_t>{
                logits.data(), labels.data(), 2, 3, nullptr, losses.data()}},
            2);
  EXPECT_TRUE(std::isnan(losses[0]));
  EXPECT_TRUE(std::isnan(losses[1]));
}

/// The reference's log-sum-exp edge cases: a row of -inf gives NaN (-inf -
/// -inf), a +inf or NaN logit gives NaN.
TEST(MoeHostTest, CrossEntropyNonFiniteRows) {
  float inf = INFINITY;
  std::vector<float> logits = {-inf, -inf, -inf, 1, inf,  2,
                               1,    NAN,  2,    1, -inf, 2};
  std::vector<int64_t> labels = {0, 0, 0, 2};
  std::vector<float> losses(4, 0.f);
  runOnHost(CrossEntropyRow<float, int64_t, 1>{CrossEntropyRows<float, int64_t>{
                logits.data(), labels.data(), 4, 3, nullptr, losses.data()}},
            4);
  EXPECT_TRUE(std::isnan(losses[0]));
  EXPECT_TRUE(std::isnan(losses[1]));
  EXPECT_TRUE(std::isnan(losses[2]));
  EXPECT_NEAR(losses[3], std::log(std::exp(1.0) + std::exp(2.0)) - 2, 1e-6);
  ref::Tensor t = ref::Tensor::ofFloats(
      DType::F32, {4, 3}, std::vector<double>(logits.begin(), logits.end()));
  ref::Tensor l = ref::Tensor::ofInts(DType::I64, {4}, {0, 0, 0, 2});
  ref::Tensor expected = ref::crossEntropy(t, l, ref::LossReduction::None);
  for (int s = 0; s < 4; ++s)
    expectClose(losses[s], expected.f[s], DType::F32, 1e-6,
                "sample " + std::to_string(s));
}

} // namespace
} // namespace braid::rt::cuda
