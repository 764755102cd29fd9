//===- AttentionHostTest.cu - the attention kernels' math on the host -----===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The fused attention kernel cannot run without a GPU, but everything it
// computes goes through AttentionOps.cuh: the block decomposition, key
// ranges, masked scores, the online softmax of a row, the split-KV merge and
// attention_merge. These tests run that code on the host (attentionOnHost is
// the kernel's twin; AttentionMergeOp runs with runOnHost) and compare with
// the reference kernels on random data: causal with default, negative and
// large offsets, boolean and additive masks broadcast in several ways, rows
// that see no key, GQA and MQA, D != Dv, head sizes up to 256, f32, f16 and
// bf16, with and without split-KV.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/AttentionOps.cuh"
#include "runtime/reference/ReferenceKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace braid::rt;
using namespace braid::rt::cuda;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename T> DType dtypeOf();
template <> DType dtypeOf<float>() { return DType::F32; }
template <> DType dtypeOf<f16>() { return DType::F16; }
template <> DType dtypeOf<bf16>() { return DType::BF16; }

/// Relative tolerance of one rounding of the element type, doubled.
template <typename T> double tolerance() {
  if (dtypeOf<T>() == DType::F32)
    return 2e-5;
  if (dtypeOf<T>() == DType::F16)
    return 2e-3;
  return 1.6e-2;
}

ref::Tensor randomTensor(DType dtype, std::vector<int64_t> shape,
                         std::mt19937 &rng, double lo = -2, double hi = 2) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(n);
  for (double &x : values)
    x = dist(rng);
  return ref::Tensor::ofFloats(dtype, shape, values);
}

/// The reference's values (already rounded to T) as T.
template <typename T> std::vector<T> toHost(const ref::Tensor &t) {
  std::vector<T> out(t.f.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = fromFloat<T>(static_cast<float>(t.f[i]));
  return out;
}

template <typename T>
void expectClose(const std::vector<T> &got, const ref::Tensor &want,
                 const std::string &what) {
  ASSERT_EQ(got.size(), want.f.size()) << what;
  double tol = tolerance<T>();
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    double g = toFloat(got[i]), w = want.f[i];
    if (std::isinf(w)) {
      EXPECT_EQ(g, w) << what << " element " << i;
      failures += g != w;
      continue;
    }
    bool ok = std::fabs(g - w) <= tol * (1 + std::fabs(w));
    EXPECT_TRUE(ok) << what << " element " << i << ": got " << g << ", want "
                    << w;
    failures += !ok;
  }
}

enum class MaskCase { None, Bool, Float };

struct AttnCase {
  std::string name;
  int64_t b, h, hkv, sq, sk, d, dv;
  bool causal;
  std::optional<int64_t> offset;
  MaskCase mask = MaskCase::None;
  std::vector<int64_t> maskShape = {};
};

/// A mask of `shape`: boolean keeps about 3/4 of keys; additive values in
/// [-1, 1] with about 1/8 -inf. Either way some entries hide a whole row
/// (every key of query 1 where the mask has a query dimension).
ref::Tensor randomMask(const AttnCase &c, DType dtype, std::mt19937 &rng) {
  int64_t n = 1;
  for (int64_t s : c.maskShape)
    n *= s;
  int64_t last = c.maskShape.empty() ? 1 : c.maskShape.back();
  bool hasQueries =
      c.maskShape.size() >= 2 && c.maskShape[c.maskShape.size() - 2] > 1;
  std::uniform_int_distribution<int> coin(0, 7);
  std::uniform_real_distribution<double> dist(-1, 1);
  if (c.mask == MaskCase::Bool) {
    std::vector<int64_t> bits(n);
    for (int64_t e = 0; e < n; ++e) {
      int64_t query =
          hasQueries ? (e / last) % c.maskShape[c.maskShape.size() - 2] : 0;
      bits[e] = hasQueries && query == 1 ? 0 : coin(rng) >= 2;
    }
    return ref::Tensor::ofInts(DType::I1, c.maskShape, bits);
  }
  std::vector<double> values(n);
  for (int64_t e = 0; e < n; ++e) {
    int64_t query =
        hasQueries ? (e / last) % c.maskShape[c.maskShape.size() - 2] : 0;
    values[e] =
        (hasQueries && query == 1) || coin(rng) == 0 ? -kInf : dist(rng);
  }
  return ref::Tensor::ofFloats(dtype, c.maskShape, values);
}

