//===- Attention.cu - fused attention kernels -----------------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// attention, attention_partial and attention_merge. One fused kernel in the
// manner of flash attention: the score matrix is never stored. A block takes
// kAttnBlockRows queries of one (batch, key/value head) (all heads of a GQA
// group, see AttentionParams) and walks the keys in tiles of 32, staged as
// float through shared memory. Each warp owns kAttnRowsPerWarp query rows.
// Scoring, lane j computes the dot products of key j of the tile with the
// warp's rows (the Q tile is read as broadcast float4s; the K tile's rows are
// padded to an odd stride, so no bank conflicts); the row's max and sum of
// weights over the tile are two warp-shuffle reductions
// (OnlineSoftmaxRow). Accumulating weights * V, lanes split the Dv features
// (each keeps Dv / 32 per row in registers) and the weights are broadcast
// from the lane that computed them. The output and lse are written at the
// end. Causally, key tiles past a block's last query are never loaded, and a
// warp skips tiles past its own last query.
//
// A grid with fewer blocks than twice the SMs (decoding: Sq = 1) also splits
// the keys over blocks (split-KV): each writes a float partial output and
// lse to the stream's workspace and a pointwise merge (the one of
// attention_merge) combines them. All math runs in float.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/AttentionOps.cuh"
#include "runtime/cuda/kernels/KernelTables.h"

#include <atomic>
#include <climits>
#include <cstdint>
#include <string>

namespace braid::rt::cuda {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warpMax(float x) {
  for (int offset = 16; offset > 0; offset >>= 1)
    x = fmaxf(x, __shfl_xor_sync(kFullMask, x, offset));
  return x;
}

/// A butterfly: every lane ends with the same sum (a + b == b + a in
/// float), so the per-lane copies of OnlineSoftmaxRow stay identical.
__device__ __forceinline__ float warpSum(float x) {
  for (int offset = 16; offset > 0; offset >>= 1)
    x += __shfl_xor_sync(kFullMask, x, offset);
  return x;
}

/// `kVec` = ceil(Dv / 32) output values per lane and row (1, 2, 4 or 8).
/// Large heads get the registers of 2 blocks an SM (their shared memory
/// allows about that many anyway), others of 4, without spilling the
/// accumulators.
template <typename T, int kVec>
__global__ void __launch_bounds__(kAttnThreads, kVec == 8 ? 2 : 4)
    attentionKernel(AttentionParams p, const T *__restrict__ q,
                    const T *__restrict__ k, const T *__restrict__ v,
                    const void *__restrict__ mask, T *__restrict__ out,
                    float *__restrict__ lse, float *__restrict__ workspace) {
  constexpr int kRows = kAttnRowsPerWarp;
  extern __shared__ float4 sharedRaw[]; // float4: the Q tile is read so.
  const int d = p.d, dv = p.dv;
  const int dp = attnPaddedDim(d), keyStride = attnKeyStride(d);
  float *qTile = reinterpret_cast<float *>(sharedRaw);
  float *kTile = qTile + kAttnBlockRows * dp;
  float *vTile = kTile + kAttnBlockKeys * keyStride;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  int64_t batchKv, split, tile;
  p.blockOf(blockIdx.x, batchKv, split, tile);
  const int64_t b = batchKv / p.kvHeads, kvh = batchKv % p.kvHeads;
  const int64_t first = tile * kAttnBlockRows;
  const int rowsHere = static_cast<int>(
      p.rowsPerKvHead() - first < kAttnBlockRows ? p.rowsPerKvHead() - first
                                                 : kAttnBlockRows);
  int64_t begin, end;
  p.keyRange(split, p.queryOf(first + rowsHere - 1), begin, end);

  // The Q tile, zero-padded to dp columns and kAttnBlockRows rows.
  for (int e = tid; e < kAttnBlockRows * dp; e += kAttnThreads) {
    int r = e / dp, c = e - r * dp;
    float x = 0.f;
    if (r < rowsHere && c < d) {
      int64_t row =
          p.rowIndex(b, p.headOf(kvh, first + r), p.queryOf(first + r));
      x = toFloat(q[row * d + c]);
    }
    qTile[e] = x;
  }

  // This warp's rows: query index and head, or query -1 past the last row.
  int64_t query[kRows];
  int head[kRows];
  int64_t warpLastQuery = -1;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    int local = warp * kRows + r;
    query[r] = -1;
    head[r] = 0;
    if (local < rowsHere) {
      query[r] = p.queryOf(first + local);
      head[r] = static_cast<int>(p.headOf(kvh, first + local));
      warpLastQuery = query[r]; // Queries grow with the row.
    }
  }

