//===- Norm.cu - reductions, softmax, norms and rotary on CUDA ------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Row-wise ops run as rows (NormOps.cuh): one warp per row up to
// kWarpRowLimit elements, one block per row beyond, each worker reading
// 16-byte vectors when the row length and the pointers allow. A worker
// makes one pass over its chunks for the row's statistics, the warp (and
// block) combines them, and a second pass, which mostly hits the cache,
// writes the outputs. Every worker writes exactly the elements it read, and
// all reads of the first pass finish before the combination completes, so
// an output may be its input (in place).
//
// Lines that are strided (softmax along a non-last dim, reductions over
// leading or interleaved dims) and short rows go to one thread per line.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/KernelTables.h"
#include "runtime/cuda/kernels/NormOps.cuh"

#include <algorithm>

namespace braid::rt::cuda {

namespace {

//===----------------------------------------------------------------------===//
// Row kernels
//===----------------------------------------------------------------------===//

constexpr int kWarpKernelThreads = 256;
constexpr int kMaxBlockThreads = 1024;

/// Every lane ends with the combination of all 32 lanes' values (the same
/// bits in every lane: combine is commutative).
template <typename Rows>
__device__ __forceinline__ typename Rows::Stats
warpAllReduce(typename Rows::Stats s) {
  using Stats = typename Rows::Stats;
#pragma unroll
  for (int mask = kWarpSize / 2; mask > 0; mask >>= 1) {
    Stats other;
#pragma unroll
    for (int k = 0; k < Stats::kSize; ++k)
      other.v[k] = __shfl_xor_sync(0xffffffffu, s.v[k], mask);
    s = Rows::combine(s, other);
  }
  return s;
}

/// One warp per row, grid-stride over rows. The loop condition is uniform
/// across a warp, so the full-mask shuffles are safe.
template <typename Rows>
__global__ void __launch_bounds__(kWarpKernelThreads)
    warpRowsKernel(Rows rows, int64_t count) {
  int lane = threadIdx.x % kWarpSize;
  int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpSize;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarpSize;
  for (int64_t row = warp; row < count; row += warps) {
    typename Rows::Stats s = rows.partial(row, lane, kWarpSize);
    s = warpAllReduce<Rows>(s);
    rows.write(row, lane, kWarpSize, s);
  }
}

/// One block (a multiple of 32 threads) per row, grid-stride over rows.
/// Each warp reduces its lanes, lane 0 of each posts the result, and every
/// warp then reduces the posted results itself (so no broadcast step).
template <typename Rows>
__global__ void __launch_bounds__(kMaxBlockThreads)
    blockRowsKernel(Rows rows, int64_t count) {
  using Stats = typename Rows::Stats;
  __shared__ Stats posted[kMaxBlockThreads / kWarpSize];
  int lane = threadIdx.x % kWarpSize;
  int warp = threadIdx.x / kWarpSize;
  int warps = blockDim.x / kWarpSize;
  for (int64_t row = blockIdx.x; row < count; row += gridDim.x) {
    Stats s = rows.partial(row, threadIdx.x, blockDim.x);
    s = warpAllReduce<Rows>(s);
    if (lane == 0)
      posted[warp] = s;
    __syncthreads();
    Stats total = lane < warps ? posted[lane] : Rows::identity();
    total = warpAllReduce<Rows>(total);
    // `posted` is written again for the next row.
    __syncthreads();
    rows.write(row, threadIdx.x, blockDim.x, total);
  }
}

/// Runs `count` rows of `size` elements, read `vec` elements at a time.
template <typename Rows>
void launchRows(const Rows &rows, int64_t count, int64_t size, int vec,
                const CudaContext &ctx, const char *name) {
  if (count <= 0)
    return;
  int64_t cap = int64_t(ctx.smCount) * 32;
  if (size <= kWarpRowLimit) {
    constexpr int rowsPerBlock = kWarpKernelThreads / kWarpSize;
    int64_t blocks = std::min(ceilDiv(count, rowsPerBlock), cap);
    warpRowsKernel<<<static_cast<unsigned>(blocks), kWarpKernelThreads, 0,
                     ctx.stream>>>(rows, count);
    checkLaunch(name);
    return;
  }
  // About two vectors per thread, between 128 and 1024 threads.
  int64_t chunks = ceilDiv(size, vec);
  int64_t threads = ceilDiv(ceilDiv(chunks, 2), kWarpSize) * kWarpSize;
  threads = std::clamp<int64_t>(threads, 128, kMaxBlockThreads);
  int64_t blocks = std::min(count, cap);
  blockRowsKernel<<<static_cast<unsigned>(blocks),
                    static_cast<unsigned>(threads), 0, ctx.stream>>>(rows,
                                                                     count);
  checkLaunch(name);
}

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t count = 1;
  for (size_t d = begin; d < end; ++d)
    count *= shape[d];
  return count;
}

//===----------------------------------------------------------------------===//
// Run functions
//===----------------------------------------------------------------------===//

template <ReduceOp Op> const char *reduceName() {
  return Op == ReduceOp::Sum    ? "reduce_sum"
         : Op == ReduceOp::Mean ? "reduce_mean"
                                : "reduce_max";
}

template <ReduceOp Op> void runReduce(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  const char *name = reduceName<Op>();
  const TensorView &x = args.inputs[0], &y = args.outputs[0];
  ReducePlan plan = planReduce(x.shape, args.attrs().getInts("dims"));
  if (plan.outputs == 0)
    return;
  bool isFloat =
      x.dtype == DType::F32 || x.dtype == DType::F16 || x.dtype == DType::BF16;
  // The reference's errors, known from the shapes alone.
  if (plan.count == 0 &&
      (Op == ReduceOp::Max || (Op == ReduceOp::Mean && !isFloat)))
    throw CudaError(std::string(name) + ": " +
                    (Op == ReduceOp::Max ? "max" : "integer mean") +
                    " over an empty set of elements");
  dispatchAny(x.dtype, name, [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.as<T>();
    T *out = y.as<T>();
    if (plan.rows) {
      constexpr int vec = vectorWidth<T>();
      if (canVectorize<T>(vec, plan.count, {in}))
        launchRows(ReduceRows<T, vec, Op>{in, out, plan.count}, plan.outputs,
                   plan.count, vec, ctx, name);
      else
        launchRows(ReduceRows<T, 1, Op>{in, out, plan.count}, plan.outputs,
                   plan.count, 1, ctx, name);
      return;
    }
    launchPointwise(
        ReduceLines<T, Op>{in, out, plan.kept, plan.reduced, plan.count},
        plan.outputs, ctx, name);
  });
}

void runSoftmax(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  const TensorView &x = args.inputs[0], &y = args.outputs[0];
  size_t dim = static_cast<size_t>(args.attrs().getInt("dim"));
  int64_t outer = product(x.shape, 0, dim);
  int64_t size = x.shape[dim];
  int64_t inner = product(x.shape, dim + 1, x.shape.size());
  if (outer == 0 || size == 0 || inner == 0)
    return;
  dispatchFloat(x.dtype, "softmax", [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.as<T>();
    T *out = y.as<T>();
    if (inner == 1 && size >= kThreadRowLimit) {
      constexpr int vec = vectorWidth<T>();
      if (canVectorize<T>(vec, size, {in, out}))
        launchRows(SoftmaxRows<T, vec>{in, out, size}, outer, size, vec, ctx,
                   "softmax");
      else
        launchRows(SoftmaxRows<T, 1>{in, out, size}, outer, size, 1, ctx,
                   "softmax");
      return;
    }
    launchPointwise(SoftmaxLines<T>{in, out, size, inner}, outer * inner, ctx,
                    "softmax");
  });
}

void runLayerNorm(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  KernelAttrs attrs = args.attrs();
  size_t axis = static_cast<size_t>(attrs.getInt("axis"));
  float epsilon = static_cast<float>(attrs.getFloat("epsilon"));
  const TensorView &x = args.inputs[0], &gamma = args.inputs[1],
                   &y = args.outputs[0];
  const TensorView *beta = args.inputs.size() == 3 ? &args.inputs[2] : nullptr;
  int64_t rows = product(x.shape, 0, axis);
  int64_t size = product(x.shape, axis, x.shape.size());
  if (rows == 0 || size == 0)
    return;
  dispatchFloat(x.dtype, "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.as<T>(), *g = gamma.as<T>();
    const T *b = beta ? beta->as<T>() : nullptr;
    T *out = y.as<T>();
    constexpr int vec = vectorWidth<T>();
    if (canVectorize<T>(vec, size, {in, g, b, out}))
      launchRows(LayerNormRows<T, vec>{in, g, b, out, size, epsilon}, rows,
                 size, vec, ctx, "layer_norm");
    else
      launchRows(LayerNormRows<T, 1>{in, g, b, out, size, epsilon}, rows, size,
                 1, ctx, "layer_norm");
  });
}

