//===- AttentionOps.cuh - the math of the attention kernels ----*- CUDA -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The pieces of the fused attention kernel (Attention.cu) that do arithmetic
// or index math, as __host__ __device__ code so that the unit tests run them
// on the host against the reference kernels:
//
//  - AttentionParams: shapes, the causal limit, mask addressing, the masked
//    score of one (query, key) pair, and how queries are grouped into blocks.
//  - OnlineSoftmaxRow: the running max / denominator of one query row,
//    updated tile by tile (flash attention's online softmax).
//  - AttentionMergeOp: the pointwise merge of partial results over disjoint
//    key blocks (attention_merge, and the kernel's own split-KV combine).
//  - attentionOnHost: the kernel's host twin, the same block decomposition
//    and the same per-row routine run serially, for the tests.
//
// Semantics are those of ref::attention: q [B,H,Sq,D], k [B,Hkv,Sk,D],
// v [B,Hkv,Sk,Dv]; query head h reads key/value head h / (H / Hkv); the mask
// broadcasts to [B,H,Sq,Sk], i1 keeps where true, a float mask is added to
// the scaled score; with `causal` query i sees key j iff j <= i + offset. A
// row that sees no key (or only scores of -inf) is zero with lse = -inf.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_KERNELS_ATTENTIONOPS_CUH
#define BRAID_RUNTIME_CUDA_KERNELS_ATTENTIONOPS_CUH

#include "runtime/cuda/kernels/CudaCommon.cuh"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt::cuda {

//===----------------------------------------------------------------------===//
// Tiling
//===----------------------------------------------------------------------===//

/// Warps of a block; each owns kAttnRowsPerWarp query rows, so one K/V tile
/// staged in shared memory serves kAttnBlockRows queries.
constexpr int kAttnWarps = 4;
constexpr int kAttnRowsPerWarp = 4;
constexpr int kAttnBlockRows = kAttnWarps * kAttnRowsPerWarp;
constexpr int kAttnThreads = kAttnWarps * 32;
/// Keys per tile: one per lane when scoring.
constexpr int kAttnBlockKeys = 32;
/// The largest D and Dv: a lane keeps Dv / 32 output values per row in
/// registers.
constexpr int kAttnMaxHeadDim = 256;
/// The most partial results one merge reads (pointer arrays passed by value).
constexpr int kAttnMaxMergeParts = 64;
/// A split-KV block handles at least this many key tiles.
constexpr int kAttnMinTilesPerSplit = 4;

constexpr float kAttnNegInf = -INFINITY;

enum class AttnMask : int { None, Bool, Float };

/// The row stride of the K tile in shared memory, in floats: D rounded up to
/// a multiple of 4 (the Q tile is read as float4) plus one, odd, so that lane
/// j reading element c of key row j hits bank (j * stride + c) % 32, all
/// distinct.
BRAID_HD int attnPaddedDim(int d) { return (d + 3) / 4 * 4; }
BRAID_HD int attnKeyStride(int d) { return attnPaddedDim(d) + 1; }

//===----------------------------------------------------------------------===//
// Online softmax of one query row
//===----------------------------------------------------------------------===//

/// The running state of softmax over the keys seen so far: `m` the largest
/// score, `l` the sum of exp(score - m). Per tile: `rescale` with the tile's
/// largest score (returns the factor for the output accumulated so far),
/// `weight` of each score, `accumulate` the tile's sum of weights. Masked
/// keys have score -inf and weight 0; as long as every score seen is -inf,
/// m stays -inf, l stays 0 and the row ends as zeros with lse -inf (exactly
/// the reference's convention).
struct OnlineSoftmaxRow {
  float m = kAttnNegInf;
  float l = 0.f;

