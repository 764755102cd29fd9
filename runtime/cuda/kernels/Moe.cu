//===- Moe.cu - router_topk, moe_dispatch, moe_combine, cross_entropy -----===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The mixture-of-experts ops and the loss. Every result is deterministic: no
// float atomics anywhere, every sum in a fixed order.
//
// - router_topk: one thread per token for fewer than 32 experts, else one
//   warp per token (max, exp-sum and k arg-max rounds by xor butterflies).
// - moe_dispatch / moe_combine: one block per expert scans the expert ids in
//   order (shuffle prefix counts, one chunk at a time) to give every
//   (token, choice) pair its slot in the reference's token-then-choice
//   order, stopping once the expert is full; a pointwise gather then writes
//   every output element once (dispatch: unused slots get zeros; combine:
//   the k choices summed in order). The slot maps live in ctx.workspace.
// - cross_entropy: one pass of online log-sum-exp per sample (one thread,
//   one warp or one block per sample by class count), 16-byte loads where
//   aligned; mean / sum reduce the float losses (in the workspace) with a
//   fixed two-level tree.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/KernelTables.h"
#include "runtime/cuda/kernels/MoeOps.cuh"

#include <algorithm>
#include <limits>
#include <string>

namespace braid::rt::cuda {

namespace {
using namespace moe;

constexpr unsigned kFullMask = 0xffffffffu;

//===----------------------------------------------------------------------===//
// Warp reductions
//===----------------------------------------------------------------------===//

/// The reductions of a warp's 32 lanes by xor butterfly: every lane ends
/// with the same result (the merges are commutative). Host code never runs
/// these; the host branch only keeps the functions __host__ __device__.
struct WarpReduce {
  BRAID_HD float max(float v) const {
#ifdef __CUDA_ARCH__
    for (int offset = 16; offset > 0; offset /= 2)
      v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
#endif
    return v;
  }
  BRAID_HD float sum(float v) const {
#ifdef __CUDA_ARCH__
    for (int offset = 16; offset > 0; offset /= 2)
      v += __shfl_xor_sync(kFullMask, v, offset);
#endif
    return v;
  }
  BRAID_HD Candidate best(Candidate c) const {
#ifdef __CUDA_ARCH__
    for (int offset = 16; offset > 0; offset /= 2) {
      Candidate other{__shfl_xor_sync(kFullMask, c.value, offset),
                      __shfl_xor_sync(kFullMask, c.index, offset)};
      c = better(c, other);
    }
#endif
    return c;
  }
  BRAID_HD LseState lse(LseState s) const {
#ifdef __CUDA_ARCH__
    for (int offset = 16; offset > 0; offset /= 2) {
      LseState other{__shfl_xor_sync(kFullMask, s.max, offset),
                     __shfl_xor_sync(kFullMask, s.sum, offset)};
      s = mergeLse(s, other);
    }
#endif
    return s;
  }
};

/// Blocks for a grid-stride loop over `items` with `perBlock` a block.
unsigned gridFor(int64_t items, int64_t perBlock, const CudaContext &ctx) {
  int64_t blocks = ceilDiv(items, perBlock);
  int64_t cap = int64_t(ctx.smCount) * 32;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(blocks, cap)));
}

/// Checks that `bytes` of workspace are there.
void *workspaceFor(const CudaContext &ctx, size_t bytes, const char *op) {
  if (bytes == 0)
    return ctx.workspace;
  if (!ctx.workspace || ctx.workspaceBytes < bytes)
    throw CudaError(std::string(op) + ": needs " + std::to_string(bytes) +
                    " bytes of workspace, the stream has " +
                    std::to_string(ctx.workspaceBytes));
  return ctx.workspace;
}

//===----------------------------------------------------------------------===//
// router_topk
//===----------------------------------------------------------------------===//

constexpr int kWarpKernelThreads = 256;
constexpr int kWarpsPerBlock = kWarpKernelThreads / 32;

template <typename T>
__global__ void __launch_bounds__(kWarpKernelThreads)
    routerWarpKernel(RouterTopK<T> f) {
  int lane = threadIdx.x & 31;
  int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  // The loop bound is uniform across the warp, so every lane joins every
  // shuffle.
  for (int64_t t = warp; t < f.tokens; t += warps)
    f.row(t, lane, 32, WarpReduce{});
}