  OnlineSoftmaxRow state[kRows];
  float acc[kRows][kVec];
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int t = 0; t < kVec; ++t)
      acc[r][t] = 0.f;

  const T *kBase = k + batchKv * p.sk * d;
  const T *vBase = v + batchKv * p.sk * dv;
  const float *qWarp = qTile + warp * kRows * dp;
  for (int64_t kt = begin; kt < end; kt += kAttnBlockKeys) {
    const int nk =
        static_cast<int>(end - kt < kAttnBlockKeys ? end - kt : kAttnBlockKeys);
    __syncthreads(); // The previous tile is consumed (first: Q is written).
    for (int e = tid; e < nk * dp; e += kAttnThreads) {
      int j = e / dp, c = e - j * dp;
      kTile[j * keyStride + c] = c < d ? toFloat(kBase[(kt + j) * d + c]) : 0.f;
    }
    const T *vSource = vBase + kt * dv; // nk rows, contiguous.
    for (int e = tid; e < nk * dv; e += kAttnThreads)
      vTile[e] = toFloat(vSource[e]);
    __syncthreads();
    // Warp-uniform: no row of this warp sees a key of this tile.
    if (warpLastQuery < 0 || (p.causal && kt > warpLastQuery + p.causalOffset))
      continue;

    // Scores: lane j against key kt + j.
    float dot[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      dot[r] = 0.f;
    if (lane < nk) {
      const float *keyRow = kTile + lane * keyStride;
      for (int c = 0; c < dp; c += 4) {
        float k0 = keyRow[c], k1 = keyRow[c + 1], k2 = keyRow[c + 2],
              k3 = keyRow[c + 3];
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          float4 qv = *reinterpret_cast<const float4 *>(qWarp + r * dp + c);
          dot[r] += qv.x * k0;
          dot[r] += qv.y * k1;
          dot[r] += qv.z * k2;
          dot[r] += qv.w * k3;
        }
      }
    }
    float weight[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float s = lane < nk && query[r] >= 0
                    ? p.score<T>(dot[r], mask, b, head[r], query[r], kt + lane)
                    : kAttnNegInf;
      float alpha = state[r].rescale(warpMax(s));
      weight[r] = state[r].weight(s);
      state[r].accumulate(warpSum(weight[r]));
#pragma unroll
      for (int t = 0; t < kVec; ++t)
        acc[r][t] *= alpha;
    }

    // acc += weights * V: lane owns features lane + 32 t.
    for (int j = 0; j < nk; ++j) {
      float value[kVec];
#pragma unroll
      for (int t = 0; t < kVec; ++t) {
        int c = lane + 32 * t;
        value[t] = c < dv ? vTile[j * dv + c] : 0.f;
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float w = __shfl_sync(kFullMask, weight[r], j);
#pragma unroll
        for (int t = 0; t < kVec; ++t)
          acc[r][t] += w * value[t];
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (query[r] < 0)
      continue;
    int64_t row = p.rowIndex(b, head[r], query[r]);
    float factor = state[r].outputScale();
    if (p.splits == 1) {
#pragma unroll
      for (int t = 0; t < kVec; ++t) {
        int c = lane + 32 * t;
        if (c < dv)
          out[row * dv + c] = fromFloat<T>(acc[r][t] * factor);
      }
      if (lse && lane == 0)
        lse[row] = state[r].lse();
    } else {
      int64_t at = split * p.rows() + row;
#pragma unroll
      for (int t = 0; t < kVec; ++t) {
        int c = lane + 32 * t;
        if (c < dv)
          workspace[at * dv + c] = acc[r][t] * factor;
      }
      if (lane == 0)
        workspace[p.splits * p.rows() * dv + at] = state[r].lse();
    }
  }
}

template <typename T, int kVec>
void launchAttentionKernel(const AttentionParams &p, const T *q, const T *k,
                           const T *v, const void *mask, T *out, float *lse,
                           float *workspace, const CudaContext &ctx) {
  size_t shared = attentionSharedBytes(p.d, p.dv);
  auto *kernel = attentionKernel<T, kVec>;
  if (shared > 48 * 1024) {
    if (shared > ctx.maxSharedPerBlock)
      throw CudaError("attention: D = " + std::to_string(p.d) + ", Dv = " +
                      std::to_string(p.dv) + " need " + std::to_string(shared) +
                      " bytes of shared memory a block, the device allows " +
                      std::to_string(ctx.maxSharedPerBlock));
    // Once per kernel instance, raised straight to the device's opt-in
    // limit: cudaFuncSetAttribute may synchronize, which a stream capture
    // must not see (the executor's eager first run sets it before any
    // capture).
    static std::atomic<bool> raised{false};
    if (!raised.load()) {
      check(cudaFuncSetAttribute(
                kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                static_cast<int>(ctx.maxSharedPerBlock)),
            "cudaFuncSetAttribute(attention)");
      raised.store(true);
    }
  }
  kernel<<<static_cast<unsigned>(p.blocks()), kAttnThreads, shared,
           ctx.stream>>>(p, q, k, v, mask, out, lse, workspace);
  checkLaunch("attention");
}

/// attention (no lse) and attention_partial (with lse).
void runAttentionImpl(const KernelArgs &args, bool withLse) {
  CudaContext &ctx = contextOf(args);
  KernelAttrs attrs = args.attrs();
  const TensorView &q = args.inputs[0], &k = args.inputs[1],
                   &v = args.inputs[2];
  const TensorView *mask = args.inputs.size() == 4 ? &args.inputs[3] : nullptr;
  if (mask && mask->dtype != DType::I1 && mask->dtype != q.dtype)
    throw CudaError(args.op() + ": the mask must be i1 or " +
                    std::string(toString(q.dtype)) + ", got " +
                    std::string(toString(mask->dtype)));
  int64_t offsetValue = 0;
  const int64_t *offset = nullptr;
  if (!args.indices.empty()) {
    offsetValue = args.indices[0];
    offset = &offsetValue;
  }
  AttentionParams p = makeAttentionParams(
      q.shape, k.shape, v.shape, mask ? &mask->shape : nullptr,
      mask && mask->dtype == DType::I1, attrs.getBool("causal"), offset,
      attrs.getFloat("scale"), ctx.smCount, ctx.workspaceBytes);
  if (p.rows() == 0)
    return;
  if (p.blocks() > INT_MAX)
    throw CudaError(args.op() + ": " + std::to_string(p.blocks()) +
                    " blocks are too many for one launch");
  float *lse = withLse ? args.outputs[1].as<float>() : nullptr;
  float *workspace = nullptr;
  if (p.splits > 1) {
    // makeAttentionParams only splits when the workspace holds the parts.
    if (attentionSplitBytes(p) > ctx.workspaceBytes)
      throw CudaError(args.op() + ": the workspace is too small");
    workspace = static_cast<float *>(ctx.workspace);
  }
  const void *maskData = mask ? mask->data : nullptr;
  dispatchFloat(q.dtype, args.op().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const T *qd = q.as<const T>(), *kd = k.as<const T>(), *vd = v.as<const T>();
    T *out = args.outputs[0].as<T>();
    if (p.dv <= 32)
      launchAttentionKernel<T, 1>(p, qd, kd, vd, maskData, out, lse, workspace,
                                  ctx);
    else if (p.dv <= 64)
      launchAttentionKernel<T, 2>(p, qd, kd, vd, maskData, out, lse, workspace,
                                  ctx);
    else if (p.dv <= 128)
      launchAttentionKernel<T, 4>(p, qd, kd, vd, maskData, out, lse, workspace,
                                  ctx);
    else
      launchAttentionKernel<T, 8>(p, qd, kd, vd, maskData, out, lse, workspace,
                                  ctx);
    if (p.splits > 1) {
      AttentionMergeOp<float, T> merge = splitMergeOp(p, workspace, out, lse);
      launchPointwise(merge, p.rows() * merge.width, ctx, "attention (merge)");
    }
  });
}