  BRAID_HD float rescale(float tileMax) {
    float next = fmaxf(m, tileMax);
    if (next == kAttnNegInf)
      return 1.f; // Nothing seen yet; the accumulator is still zero.
    // m == -inf gives exp(-inf) = 0: nothing accumulated so far.
    float alpha = expf(m - next);
    m = next;
    l *= alpha;
    return alpha;
  }
  BRAID_HD float weight(float score) const {
    // With m == -inf every score so far, this one included, is -inf.
    return m == kAttnNegInf ? 0.f : expf(score - m);
  }
  BRAID_HD void accumulate(float tileSum) { l += tileSum; }

  /// Factor of the accumulated sum of weight * value giving the output.
  BRAID_HD float outputScale() const { return l > 0.f ? 1.f / l : 0.f; }
  /// Natural log of the softmax denominator; -inf for a row that saw no key.
  BRAID_HD float lse() const { return l > 0.f ? m + logf(l) : kAttnNegInf; }

  /// The serial form of one tile update (the kernel does the max and the sum
  /// with warp shuffles): writes the weights of `n` scores to `weights` and
  /// returns the factor for the previous output.
  BRAID_HD float update(const float *scores, int n, float *weights) {
    float tileMax = kAttnNegInf;
    for (int j = 0; j < n; ++j)
      tileMax = fmaxf(tileMax, scores[j]);
    float alpha = rescale(tileMax);
    float sum = 0.f;
    for (int j = 0; j < n; ++j) {
      weights[j] = weight(scores[j]);
      sum += weights[j];
    }
    accumulate(sum);
    return alpha;
  }
};

//===----------------------------------------------------------------------===//
// Shapes, masking and the block decomposition
//===----------------------------------------------------------------------===//

/// Everything the kernel needs besides the pointers, by value.
///
/// Blocks: the queries of one (batch, key/value head) are numbered
/// r = i * group + g (query i of head kvh * group + g), query-major, and cut
/// into tiles of kAttnBlockRows. So one block reads each K/V tile once for
/// all heads of a GQA group (decoding: Sq = 1, the whole group in one
/// block), and the queries of a tile are consecutive, which bounds its
/// causal key range. With `splits` > 1 each block also takes one key range
/// of `splitKeys` keys (split-KV, for grids too small to fill the GPU); the
/// partial results go to the workspace and are merged afterwards.
struct AttentionParams {
  int64_t batch = 0, heads = 0, kvHeads = 1, group = 1;
  int64_t sq = 0, sk = 0;
  int d = 0, dv = 0;
  bool causal = false;
  int64_t causalOffset = 0;
  float scale = 1.f;
  AttnMask mask = AttnMask::None;
  /// Element strides of the mask read as [B, H, Sq, Sk] (0: broadcast).
  int64_t maskStride[4] = {};
  int64_t tilesPerHead = 0;
  int64_t splits = 1;
  int64_t splitKeys = 0;

  /// Rows of lse: B * H * Sq.
  BRAID_HD int64_t rows() const { return batch * heads * sq; }
  BRAID_HD int64_t rowsPerKvHead() const { return group * sq; }
  BRAID_HD int64_t blocks() const {
    return batch * kvHeads * splits * tilesPerHead;
  }

  /// Block `block` as (batch * kvHeads + kvh, split, tile). Tiles run in
  /// reverse so that, causally, the longest tiles start first.
  BRAID_HD void blockOf(int64_t block, int64_t &batchKv, int64_t &split,
                        int64_t &tile) const {
    int64_t t = block % tilesPerHead;
    int64_t rest = block / tilesPerHead;
    split = rest % splits;
    batchKv = rest / splits;
    tile = tilesPerHead - 1 - t;
  }
  /// Query index and head of row r of key/value head kvh.
  BRAID_HD int64_t queryOf(int64_t r) const { return r / group; }
  BRAID_HD int64_t headOf(int64_t kvh, int64_t r) const {
    return kvh * group + r % group;
  }
  /// The row of lse (and of the output, times Dv) of query i of head h.
  BRAID_HD int64_t rowIndex(int64_t b, int64_t h, int64_t i) const {
    return (b * heads + h) * sq + i;
  }