void runRouterTopK(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  KernelAttrs attrs = args.attrs();
  const TensorView &logits = args.inputs[0];
  int64_t tokens = logits.shape[0], experts = logits.shape[1];
  if (tokens == 0)
    return;
  if (experts > std::numeric_limits<int32_t>::max())
    throw CudaError("router_topk: too many experts");
  dispatchFloat(logits.dtype, "router_topk", [&](auto tag) {
    using T = decltype(tag);
    RouterTopK<T> f{logits.as<const T>(),
                    args.outputs[0].as<T>(),
                    args.outputs[1].as<int64_t>(),
                    tokens,
                    experts,
                    attrs.getInt("k"),
                    attrs.getBool("normalize")};
    if (experts < 32) {
      launchPointwise(f, tokens, ctx, "router_topk");
      return;
    }
    routerWarpKernel<T><<<gridFor(tokens, kWarpsPerBlock, ctx),
                          kWarpKernelThreads, 0, ctx.stream>>>(f);
    checkLaunch("router_topk");
  });
}

//===----------------------------------------------------------------------===//
// Slot assignment
//===----------------------------------------------------------------------===//

/// One block per expert (blockIdx.x). Each chunk of kScanChunk pairs: every
/// thread counts its kScanItems pairs, a block-wide exclusive scan of the
/// counts ranks them, and the running count carries to the next chunk. The
/// count is the same in every thread, so the early exit is block-uniform.
template <typename I>
__global__ void __launch_bounds__(kScanThreads)
    slotScanKernel(SlotScan<I> scan) {
  constexpr int kWarps = kScanThreads / 32;
  __shared__ int warpTotals[kWarps];
  int64_t e = blockIdx.x;
  int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  int64_t count = 0;
  for (int64_t base = 0; base < scan.pairs && count < scan.capacity;
       base += kScanChunk) {
    int64_t first = base + int64_t(threadIdx.x) * kScanItems;
    int mine = scan.countItems(e, first);
    int inclusive = mine;
    for (int offset = 1; offset < 32; offset *= 2) {
      int below = __shfl_up_sync(kFullMask, inclusive, offset);
      if (lane >= offset)
        inclusive += below;
    }
    if (lane == 31)
      warpTotals[warp] = inclusive;
    __syncthreads();
    int before = 0, total = 0;
    for (int w = 0; w < kWarps; ++w) {
      int t = warpTotals[w];
      before += w < warp ? t : 0;
      total += t;
    }
    scan.writeItems(e, first, count + before + inclusive - mine);
    count += total;
    // warpTotals is rewritten by the next chunk.
    __syncthreads();
  }
  scan.fillUnused(e, count, threadIdx.x, blockDim.x);
}

template <typename I>
void launchSlotScan(const SlotScan<I> &scan, int64_t numExperts,
                    const CudaContext &ctx, const char *op) {
  slotScanKernel<I>
      <<<static_cast<unsigned>(numExperts), kScanThreads, 0, ctx.stream>>>(
          scan);
  checkLaunch(op);
}

//===----------------------------------------------------------------------===//
// moe_dispatch
//===----------------------------------------------------------------------===//

void runMoeDispatch(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  const TensorView &x = args.inputs[0], &experts = args.inputs[1],
                   &out = args.outputs[0];
  int64_t numExperts = out.shape[0], capacity = out.shape[1],
          hidden = out.shape[2];
  if (out.numElements() == 0)
    return;
  int64_t rows = numExperts * capacity;
  if (rows > std::numeric_limits<int32_t>::max() ||
      x.shape[0] > std::numeric_limits<int32_t>::max())
    throw CudaError("moe_dispatch: more than 2^31 tokens or slots");
  auto *source = static_cast<int32_t *>(
      workspaceFor(ctx, size_t(rows) * sizeof(int32_t), "moe_dispatch"));
  dispatchIndex(experts.dtype, "moe_dispatch", [&](auto itag) {
    using I = decltype(itag);
    SlotScan<I> scan{experts.as<const I>(),
                     experts.numElements(),
                     experts.shape[1],
                     capacity,
                     nullptr,
                     source};
    launchSlotScan(scan, numExperts, ctx, "moe_dispatch");
  });
  dispatchFloat(x.dtype, "moe_dispatch", [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = vecWidth<T>();
    if (vectorizable<T>(x.data, hidden) && vectorizable<T>(out.data, hidden)) {
      DispatchGather<T, V> f{x.as<const T>(), source, out.as<T>(), hidden};
      launchPointwise(f, f.size(rows), ctx, "moe_dispatch");
    } else {
      DispatchGather<T, 1> f{x.as<const T>(), source, out.as<T>(), hidden};
      launchPointwise(f, f.size(rows), ctx, "moe_dispatch");
    }
  });
}