/// Runs the kernel's host twin (splitting keys like the kernel does for a
/// device of `smCount` SMs and `workspaceBytes` of workspace) and compares
/// output and lse with ref::attention. Returns the number of splits.
template <typename T>
int64_t checkCase(const AttnCase &c, int smCount, size_t workspaceBytes,
                  uint32_t seed) {
  SCOPED_TRACE(c.name + " " + std::string(toString(dtypeOf<T>())) +
               " smCount " + std::to_string(smCount));
  std::mt19937 rng(seed);
  DType dtype = dtypeOf<T>();
  ref::Tensor q = randomTensor(dtype, {c.b, c.h, c.sq, c.d}, rng);
  ref::Tensor k = randomTensor(dtype, {c.b, c.hkv, c.sk, c.d}, rng);
  ref::Tensor v = randomTensor(dtype, {c.b, c.hkv, c.sk, c.dv}, rng);
  std::optional<ref::Tensor> mask;
  if (c.mask != MaskCase::None)
    mask = randomMask(c, dtype, rng);
  double scale = 1 / std::sqrt(static_cast<double>(c.d));

  ref::AttentionResult want = ref::attention(q, k, v, mask ? &*mask : nullptr,
                                             c.causal, c.offset, scale);

  AttentionParams p = makeAttentionParams(
      q.shape, k.shape, v.shape, mask ? &mask->shape : nullptr,
      c.mask == MaskCase::Bool, c.causal, c.offset ? &*c.offset : nullptr,
      scale, smCount, workspaceBytes);
  std::vector<T> qh = toHost<T>(q), kh = toHost<T>(k), vh = toHost<T>(v);
  std::vector<uint8_t> maskBits;
  std::vector<T> maskValues;
  const void *maskData = nullptr;
  if (c.mask == MaskCase::Bool) {
    maskBits.assign(mask->i.begin(), mask->i.end());
    maskData = maskBits.data();
  } else if (c.mask == MaskCase::Float) {
    maskValues = toHost<T>(*mask);
    maskData = maskValues.data();
  }
  // Poisoned outputs: every element must be written.
  std::vector<T> out(want.out.f.size(), fromFloat<T>(12345.f));
  std::vector<float> lse(want.lse.f.size(), 12345.f);
  if (p.splits > 1) {
    EXPECT_LE(attentionSplitBytes(p), workspaceBytes);
    std::vector<float> workspace(attentionSplitBytes(p) / sizeof(float),
                                 std::nanf(""));
    attentionOnHost(p, qh.data(), kh.data(), vh.data(), maskData, out.data(),
                    lse.data(), workspace.data());
    AttentionMergeOp<float, T> merge =
        splitMergeOp(p, workspace.data(), out.data(), lse.data());
    runOnHost(merge, p.rows() * merge.width);
  } else {
    attentionOnHost(p, qh.data(), kh.data(), vh.data(), maskData, out.data(),
                    lse.data(), static_cast<float *>(nullptr));
  }
  expectClose(out, want.out, "output");
  expectClose(lse, want.lse, "lse");
  return p.splits;
}

std::vector<AttnCase> attentionCases() {
  // clang-format off
  return {
      {"plain", 1, 2, 2, 5, 7, 8, 8, false, std::nullopt},
      {"gqa causal", 2, 4, 2, 9, 40, 16, 24, true, std::nullopt},
      {"mqa decode", 1, 8, 1, 1, 300, 64, 64, true, std::nullopt},
      {"decode offset", 2, 4, 4, 1, 257, 32, 32, true, int64_t{200}},
      {"negative offset", 2, 2, 1, 33, 33, 32, 16, true, int64_t{-3}},
      {"offset past keys", 1, 2, 1, 6, 20, 8, 8, true, int64_t{40}},
      {"causal square", 1, 3, 1, 70, 70, 13, 40, true, std::nullopt},
      {"causal prefix", 1, 2, 2, 50, 130, 20, 20, true, std::nullopt},
      {"bool mask", 1, 4, 2, 20, 70, 13, 36, true, int64_t{5}, MaskCase::Bool,
       {1, 1, 20, 70}},
      {"bool mask full", 2, 2, 1, 6, 45, 8, 8, false, std::nullopt,
       MaskCase::Bool, {2, 2, 6, 45}},
      {"bool mask keys", 2, 4, 4, 3, 64, 16, 16, false, std::nullopt,
       MaskCase::Bool, {2, 1, 1, 64}},
      {"float mask", 2, 4, 2, 7, 50, 24, 24, false, std::nullopt,
       MaskCase::Float, {2, 4, 7, 50}},
      {"float mask causal", 1, 2, 1, 12, 12, 32, 8, true, std::nullopt,
       MaskCase::Float, {12, 12}},
      {"float mask keys", 2, 2, 2, 5, 100, 40, 33, false, std::nullopt,
       MaskCase::Float, {2, 1, 1, 100}},
      {"head 256", 1, 2, 1, 17, 37, 256, 256, true, std::nullopt},
      {"dv 1", 1, 1, 1, 4, 9, 3, 1, false, std::nullopt},
      {"no keys", 1, 2, 1, 3, 0, 8, 8, false, std::nullopt},
  };
  // clang-format on
}

