//===- DataMovement.cu - the data-movement CUDA kernels -------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Run functions of reshape, copy, transpose, slice, concat, split,
// broadcast_to, gather and scatter_add. The index math and the choice of
// word and kernel live in DataMovementOps.cuh (shared with the host unit
// tests); this file adds the launcher, the shared-memory tile transpose and
// the byte copies.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/DataMovementOps.cuh"
#include "runtime/cuda/kernels/KernelTables.h"

#include <algorithm>
#include <string>
#include <vector>

namespace braid::rt::cuda {

namespace {

using dm::StridedPlan;
using dm::TileMap;

/// One 32 x 32 tile per iteration of a block of 32 x 8 threads: reads along
/// the input's contiguous dimension into shared memory, writes along the
/// output's (element (ip, ic) lives in tile[ic][ip]; the padding column
/// keeps the transposed reads free of bank conflicts).
template <typename T>
__global__ void transposeTilesKernel(TileMap map, int64_t numTiles, T *out,
                                     const T *in) {
  __shared__ T tile[TileMap::kTile][TileMap::kTile + 1];
  int x = threadIdx.x;
  for (int64_t t = blockIdx.x; t < numTiles; t += gridDim.x) {
    int64_t from, to;
    for (int k = threadIdx.y; k < TileMap::kTile; k += blockDim.y)
      if (map.element(t, /*ip=*/x, /*ic=*/k, from, to))
        tile[k][x] = in[from];
    __syncthreads();
    for (int k = threadIdx.y; k < TileMap::kTile; k += blockDim.y)
      if (map.element(t, /*ip=*/k, /*ic=*/x, from, to))
        out[to] = tile[x][k];
    __syncthreads();
  }
}

/// The `tiled` argument of dm::runStrided on the GPU.
struct DeviceTiles {
  const CudaContext &ctx;
  void *out;
  const void *in;

  template <typename T> void operator()(const StridedPlan &plan, T) const {
    int64_t numTiles = plan.tiles.numTiles(plan.batch);
    int64_t blocks = std::min<int64_t>(numTiles, int64_t(ctx.smCount) * 8);
    transposeTilesKernel<T>
        <<<static_cast<unsigned>(blocks), dim3(TileMap::kTile, 8), 0,
           ctx.stream>>>(plan.tiles, numTiles, static_cast<T *>(out),
                         static_cast<const T *>(in));
    checkLaunch("transpose");
  }
};

void runStrided(const KernelArgs &args, const char *name, const void *in,
                const Dims &dims) {
  CudaContext &ctx = contextOf(args);
  void *out = args.outputs[0].data;
  dm::runStrided(byteSize(args.inputs[0].dtype), out, in, dims,
                 DeviceLaunch{ctx, name}, DeviceTiles{ctx, out, in});
}

/// reshape and copy: the bytes stay as they are.
void runCopyBytes(const KernelArgs &args) {
  const TensorView &in = args.inputs[0], &out = args.outputs[0];
  uint64_t bytes = in.numBytes();
  if (in.data == out.data || bytes == 0)
    return;
  CudaContext &ctx = contextOf(args);
  DeviceLaunch launch{ctx, "copy"};
  if (!in.overlaps(out)) {
    launch.copy(out.data, in.data, bytes);
    return;
  }
  // cudaMemcpyAsync has no memmove semantics: bounce through the
  // workspace.
  if (bytes > ctx.workspaceBytes)
    throw CudaError(args.op() + ": overlapping copy of " +
                    std::to_string(bytes) +
                    " bytes needs that much "
                    "workspace, the stream has " +
                    std::to_string(ctx.workspaceBytes));
  launch.copy(ctx.workspace, in.data, bytes);
  launch.copy(out.data, ctx.workspace, bytes);
}

void runTranspose(const KernelArgs &args) {
  runStrided(args, "transpose", args.inputs[0].data,
             dm::transposeDims(args.inputs[0].shape,
                               args.attrs().getInts("permutation")));
}

void runSlice(const KernelArgs &args) {
  KernelAttrs attrs = args.attrs();
  const TensorView &x = args.inputs[0];
  int64_t base = 0;
  Dims dims = dm::sliceDims(
      x.shape, attrs.getInts("static_offsets"), attrs.getInts("static_sizes"),
      attrs.getInts("static_strides"), args.indices, base);
  const char *in = static_cast<const char *>(x.data) +
                   base * static_cast<int64_t>(byteSize(x.dtype));
  runStrided(args, "slice", in, dims);
}

void runBroadcastTo(const KernelArgs &args) {
  runStrided(args, "broadcast_to", args.inputs[0].data,
             broadcastDims(args.inputs[0].shape, args.outputs[0].shape));
}

void runConcat(const KernelArgs &args) {
  int64_t dim = args.attrs().getInt("dim");
  std::vector<void *> pieces;
  std::vector<int64_t> sizes;
  for (const TensorView &input : args.inputs) {
    pieces.push_back(input.data);
    sizes.push_back(input.shape[dim]);
  }
  const TensorView &out = args.outputs[0];
  dm::runPieces(/*toBig=*/true, out.data, out.shape, byteSize(out.dtype), dim,
                pieces, sizes, DeviceLaunch{contextOf(args), "concat"});
}

void runSplit(const KernelArgs &args) {
  int64_t dim = args.attrs().getInt("dim");
  std::vector<void *> pieces;
  std::vector<int64_t> sizes;
  for (const TensorView &output : args.outputs) {
    pieces.push_back(output.data);
    sizes.push_back(output.shape[dim]);
  }
  const TensorView &x = args.inputs[0];
  dm::runPieces(/*toBig=*/false, x.data, x.shape, byteSize(x.dtype), dim,
                pieces, sizes, DeviceLaunch{contextOf(args), "split"});
}

void runGather(const KernelArgs &args) {
  dm::runGather(args.inputs[0], args.inputs[1], args.attrs().getInt("axis"),
                args.outputs[0], DeviceLaunch{contextOf(args), "gather"});
}

void runScatterAdd(const KernelArgs &args) {
  CudaContext &ctx = contextOf(args);
  dm::runScatterAdd(args.inputs[0], args.inputs[1], args.attrs().getInt("axis"),
                    args.outputs[0], static_cast<float *>(ctx.workspace),
                    static_cast<int64_t>(ctx.workspaceBytes / sizeof(float)),
                    DeviceLaunch{ctx, "scatter_add"});
}

} // namespace

void addDataMovementKernels(KernelTable &table) {
  table["reshape"] = runCopyBytes;
  table["copy"] = runCopyBytes;
  table["transpose"] = runTranspose;
  table["slice"] = runSlice;
  table["concat"] = runConcat;
  table["split"] = runSplit;
  table["broadcast_to"] = runBroadcastTo;
  table["gather"] = runGather;
  table["scatter_add"] = runScatterAdd;
}

} // namespace braid::rt::cuda