//===----------------------------------------------------------------------===//
// moe_combine
//===----------------------------------------------------------------------===//

void runMoeCombine(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  const TensorView &y = args.inputs[0], &experts = args.inputs[1],
                   &weights = args.inputs[2], &out = args.outputs[0];
  int64_t numExperts = y.shape[0], capacity = y.shape[1], hidden = y.shape[2];
  int64_t tokens = experts.shape[0], choices = experts.shape[1];
  int64_t pairs = tokens * choices;
  if (out.numElements() == 0)
    return;
  if (numExperts * capacity > std::numeric_limits<int32_t>::max() ||
      pairs > std::numeric_limits<int32_t>::max())
    throw CudaError("moe_combine: more than 2^31 pairs or slots");
  auto *target = static_cast<int32_t *>(
      workspaceFor(ctx, size_t(pairs) * sizeof(int32_t), "moe_combine"));
  if (pairs > 0) {
    // -1 (all bytes 0xff): dropped, unless the scan assigns a slot.
    check(cudaMemsetAsync(target, 0xff, size_t(pairs) * sizeof(int32_t),
                          ctx.stream),
          "moe_combine: cudaMemsetAsync");
    if (numExperts > 0 && capacity > 0)
      dispatchIndex(experts.dtype, "moe_combine", [&](auto itag) {
        using I = decltype(itag);
        SlotScan<I> scan{
            experts.as<const I>(), pairs, choices, capacity, target, nullptr};
        launchSlotScan(scan, numExperts, ctx, "moe_combine");
      });
  }
  dispatchFloat(y.dtype, "moe_combine", [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = vecWidth<T>();
    if (vectorizable<T>(y.data, hidden) && vectorizable<T>(out.data, hidden)) {
      CombineGather<T, V> f{y.as<const T>(), weights.as<const T>(),
                            target,          out.as<T>(),
                            choices,         hidden};
      launchPointwise(f, f.size(tokens), ctx, "moe_combine");
    } else {
      CombineGather<T, 1> f{y.as<const T>(), weights.as<const T>(),
                            target,          out.as<T>(),
                            choices,         hidden};
      launchPointwise(f, f.size(tokens), ctx, "moe_combine");
    }
  });
}

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

/// Class counts below this take one thread per sample; up to
/// kWarpMaxClasses one warp; above, one block of kRowBlockThreads.
constexpr int64_t kThreadMaxClasses = 32;
constexpr int64_t kWarpMaxClasses = 2048;
constexpr int kRowBlockThreads = 512;

template <typename T, typename I, int W>
__global__ void __launch_bounds__(kWarpKernelThreads)
    crossEntropyWarpKernel(CrossEntropyRows<T, I> rows) {
  int lane = threadIdx.x & 31;
  int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  int64_t packs = rows.classes / W;
  for (int64_t s = warp; s < rows.samples; s += warps) {
    LseState state =
        WarpReduce{}.lse(lanePartial<T, W>(rows.row(s), packs, lane, 32));
    if (lane == 0)
      rows.finish(s, state);
  }
}

template <typename T, typename I, int W>
__global__ void __launch_bounds__(kRowBlockThreads)
    crossEntropyBlockKernel(CrossEntropyRows<T, I> rows) {
  constexpr int kWarps = kRowBlockThreads / 32;
  __shared__ LseState warpStates[kWarps];
  int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  int64_t packs = rows.classes / W;
  for (int64_t s = blockIdx.x; s < rows.samples; s += gridDim.x) {
    LseState state = WarpReduce{}.lse(
        lanePartial<T, W>(rows.row(s), packs, threadIdx.x, kRowBlockThreads));
    if (lane == 0)
      warpStates[warp] = state;
    __syncthreads();
    if (warp == 0) {
      state = WarpReduce{}.lse(lane < kWarps ? warpStates[lane] : emptyLse());
      if (lane == 0)
        rows.finish(s, state);
    }
    // warpStates is rewritten by the next sample.
    __syncthreads();
  }
}