template <typename T> void checkAllCases() {
  bool split = false;
  uint32_t seed = 1;
  for (const AttnCase &c : attentionCases()) {
    // One block per SM and no workspace: never split.
    EXPECT_EQ(checkCase<T>(c, 1, 0, seed), 1);
    // Many SMs and room: long key ranges are split.
    split |= checkCase<T>(c, 132, size_t(64) << 20, seed) > 1;
    ++seed;
  }
  EXPECT_TRUE(split);
}

TEST(AttentionHostTest, MatchesReferenceF32) { checkAllCases<float>(); }
TEST(AttentionHostTest, MatchesReferenceF16) { checkAllCases<f16>(); }
TEST(AttentionHostTest, MatchesReferenceBF16) { checkAllCases<bf16>(); }

TEST(AttentionHostTest, SplitsOnlyWhenWorthIt) {
  AttentionParams p = makeAttentionParams(
      {1, 32, 1, 128}, {1, 8, 4096, 128}, {1, 8, 4096, 128}, nullptr, false,
      true, nullptr, 0.1, 132, size_t(64) << 20);
  // 8 blocks (one per key/value head, the group of 4 in each); 264 wanted,
  // 33 splits asked, 4 whole key tiles each: 32 splits.
  EXPECT_EQ(p.tilesPerHead, 1);
  EXPECT_EQ(p.splits, 32);
  EXPECT_EQ(p.splitKeys % kAttnBlockKeys, 0);
  EXPECT_GE(p.splits * p.splitKeys, 4096);
  EXPECT_LT((p.splits - 1) * p.splitKeys, 4096);
  // Too little workspace: fewer splits, or none.
  size_t perSplit = 32 * (128 + 1) * sizeof(float);
  p = makeAttentionParams({1, 32, 1, 128}, {1, 8, 4096, 128}, {1, 8, 4096, 128},
                          nullptr, false, true, nullptr, 0.1, 132,
                          5 * perSplit);
  EXPECT_LE(p.splits, 5);
  EXPECT_LE(attentionSplitBytes(p), 5 * perSplit);
  p = makeAttentionParams({1, 32, 1, 128}, {1, 8, 4096, 128}, {1, 8, 4096, 128},
                          nullptr, false, true, nullptr, 0.1, 132, 0);
  EXPECT_EQ(p.splits, 1);
  // A full grid: no split.
  p = makeAttentionParams({4, 32, 2048, 128}, {4, 8, 2048, 128},
                          {4, 8, 2048, 128}, nullptr, false, true, nullptr, 0.1,
                          132, size_t(64) << 20);
  EXPECT_EQ(p.splits, 1);
}

TEST(AttentionHostTest, RejectsWhatTheKernelCannotRun) {
  EXPECT_THROW(makeAttentionParams({1, 1, 4, 257}, {1, 1, 4, 257}, {1, 1, 4, 8},
                                   nullptr, false, false, nullptr, 1.0, 1, 0),
               CudaError);
  EXPECT_THROW(makeAttentionParams({1, 1, 4, 8}, {1, 1, 4, 8}, {1, 1, 4, 512},
                                   nullptr, false, false, nullptr, 1.0, 1, 0),
               CudaError);
  int64_t offset = 2;
  EXPECT_THROW(makeAttentionParams({1, 1, 4, 8}, {1, 1, 4, 8}, {1, 1, 4, 8},
                                   nullptr, false, false, &offset, 1.0, 1, 0),
               CudaError);
  EXPECT_NO_THROW(makeAttentionParams({1, 1, 4, 256}, {1, 1, 4, 256},
                                      {1, 1, 4, 256}, nullptr, false, false,
                                      nullptr, 1.0, 1, 0));
}

TEST(AttentionHostTest, BlocksCoverEveryRowOnce) {
  // Every (batch, head, query) is owned by exactly one block per split, and
  // tiles hold consecutive queries.
  AttentionParams p = makeAttentionParams({3, 12, 7, 16}, {3, 4, 50, 16},
                                          {3, 4, 50, 16}, nullptr, false, true,
                                          nullptr, 1.0, 132, size_t(1) << 20);
  std::vector<int> seen(p.rows() * p.splits, 0);
  for (int64_t block = 0; block < p.blocks(); ++block) {
    int64_t batchKv, split, tile;
    p.blockOf(block, batchKv, split, tile);
    int64_t b = batchKv / p.kvHeads, kvh = batchKv % p.kvHeads;
    for (int64_t r = tile * kAttnBlockRows;
         r < std::min<int64_t>((tile + 1) * kAttnBlockRows, p.rowsPerKvHead());
         ++r) {
      int64_t h = p.headOf(kvh, r);
      EXPECT_EQ(h / p.group, kvh);
      ++seen[split * p.rows() + p.rowIndex(b, h, p.queryOf(r))];
    }
  }
  for (int count : seen)
    EXPECT_EQ(count, 1);
}