void runAttention(const KernelArgs &args) { runAttentionImpl(args, false); }

void runAttentionPartial(const KernelArgs &args) {
  runAttentionImpl(args, true);
}

/// Inputs: the partial outputs, then their lses in the same order.
void runAttentionMerge(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  size_t parts = args.inputs.size() / 2;
  if (parts > static_cast<size_t>(kAttnMaxMergeParts))
    throw CudaError("attention_merge: " + std::to_string(parts) +
                    " partial results are above the CUDA kernel's limit of " +
                    std::to_string(kAttnMaxMergeParts));
  const TensorView &first = args.inputs[0];
  int64_t dv = first.shape.back();
  int64_t rows = args.outputs[1].numElements();
  if (rows == 0)
    return;
  dispatchFloat(first.dtype, "attention_merge", [&](auto tag) {
    using T = decltype(tag);
    AttentionMergeOp<T, T> op;
    op.parts = static_cast<int>(parts);
    op.dv = dv;
    op.width = dv > 0 ? dv : 1;
    for (size_t n = 0; n < parts; ++n) {
      op.outs[n] = args.inputs[n].as<const T>();
      op.lses[n] = args.inputs[parts + n].as<const float>();
    }
    op.out = args.outputs[0].as<T>();
    op.lse = args.outputs[1].as<float>();
    launchPointwise(op, rows * op.width, ctx, "attention_merge");
  });
}

} // namespace

void addAttentionKernels(KernelTable &table) {
  table["attention"] = runAttention;
  table["attention_partial"] = runAttentionPartial;
  table["attention_merge"] = runAttentionMerge;
}

} // namespace braid::rt::cuda