template <typename T, typename I, int W>
void launchCrossEntropyRows(const CrossEntropyRows<T, I> &rows,
                            const CudaContext &ctx) {
  if (rows.classes <= kWarpMaxClasses) {
    crossEntropyWarpKernel<T, I, W>
        <<<gridFor(rows.samples, kWarpsPerBlock, ctx), kWarpKernelThreads, 0,
           ctx.stream>>>(rows);
  } else {
    // Enough blocks for every sample, up to a few waves' worth.
    int64_t blocks = std::min<int64_t>(rows.samples, int64_t(ctx.smCount) * 8);
    crossEntropyBlockKernel<T, I, W>
        <<<static_cast<unsigned>(blocks), kRowBlockThreads, 0, ctx.stream>>>(
            rows);
  }
  checkLaunch("cross_entropy");
}

/// Block b sums its fixed share of in[0, n) by a fixed tree; thread 0 writes
/// the sum to partials[b], or, when `out` is set (a single block), the sum
/// divided by `divisor` as T.
template <typename T>
__global__ void __launch_bounds__(kSumThreads)
    sumKernel(const float *in, int64_t n, float *partials, T *out,
              float divisor) {
  __shared__ float sums[kSumThreads];
  sums[threadIdx.x] = threadSum(in, n, blockIdx.x, gridDim.x, threadIdx.x);
  __syncthreads();
  for (int stride = kSumThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x != 0)
    return;
  if (out)
    *out = fromFloat<T>(sums[0] / divisor);
  else
    partials[blockIdx.x] = sums[0];
}

void runCrossEntropy(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  const std::string &reduction = args.attrs().getString("reduction");
  const TensorView &logits = args.inputs[0], &labels = args.inputs[1],
                   &out = args.outputs[0];
  int64_t classes = logits.shape.back(), samples = labels.numElements();
  bool none = reduction == "none";
  if (!none && reduction != "mean" && reduction != "sum")
    throw CudaError("cross_entropy: reduction '" + reduction +
                    "' is not one of none, mean, sum");
  if (none && samples == 0)
    return;
  // mean / sum: the float losses, then the partial sums (256-byte aligned).
  int64_t blocks = sumBlocks(samples);
  size_t lossBytes = (size_t(samples) * sizeof(float) + 255) / 256 * 256;
  float *losses = nullptr, *partials = nullptr;
  if (!none) {
    void *ws = workspaceFor(ctx, lossBytes + size_t(blocks) * sizeof(float),
                            "cross_entropy");
    losses = static_cast<float *>(ws);
    partials = reinterpret_cast<float *>(static_cast<char *>(ws) + lossBytes);
  }
  dispatchFloat(logits.dtype, "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    dispatchIndex(labels.dtype, "cross_entropy", [&](auto itag) {
      using I = decltype(itag);
      CrossEntropyRows<T, I> rows{logits.as<const T>(),
                                  labels.as<const I>(),
                                  samples,
                                  classes,
                                  none ? out.as<T>() : nullptr,
                                  losses};
      if (samples == 0)
        return;
      if (classes < kThreadMaxClasses)
        launchPointwise(CrossEntropyRow<T, I, 1>{rows}, samples, ctx,
                        "cross_entropy");
      else if (vectorizable<T>(logits.data, classes))
        launchCrossEntropyRows<T, I, vecWidth<T>()>(rows, ctx);
      else
        launchCrossEntropyRows<T, I, 1>(rows, ctx);
    });
    if (none)
      return;
    float divisor = reduction == "mean" ? float(samples) : 1.f;
    const float *finalIn = losses;
    int64_t finalN = samples;
    if (blocks > 1) {
      sumKernel<float>
          <<<static_cast<unsigned>(blocks), kSumThreads, 0, ctx.stream>>>(
              losses, samples, partials, nullptr, 1.f);
      checkLaunch("cross_entropy");
      finalIn = partials;
      finalN = blocks;
    }
    sumKernel<T><<<1, kSumThreads, 0, ctx.stream>>>(finalIn, finalN, nullptr,
                                                    out.as<T>(), divisor);
    checkLaunch("cross_entropy");
  });
}

} // namespace

void addMoeKernels(KernelTable &table) {
  table["router_topk"] = runRouterTopK;
  table["moe_dispatch"] = runMoeDispatch;
  table["moe_combine"] = runMoeCombine;
  table["cross_entropy"] = runCrossEntropy;
}

} // namespace braid::rt::cuda