TEST(AttentionHostTest, OnlineSoftmaxRow) {
  float inf = std::numeric_limits<float>::infinity();
  float weights[3];
  OnlineSoftmaxRow row;
  // Only hidden keys so far: nothing changes, weights 0.
  float hidden[2] = {-inf, -inf};
  EXPECT_EQ(row.update(hidden, 2, weights), 1.f);
  EXPECT_EQ(weights[0], 0.f);
  EXPECT_EQ(row.lse(), -inf);
  EXPECT_EQ(row.outputScale(), 0.f);
  float first[3] = {1.f, -inf, 2.f};
  row.update(first, 3, weights);
  EXPECT_FLOAT_EQ(weights[0], std::exp(-1.f));
  EXPECT_EQ(weights[1], 0.f);
  EXPECT_FLOAT_EQ(weights[2], 1.f);
  float second[1] = {3.f};
  float alpha = row.update(second, 1, weights);
  EXPECT_FLOAT_EQ(alpha, std::exp(-1.f));
  EXPECT_FLOAT_EQ(row.lse(),
                  std::log(std::exp(1.f) + std::exp(2.f) + std::exp(3.f)));
  EXPECT_FLOAT_EQ(row.outputScale(),
                  1.f / (std::exp(-2.f) + std::exp(-1.f) + 1.f));
  // An empty tile changes nothing.
  EXPECT_EQ(row.update(second, 0, weights), 1.f);
  EXPECT_FLOAT_EQ(row.lse(),
                  std::log(std::exp(1.f) + std::exp(2.f) + std::exp(3.f)));
}

template <typename T> void checkMerge(int parts, uint32_t seed) {
  SCOPED_TRACE(std::string(toString(dtypeOf<T>())) + " parts " +
               std::to_string(parts));
  std::mt19937 rng(seed);
  DType dtype = dtypeOf<T>();
  std::vector<int64_t> shape{2, 3, 5, 12}, lseShape{2, 3, 5};
  std::vector<ref::Tensor> outs, lses;
  std::uniform_int_distribution<int> coin(0, 3);
  std::uniform_real_distribution<double> dist(-3, 3);
  for (int n = 0; n < parts; ++n) {
    outs.push_back(randomTensor(dtype, shape, rng));
    std::vector<double> values(30);
    for (int64_t row = 0; row < 30; ++row)
      // Row 0: no part saw a key; row 1: only the last one did.
      values[row] = row == 0 || (row == 1 && n + 1 < parts) || coin(rng) == 0
                        ? -kInf
                        : dist(rng);
    lses.push_back(ref::Tensor::ofFloats(DType::F32, lseShape, values));
  }
  ref::AttentionResult want = ref::attentionMerge(outs, lses);

  std::vector<std::vector<T>> outHost;
  std::vector<std::vector<float>> lseHost;
  for (int n = 0; n < parts; ++n) {
    outHost.push_back(toHost<T>(outs[n]));
    lseHost.push_back(toHost<float>(lses[n]));
  }
  AttentionMergeOp<T, T> op;
  op.parts = parts;
  op.dv = 12;
  op.width = 12;
  for (int n = 0; n < parts; ++n) {
    op.outs[n] = outHost[n].data();
    op.lses[n] = lseHost[n].data();
  }
  std::vector<T> out(want.out.f.size(), fromFloat<T>(12345.f));
  std::vector<float> lse(want.lse.f.size(), 12345.f);
  op.out = out.data();
  op.lse = lse.data();
  runOnHost(op, 30 * op.width);
  expectClose(out, want.out, "merged output");
  expectClose(lse, want.lse, "merged lse");
}

TEST(AttentionHostTest, MergeMatchesReference) {
  for (int parts : {2, 3, 7}) {
    checkMerge<float>(parts, 10 + parts);
    checkMerge<f16>(parts, 20 + parts);
    checkMerge<bf16>(parts, 30 + parts);
  }
}

TEST(AttentionHostTest, MergeOfEmptyFeatureRowsWritesLse) {
  // Dv = 0: still one element per row, so the lse is written.
  std::vector<float> a{0.5f, -INFINITY}, b{1.5f, -INFINITY}, lse(2, 7.f);
  AttentionMergeOp<float, float> op;
  op.parts = 2;
  op.dv = 0;
  op.width = 1;
  op.outs[0] = nullptr;
  op.outs[1] = nullptr;
  op.lses[0] = a.data();
  op.lses[1] = b.data();
  op.out = nullptr;
  op.lse = lse.data();
  runOnHost(op, 2 * op.width);
  EXPECT_FLOAT_EQ(lse[0], std::log(std::exp(0.5f) + std::exp(1.5f)));
  EXPECT_EQ(lse[1], -INFINITY);
}

} // namespace