  /// Keys [0, limit) that a query <= `query` may see.
  BRAID_HD int64_t keyLimit(int64_t query) const {
    if (!causal)
      return sk;
    int64_t limit = query + causalOffset + 1;
    return limit < 0 ? 0 : limit > sk ? sk : limit;
  }
  /// Keys [begin, end) of one split of a tile whose queries are <= `query`.
  BRAID_HD void keyRange(int64_t split, int64_t query, int64_t &begin,
                         int64_t &end) const {
    int64_t limit = keyLimit(query);
    begin = split * splitKeys;
    end = begin + splitKeys < limit ? begin + splitKeys : limit;
  }

  /// The score of query i (head h) against key j given q . k, or -inf
  /// where the key is hidden (causally or by a boolean mask). `maskData` is
  /// the mask's elements (uint8 for i1, else T).
  template <typename T>
  BRAID_HD float score(float dot, const void *maskData, int64_t b, int64_t h,
                       int64_t i, int64_t j) const {
    if (causal && j > i + causalOffset)
      return kAttnNegInf;
    float s = scale * dot;
    if (mask != AttnMask::None) {
      int64_t at = b * maskStride[0] + h * maskStride[1] + i * maskStride[2] +
                   j * maskStride[3];
      if (mask == AttnMask::Bool) {
        if (static_cast<const uint8_t *>(maskData)[at] == 0)
          return kAttnNegInf;
      } else {
        s += toFloat(static_cast<const T *>(maskData)[at]);
      }
    }
    return s;
  }
};

/// Workspace bytes of the split-KV partial results: a float output row and
/// an lse per (split, row).
inline size_t attentionSplitBytes(const AttentionParams &p) {
  return static_cast<size_t>(p.splits) * static_cast<size_t>(p.rows()) *
         (static_cast<size_t>(p.dv) + 1) * sizeof(float);
}

/// Shared memory of one block: the Q tile, the K tile (padded rows), the V
/// tile, all as float.
inline size_t attentionSharedBytes(int d, int dv) {
  return (static_cast<size_t>(kAttnBlockRows) * attnPaddedDim(d) +
          static_cast<size_t>(kAttnBlockKeys) * attnKeyStride(d) +
          static_cast<size_t>(kAttnBlockKeys) * dv) *
         sizeof(float);
}

/// The parameters of one attention call; shapes are those checkAttention
/// accepted. Splits the keys when the grid would have fewer blocks than
/// twice the SMs and the workspace holds the partial results. Throws
/// CudaError for what the kernel cannot run (head sizes above 256).
inline AttentionParams makeAttentionParams(
    const std::vector<int64_t> &q, const std::vector<int64_t> &k,
    const std::vector<int64_t> &v, const std::vector<int64_t> *maskShape,
    bool maskIsBool, bool causal, const int64_t *offset, double scale,
    int smCount, size_t workspaceBytes) {
  AttentionParams p;
  p.batch = q[0];
  p.heads = q[1];
  p.sq = q[2];
  p.kvHeads = k[1];
  p.sk = k[2];
  if (q[3] > kAttnMaxHeadDim || v[3] > kAttnMaxHeadDim)
    throw CudaError("attention: head sizes D = " + std::to_string(q[3]) +
                    ", Dv = " + std::to_string(v[3]) +
                    " are above the CUDA kernel's limit of " +
                    std::to_string(kAttnMaxHeadDim));
  if (p.kvHeads < 1 || p.heads % p.kvHeads != 0)
    throw CudaError("attention: query heads are not a multiple of key/value "
                    "heads");
  if (offset && !causal)
    throw CudaError("attention: an offset needs causal");
  p.d = static_cast<int>(q[3]);
  p.dv = static_cast<int>(v[3]);
  p.group = p.heads / p.kvHeads;
  p.causal = causal;
  p.causalOffset = offset ? *offset : p.sk - p.sq;
  p.scale = static_cast<float>(scale);
  if (maskShape) {
    p.mask = maskIsBool ? AttnMask::Bool : AttnMask::Float;
    Dims dims = broadcastDims(*maskShape, {p.batch, p.heads, p.sq, p.sk});
    for (int i = 0; i < 4; ++i)
      p.maskStride[i] = dims.stride[i];
  }
  p.tilesPerHead = ceilDiv(p.rowsPerKvHead(), kAttnBlockRows);

  // Split-KV: only the keys some query sees count.
  int64_t keys = p.keyLimit(p.sq - 1);
  int64_t keyTiles = ceilDiv(keys, kAttnBlockKeys);
  int64_t blocks = p.batch * p.kvHeads * p.tilesPerHead;
  int64_t target = 2 * static_cast<int64_t>(smCount);
  int64_t splits = 1;
  if (blocks > 0 && blocks < target && p.rows() > 0) {
    splits = ceilDiv(target, blocks);
    int64_t byKeys = keyTiles / kAttnMinTilesPerSplit;
    if (splits > byKeys)
      splits = byKeys;
    if (splits > kAttnMaxMergeParts)
      splits = kAttnMaxMergeParts;
    size_t perSplit = static_cast<size_t>(p.rows()) *
                      (static_cast<size_t>(p.dv) + 1) * sizeof(float);
    int64_t fits = static_cast<int64_t>(workspaceBytes / perSplit);
    if (splits > fits)
      splits = fits;
  }
  if (splits > 1) {
    // Whole tiles per split, and no split left without keys.
    p.splitKeys = ceilDiv(keyTiles, splits) * kAttnBlockKeys;
    p.splits = ceilDiv(keys, p.splitKeys);
  } else {
    p.splits = 1;
    p.splitKeys = p.sk;
  }
  return p;
}