void runRmsNorm(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  KernelAttrs attrs = args.attrs();
  size_t axis = static_cast<size_t>(attrs.getInt("axis"));
  float epsilon = static_cast<float>(attrs.getFloat("epsilon"));
  const TensorView &x = args.inputs[0], &gamma = args.inputs[1],
                   &y = args.outputs[0];
  int64_t rows = product(x.shape, 0, axis);
  int64_t size = product(x.shape, axis, x.shape.size());
  if (rows == 0 || size == 0)
    return;
  dispatchFloat(x.dtype, "rms_norm", [&](auto tag) {
    using T = decltype(tag);
    const T *in = x.as<T>(), *g = gamma.as<T>();
    T *out = y.as<T>();
    constexpr int vec = vectorWidth<T>();
    if (canVectorize<T>(vec, size, {in, g, out}))
      launchRows(RmsNormRows<T, vec>{in, g, out, size, epsilon}, rows, size,
                 vec, ctx, "rms_norm");
    else
      launchRows(RmsNormRows<T, 1>{in, g, out, size, epsilon}, rows, size, 1,
                 ctx, "rms_norm");
  });
}

void runRotary(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  bool interleaved = args.attrs().getBool("interleaved");
  const TensorView &x = args.inputs[0], &cos = args.inputs[1],
                   &sin = args.inputs[2], &y = args.outputs[0];
  int64_t pairs = x.numElements() / 2;
  if (pairs == 0)
    return;
  dispatchFloat(x.dtype, "rotary", [&](auto tag) {
    using T = decltype(tag);
    launchPointwise(makeRotaryPairs<T>(x.shape, cos.shape, sin.shape, x.as<T>(),
                                       cos.as<T>(), sin.as<T>(), y.as<T>(),
                                       interleaved),
                    pairs, ctx, "rotary");
  });
}

} // namespace

void addNormKernels(KernelTable &table) {
  table["reduce_sum"] = runReduce<ReduceOp::Sum>;
  table["reduce_mean"] = runReduce<ReduceOp::Mean>;
  table["reduce_max"] = runReduce<ReduceOp::Max>;
  table["softmax"] = runSoftmax;
  table["layer_norm"] = runLayerNorm;
  table["rms_norm"] = runRmsNorm;
  table["rotary"] = runRotary;
}

} // namespace braid::rt::cuda