//===----------------------------------------------------------------------===//
// Merging partial results
//===----------------------------------------------------------------------===//

/// One element (row, c) of the merge of `parts` partial results over
/// disjoint key blocks: out = sum_n exp(lse_n - lse) out_n with
/// lse = log sum_n exp(lse_n). A part with lse -inf saw no key and adds
/// nothing (its output may be anything); a row no part saw is zero with lse
/// -inf. Element c == 0 of a row writes the row's lse (when `lse` is set).
/// Run over rows * width elements, width = max(dv, 1) so that rows of an
/// empty Dv still get their lse.
template <typename TIn, typename TOut> struct AttentionMergeOp {
  const TIn *outs[kAttnMaxMergeParts] = {};
  const float *lses[kAttnMaxMergeParts] = {};
  int parts = 0;
  int64_t dv = 0;
  int64_t width = 1;
  TOut *out = nullptr;
  float *lse = nullptr;

  BRAID_HD void operator()(int64_t e) const {
    int64_t row = e / width, c = e - row * width;
    float maximum = kAttnNegInf;
    for (int n = 0; n < parts; ++n)
      maximum = fmaxf(maximum, lses[n][row]);
    if (maximum == kAttnNegInf) {
      if (c < dv)
        out[row * dv + c] = fromFloat<TOut>(0.f);
      if (c == 0 && lse)
        lse[row] = kAttnNegInf;
      return;
    }
    float sum = 0.f;
    for (int n = 0; n < parts; ++n)
      sum += expf(lses[n][row] - maximum); // exp(-inf) = 0.
    float total = maximum + logf(sum);
    if (c < dv) {
      float acc = 0.f;
      for (int n = 0; n < parts; ++n) {
        float part = lses[n][row];
        if (part == kAttnNegInf)
          continue;
        acc += expf(part - total) * toFloat(outs[n][row * dv + c]);
      }
      out[row * dv + c] = fromFloat<TOut>(acc);
    }
    if (c == 0 && lse)
      lse[row] = total;
  }
};

/// The merge of the split-KV partial results in `workspace` (laid out as in
/// attentionOnHost / the kernel) into the final output.
template <typename T>
AttentionMergeOp<float, T> splitMergeOp(const AttentionParams &p,
                                        const float *workspace, T *out,
                                        float *lse) {
  AttentionMergeOp<float, T> op;
  op.parts = static_cast<int>(p.splits);
  op.dv = p.dv;
  op.width = p.dv > 0 ? p.dv : 1;
  int64_t rows = p.rows();
  const float *lseBase = workspace + p.splits * rows * p.dv;
  for (int64_t s = 0; s < p.splits; ++s) {
    op.outs[s] = workspace + s * rows * p.dv;
    op.lses[s] = lseBase + s * rows;
  }
  op.out = out;
  op.lse = lse;
  return op;
}

//===----------------------------------------------------------------------===//
// The kernel's host twin
//===----------------------------------------------------------------------===//

/// Runs what the kernel runs, block by block and row by row on the host:
/// the same decomposition, key ranges, scores (float dot products over the
/// zero-padded D in the kernel's order), online softmax per key tile and
/// epilogue. With p.splits == 1 writes `out` and (if set) `lse`; otherwise
/// the float partial results to `workspace` (attentionSplitBytes), to be
/// merged with splitMergeOp. Only the order of the warp-wide max and sum
/// differs from the GPU.
template <typename T>
void attentionOnHost(const AttentionParams &p, const T *q, const T *k,
                     const T *v, const void *mask, T *out, float *lse,
                     float *workspace) {
  int dp = attnPaddedDim(p.d);
  std::vector<float> query(dp), scores(kAttnBlockKeys), weights(kAttnBlockKeys),
      acc(p.dv > 0 ? p.dv : 1);
  for (int64_t block = 0; block < p.blocks(); ++block) {
    int64_t batchKv, split, tile;
    p.blockOf(block, batchKv, split, tile);
    int64_t b = batchKv / p.kvHeads, kvh = batchKv % p.kvHeads;
    int64_t first = tile * kAttnBlockRows;
    int64_t last = first + kAttnBlockRows < p.rowsPerKvHead()
                       ? first + kAttnBlockRows - 1
                       : p.rowsPerKvHead() - 1;
    int64_t begin, end;
    p.keyRange(split, p.queryOf(last), begin, end);
    const T *kBase = k + (b * p.kvHeads + kvh) * p.sk * p.d;
    const T *vBase = v + (b * p.kvHeads + kvh) * p.sk * p.dv;
    for (int64_t r = first; r <= last; ++r) {
      int64_t i = p.queryOf(r), h = p.headOf(kvh, r);
      int64_t row = p.rowIndex(b, h, i);
      for (int c = 0; c < dp; ++c)
        query[c] = c < p.d ? toFloat(q[row * p.d + c]) : 0.f;
      OnlineSoftmaxRow state;
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t kt = begin; kt < end; kt += kAttnBlockKeys) {
        int nk = static_cast<int>(end - kt < kAttnBlockKeys ? end - kt
                                                            : kAttnBlockKeys);
        for (int j = 0; j < nk; ++j) {
          float dot = 0.f;
          for (int c = 0; c < p.d; ++c)
            dot += query[c] * toFloat(kBase[(kt + j) * p.d + c]);
          scores[j] = p.score<T>(dot, mask, b, h, i, kt + j);
        }
        float alpha = state.update(scores.data(), nk, weights.data());
        for (int c = 0; c < p.dv; ++c) {
          acc[c] *= alpha;
          for (int j = 0; j < nk; ++j)
            acc[c] += weights[j] * toFloat(vBase[(kt + j) * p.dv + c]);
        }
      }
      float factor = state.outputScale();
      if (p.splits == 1) {
        for (int c = 0; c < p.dv; ++c)
          out[row * p.dv + c] = fromFloat<T>(acc[c] * factor);
        if (lse)
          lse[row] = state.lse();
      } else {
        int64_t at = split * p.rows() + row;
        for (int c = 0; c < p.dv; ++c)
          workspace[at * p.dv + c] = acc[c] * factor;
        workspace[p.splits * p.rows() * p.dv + at] = state.lse();
      }
    }
  }
}

} // namespace braid::rt::cuda

#endif // BRAID_RUNTIME_CUDA_KERNELS_ATTENTIONOPS_CUH
