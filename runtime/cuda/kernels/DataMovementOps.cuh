//===- DataMovementOps.cuh - functors of the data-movement kernels -*- CUDA
//-*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// transpose, slice, broadcast_to, concat, split and gather move elements
// without looking at them, so every functor here copies raw words: an
// element-sized unsigned integer, or a wider word (up to 16 bytes) when rows
// and pointers allow. scatter_add, gather's transpose, is the exception: it
// adds elements, in f32 (atomically: its runs are not bit-for-bit repeatable). The drivers (host code, parameterized by a launcher
// with `launcher(functor, count)` and `launcher.copy(dst, src, bytes)`)
// choose the functor and the word; DataMovement.cu hands them one that
// launches on the stream, the unit tests one that runs on the host.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_KERNELS_DATAMOVEMENTOPS_CUH
#define BRAID_RUNTIME_CUDA_KERNELS_DATAMOVEMENTOPS_CUH

#include "runtime/cuda/kernels/CudaCommon.cuh"
#include "runtime/cuda/kernels/ElementwiseOps.cuh"
#include "runtime/exec/KernelRegistry.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace braid::rt::cuda::dm {

using ew::coalesce;
using ew::divIndex;
using ew::isAligned;
using ew::offsetOf;
using ew::Pack;

/// Calls `f(W{})` with the unsigned word type of `bytes` (1, 2, 4, 8, 16).
template <typename F> void dispatchWord(size_t bytes, F &&f) {
  switch (bytes) {
  case 1:
    f(uint8_t{});
    return;
  case 2:
    f(uint16_t{});
    return;
  case 4:
    f(uint32_t{});
    return;
  case 8:
    f(uint64_t{});
    return;
  case 16:
    f(uint4{});
    return;
  default:
    throw CudaError("no word type of " + std::to_string(bytes) + " bytes");
  }
}

/// The widest word (at most 16 bytes) that divides every length and every
/// pointer address.
inline size_t widestWord(const std::vector<uint64_t> &lengths,
                         const std::vector<const void *> &pointers) {
  for (size_t word = 16; word > 1; word /= 2) {
    bool fits = true;
    for (uint64_t length : lengths)
      fits = fits && length % word == 0;
    for (const void *p : pointers)
      fits = fits && isAligned(p, word);
    if (fits)
      return word;
  }
  return 1;
}

//===----------------------------------------------------------------------===//
// Strided copies: transpose, slice, broadcast_to
//===----------------------------------------------------------------------===//

/// out[e] = in[offsetOf(dims, e)] for the contiguous output, V elements per
/// index. With V > 1 (the planner checks) the innermost size is a multiple
/// of V and its stride is 0 (`splat`: the pack repeats one element) or 1
/// (the pack is contiguous and aligned in the input too).
template <typename T, int V> struct StridedCopy {
  T *out = nullptr;
  const T *in = nullptr;
  Dims dims;
  bool splat = false;

  BRAID_HD void operator()(int64_t i) const {
    int64_t first = i * V;
    const T *p = in + offsetOf(dims, first);
    if constexpr (V == 1) {
      out[first] = *p;
    } else {
      Pack<T, V> pack;
      if (splat) {
        T value = *p;
        BRAID_EW_UNROLL
        for (int j = 0; j < V; ++j)
          pack.v[j] = value;
      } else {
        pack = ew::loadPack<T, V>(p);
      }
      ew::storePack<T, V>(out + first, pack);
    }
  }
};

/// A transpose of two dimensions within a batch, by 32 x 32 tiles: the
/// output dimension `p` is the input's contiguous one (stride 1) and the
/// output's innermost dimension `c` is strided in the input. Staging a tile
/// in shared memory lets both the reads (along p) and the writes (along c)
/// be coalesced. This functor holds the index math only: element (ip, ic)
/// of tile `t`, in and out offsets, or false outside the tensor.
struct TileMap {
  static constexpr int kTile = 32;
  /// The other dimensions: input strides / output strides.
  Dims batchIn, batchOut;
  int64_t sizeP = 0, sizeC = 0;
  /// Input stride of dimension c, output stride of dimension p.
  int64_t inStrideC = 0, outStrideP = 0;
  int64_t tilesP = 0, tilesC = 0;

  BRAID_HD int64_t numTiles(int64_t batch) const {
    return batch * tilesP * tilesC;
  }

  BRAID_HD bool element(int64_t tile, int ip, int ic, int64_t &inOffset,
                        int64_t &outOffset) const {
    int64_t perBatch = tilesP * tilesC;
    int64_t b = divIndex(tile, perBatch);
    int64_t rest = tile - b * perBatch;
    int64_t tp = divIndex(rest, tilesC);
    int64_t tc = rest - tp * tilesC;
    int64_t p = tp * kTile + ip, c = tc * kTile + ic;
    if (p >= sizeP || c >= sizeC)
      return false;
    inOffset = offsetOf(batchIn, b) + p + c * inStrideC;
    outOffset = offsetOf(batchOut, b) + p * outStrideP + c;
    return true;
  }
};

/// The plan of a strided copy after coalescing.
struct StridedPlan {
  enum Kind { Empty, Contiguous, Tiled, Strided } kind = Empty;
  Dims dims;
  int64_t n = 0;
  /// Tiled: the map and the batch size.
  TileMap tiles;
  int64_t batch = 0;
};

/// Decides how to copy a contiguous output of n = product(dims.size)
/// elements from `in` read through `dims`.
inline StridedPlan planStrided(Dims dims) {
  StridedPlan plan;
  plan.n = 1;
  for (int d = 0; d < dims.rank; ++d)
    plan.n *= dims.size[d];
  if (plan.n == 0)
    return plan;
  coalesce(&dims, 1);
  plan.dims = dims;
  int rank = dims.rank;
  if (rank == 0 || (rank == 1 && dims.stride[0] == 1)) {
    plan.kind = StridedPlan::Contiguous;
    return plan;
  }
  plan.kind = StridedPlan::Strided;
  if (dims.stride[rank - 1] == 0 || dims.stride[rank - 1] == 1)
    return plan;
  // A true transpose: find the output dimension the input walks with
  // stride 1; tile it against the innermost one when both are long enough
  // for tiles to be mostly full.
  int p = -1;
  for (int d = 0; d + 1 < rank; ++d)
    if (dims.stride[d] == 1)
      p = d;
  if (p < 0 || dims.size[p] < 16 || dims.size[rank - 1] < 16)
    return plan;
  TileMap &map = plan.tiles;
  map.sizeP = dims.size[p];
  map.sizeC = dims.size[rank - 1];
  map.inStrideC = dims.stride[rank - 1];
  map.outStrideP = map.sizeC;
  for (int d = p + 1; d + 1 < rank; ++d)
    map.outStrideP *= dims.size[d];
  map.tilesP = ceilDiv(map.sizeP, TileMap::kTile);
  map.tilesC = ceilDiv(map.sizeC, TileMap::kTile);
  // The other dimensions, with their input strides and (contiguous) output
  // strides.
  int64_t outStrides[kMaxRank];
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    outStrides[d] = stride;
    stride *= dims.size[d];
  }
  plan.batch = 1;
  for (int d = 0; d + 1 < rank; ++d) {
    if (d == p)
      continue;
    int k = map.batchIn.rank++;
    map.batchOut.rank++;
    map.batchIn.size[k] = map.batchOut.size[k] = dims.size[d];
    map.batchIn.stride[k] = dims.stride[d];
    map.batchOut.stride[k] = outStrides[d];
    plan.batch *= dims.size[d];
  }
  plan.kind = StridedPlan::Tiled;
  return plan;
}

/// Runs a strided copy of `elementBytes`-byte elements. Tiled plans go to
/// `tiled(plan, word)` (the GPU's shared-memory kernel, or the tests' host
/// emulation of it), the rest to `launch`.
template <typename Launch, typename Tiled>
void runStrided(size_t elementBytes, void *out, const void *in,
                const Dims &dims, Launch &&launch, Tiled &&tiled) {
  StridedPlan plan = planStrided(dims);
  switch (plan.kind) {
  case StridedPlan::Empty:
    return;
  case StridedPlan::Contiguous:
    launch.copy(out, in, plan.n * elementBytes);
    return;
  case StridedPlan::Tiled:
    dispatchWord(elementBytes, [&](auto word) { tiled(plan, word); });
    return;
  case StridedPlan::Strided:
    break;
  }
  dispatchWord(elementBytes, [&](auto word) {
    using T = decltype(word);
    constexpr int V = static_cast<int>(16 / sizeof(T));
    const Dims &d = plan.dims;
    int rank = d.rank;
    int64_t inner = d.stride[rank - 1];
    bool packs = V > 1 && d.size[rank - 1] % V == 0 &&
                 isAligned(out, V * sizeof(T)) &&
                 (inner == 0 || (inner == 1 && isAligned(in, V * sizeof(T))));
    for (int k = 0; k + 1 < rank && inner == 1; ++k)
      packs = packs && d.stride[k] % V == 0;
    if constexpr (V > 1) {
      if (packs) {
        StridedCopy<T, V> copy;
        copy.out = static_cast<T *>(out);
        copy.in = static_cast<const T *>(in);
        copy.dims = d;
        copy.splat = inner == 0;
        launch(copy, plan.n / V);
        return;
      }
    }
    StridedCopy<T, 1> copy;
    copy.out = static_cast<T *>(out);
    copy.in = static_cast<const T *>(in);
    copy.dims = d;
    launch(copy, plan.n);
  });
}

/// The host's version of the tiled transpose kernel (for the unit tests):
/// the same TileMap, every element of every tile.
struct HostTiles {
  void *out;
  const void *in;
  template <typename T> void operator()(const StridedPlan &plan, T) const {
    const TileMap &map = plan.tiles;
    for (int64_t t = 0; t < map.numTiles(plan.batch); ++t)
      for (int ic = 0; ic < TileMap::kTile; ++ic)
        for (int ip = 0; ip < TileMap::kTile; ++ip) {
          int64_t from, to;
          if (map.element(t, ip, ic, from, to))
            static_cast<T *>(out)[to] = static_cast<const T *>(in)[from];
        }
  }
};

/// transpose: output dimension d is input dimension permutation[d].
inline Dims transposeDims(const std::vector<int64_t> &inShape,
                          const std::vector<int64_t> &permutation) {
  Dims in = contiguousDims(inShape);
  Dims dims = in;
  for (int d = 0; d < in.rank; ++d) {
    dims.size[d] = in.size[permutation[d]];
    dims.stride[d] = in.stride[permutation[d]];
  }
  return dims;
}

/// The marker of a dynamic slice offset (MLIR's ShapedType::kDynamic).
constexpr int64_t kDynamic = std::numeric_limits<int64_t>::min();

/// slice: the element offset of the first element and the Dims of the
/// rest. Dynamic offsets come from `indices` in order; they are host values,
/// so a slice outside the input throws std::out_of_range like the
/// reference does.
inline Dims sliceDims(const std::vector<int64_t> &inShape,
                      std::vector<int64_t> offsets,
                      const std::vector<int64_t> &sizes,
                      const std::vector<int64_t> &strides,
                      const std::vector<int64_t> &indices, int64_t &base) {
  size_t next = 0;
  for (int64_t &offset : offsets)
    if (offset == kDynamic) {
      if (next >= indices.size())
        throw std::out_of_range("slice: missing a dynamic offset");
      offset = indices[next++];
    }
  Dims in = contiguousDims(inShape);
  Dims dims = in;
  base = 0;
  for (int d = 0; d < in.rank; ++d) {
    int64_t extent = sizes[d] == 0 ? 0 : (sizes[d] - 1) * strides[d] + 1;
    if (offsets[d] < 0 || offsets[d] > inShape[d] - extent)
      throw std::out_of_range(
          "slice: dimension " + std::to_string(d) + " (offset " +
          std::to_string(offsets[d]) + ", size " + std::to_string(sizes[d]) +
          ", stride " + std::to_string(strides[d]) + ") exceeds its size " +
          std::to_string(inShape[d]));
    base += offsets[d] * in.stride[d];
    dims.size[d] = sizes[d];
    dims.stride[d] = in.stride[d] * strides[d];
  }
  return dims;
}

//===----------------------------------------------------------------------===//
// concat, split
//===----------------------------------------------------------------------===//

/// Pieces per launch (their pointers and starts are kernel parameters).
constexpr int kMaxPieces = 32;

/// concat (`toBig`: pieces -> big) or split (big -> pieces) along one
/// dimension, viewed in words as 2-D: `rows` rows of `bigRowWords` in the
/// big tensor, of which this launch covers the columns [groupStart,
/// groupStart + groupWords), piece k owning [start[k], start[k + 1]) of
/// them (relative to groupStart; no piece is empty).
template <typename W> struct PieceCopy {
  W *big = nullptr;
  int64_t bigRowWords = 0;
  int64_t groupStart = 0;
  int64_t groupWords = 0;
  int count = 0;
  bool toBig = true;
  W *piece[kMaxPieces] = {};
  int64_t start[kMaxPieces + 1] = {};

  BRAID_HD void operator()(int64_t i) const {
    int64_t row = divIndex(i, groupWords);
    int64_t column = i - row * groupWords;
    // The last piece that starts at or before `column`.
    int lo = 0, hi = count - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) / 2;
      if (start[mid] <= column)
        lo = mid;
      else
        hi = mid - 1;
    }
    int64_t width = start[lo + 1] - start[lo];
    W *small = piece[lo] + row * width + (column - start[lo]);
    W *whole = big + row * bigRowWords + groupStart + column;
    if (toBig)
      *whole = *small;
    else
      *small = *whole;
  }
};

/// concat (`toBig`) or split of `big` (shape `bigShape`) along `dim` with
/// the pieces' data and their sizes along `dim`.
template <typename Launch>
void runPieces(bool toBig, void *big, const std::vector<int64_t> &bigShape,
               size_t elementBytes, int64_t dim,
               const std::vector<void *> &pieces,
               const std::vector<int64_t> &pieceSizes, Launch &&launch) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= bigShape[d];
  for (size_t d = dim + 1; d < bigShape.size(); ++d)
    inner *= bigShape[d];
  std::vector<uint64_t> lengths;
  std::vector<const void *> pointers = {big};
  std::vector<size_t> used;
  for (size_t k = 0; k < pieces.size(); ++k) {
    uint64_t bytes = pieceSizes[k] * inner * elementBytes;
    if (bytes == 0)
      continue;
    used.push_back(k);
    lengths.push_back(bytes);
    pointers.push_back(pieces[k]);
  }
  if (outer == 0 || used.empty())
    return;
  size_t word = widestWord(lengths, pointers);
  int64_t bigRowWords = 0;
  for (uint64_t bytes : lengths)
    bigRowWords += bytes / word;
  dispatchWord(word, [&](auto w) {
    using W = decltype(w);
    int64_t column = 0;
    for (size_t first = 0; first < used.size(); first += kMaxPieces) {
      PieceCopy<W> copy;
      copy.big = static_cast<W *>(big);
      copy.bigRowWords = bigRowWords;
      copy.groupStart = column;
      copy.toBig = toBig;
      for (size_t k = first; k < used.size() && copy.count < kMaxPieces; ++k) {
        copy.piece[copy.count] = static_cast<W *>(pieces[used[k]]);
        copy.start[copy.count] = column - copy.groupStart;
        column += lengths[k] / word;
        ++copy.count;
      }
      copy.groupWords = column - copy.groupStart;
      copy.start[copy.count] = copy.groupWords;
      launch(copy, outer * copy.groupWords);
    }
  });
}

//===----------------------------------------------------------------------===//
// gather
//===----------------------------------------------------------------------===//

/// How a gathered tensor [outer, count, inner] reads a table [outer, size,
/// inner] (gather reads it, scatter_add adds into it): element (o, j, r) is
/// table element (o, indices[j], r), negative indices counting from the end.
template <typename I> struct TableRows {
  const I *indices = nullptr;
  int64_t inner = 0;
  int64_t count = 0;
  int64_t size = 0;

  /// The table element of gathered element `i` in `element`; false for an
  /// index outside [-size, size).
  BRAID_HD bool element(int64_t i, int64_t &element) const {
    int64_t t = divIndex(i, inner);
    int64_t r = i - t * inner;
    int64_t o = divIndex(t, count);
    int64_t j = t - o * count;
    int64_t index = static_cast<int64_t>(indices[j]);
    if (index < 0)
      index += size;
    if (index < 0 || index >= size)
      return false;
    element = (o * size + index) * inner + r;
    return true;
  }
};

/// ONNX Gather along `axis` of x viewed as [outer, size, inner]: output
/// word i is (o, j, r) of [outer, count, innerWords], read from row
/// indices[j] (negative counts from the end). The reference throws for an
/// index outside [-size, size); a kernel cannot, so such rows are written
/// as zeros (never read or written out of bounds).
template <typename W, typename I> struct GatherRows {
  W *out = nullptr;
  const W *x = nullptr;
  /// In words: `inner` is the words of a row.
  TableRows<I> rows;

  BRAID_HD void operator()(int64_t i) const {
    int64_t from = 0;
    out[i] = rows.element(i, from) ? x[from] : W{};
  }
};

template <typename Launch>
void runGather(const TensorView &x, const TensorView &indices, int64_t axis,
               const TensorView &out, Launch &&launch) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  int64_t count = indices.numElements();
  size_t elementBytes = byteSize(x.dtype);
  uint64_t rowBytes = inner * elementBytes;
  if (outer * count * inner == 0)
    return;
  size_t word = widestWord({rowBytes}, {x.data, out.data});
  dispatchWord(word, [&](auto w) {
    using W = decltype(w);
    dispatchIndex(indices.dtype, "gather", [&](auto index) {
      using I = decltype(index);
      GatherRows<W, I> gather;
      gather.out = static_cast<W *>(out.data);
      gather.x = static_cast<const W *>(x.data);
      gather.rows.indices = static_cast<const I *>(indices.data);
      gather.rows.inner = static_cast<int64_t>(rowBytes / word);
      gather.rows.count = count;
      gather.rows.size = x.shape[axis];
      launch(gather, outer * count * gather.rows.inner);
    });
  });
}

//===----------------------------------------------------------------------===//
// scatter_add
//===----------------------------------------------------------------------===//

/// Adds `value` to `*sum`: atomically on the GPU, where threads of different
/// tokens may add into one row; plainly on the host, where the unit tests
/// run the functor one index at a time.
BRAID_HD void accumulate(float *sum, float value) {
#ifdef __CUDA_ARCH__
  atomicAdd(sum, value);
#else
  *sum += value;
#endif
}

/// scatter_add (gather's transpose) along `axis` of the result viewed as
/// [outer, size, inner]: update element i is (o, j, r) of [outer, count,
/// inner] and is added, in f32, to result element (o, indices[j], r) when
/// that element lies in the window [begin, begin + length) of the result,
/// whose f32 sums `sums` holds. The reference throws for an index outside
/// [-size, size); a kernel cannot, so such updates are dropped (never read
/// or written out of bounds).
template <typename T, typename I> struct ScatterAddRows {
  float *sums = nullptr;
  const T *updates = nullptr;
  TableRows<I> rows;
  int64_t begin = 0;
  int64_t length = 0;

  BRAID_HD void operator()(int64_t i) const {
    int64_t target = 0;
    if (!rows.element(i, target))
      return;
    target -= begin;
    if (target < 0 || target >= length)
      return;
    accumulate(sums + target, toFloat(updates[i]));
  }
};

/// Sets `sums[i]` to zero.
struct ZeroSums {
  float *sums = nullptr;
  BRAID_HD void operator()(int64_t i) const { sums[i] = 0.f; }
};

/// Rounds the f32 sums of a window into the result's element type.
template <typename T> struct StoreSums {
  T *out = nullptr;
  const float *sums = nullptr;
  BRAID_HD void operator()(int64_t i) const { out[i] = fromFloat<T>(sums[i]); }
};

/// scatter_add of `updates` by `indices` along `axis` into `out`. f32 sums
/// straight into `out` (zeroed first); f16 and bf16 sum in f32 in `scratch`
/// (`scratchFloats` floats, the stream's workspace), one window of the
/// result at a time, each rounded once into `out`. Throws CudaError when a
/// 16-bit result needs scratch and there is none.
template <typename Launch>
void runScatterAdd(const TensorView &updates, const TensorView &indices,
                   int64_t axis, const TensorView &out, float *scratch,
                   int64_t scratchFloats, Launch &&launch) {
  int64_t inner = 1;
  for (size_t d = axis + 1; d < out.shape.size(); ++d)
    inner *= out.shape[d];
  int64_t total = out.numElements();
  int64_t numUpdates = updates.numElements();
  if (total == 0)
    return;
  dispatchFloat(out.dtype, "scatter_add", [&](auto element) {
    using T = decltype(element);
    dispatchIndex(indices.dtype, "scatter_add", [&](auto index) {
      using I = decltype(index);
      ScatterAddRows<T, I> scatter;
      scatter.updates = static_cast<const T *>(updates.data);
      scatter.rows.indices = static_cast<const I *>(indices.data);
      scatter.rows.inner = inner;
      scatter.rows.count = indices.numElements();
      scatter.rows.size = out.shape[axis];
      if constexpr (std::is_same_v<T, float>) {
        scatter.sums = static_cast<float *>(out.data);
        scatter.length = total;
        launch(ZeroSums{scatter.sums}, total);
        if (numUpdates > 0)
          launch(scatter, numUpdates);
        return;
      }
      if (scratch == nullptr || scratchFloats <= 0)
        throw CudaError("scatter_add: a " + std::string(toString(out.dtype)) +
                        " result sums in f32 workspace, and there is none");
      scatter.sums = scratch;
      for (int64_t begin = 0; begin < total; begin += scratchFloats) {
        scatter.begin = begin;
        scatter.length = std::min(scratchFloats, total - begin);
        launch(ZeroSums{scratch}, scatter.length);
        if (numUpdates > 0)
          launch(scatter, numUpdates);
        launch(StoreSums<T>{static_cast<T *>(out.data) + begin, scratch},
               scatter.length);
      }
    });
  });
}

} // namespace braid::rt::cuda::dm

#endif // BRAID_RUNTIME_CUDA_KERNELS_DATAMOVEMENTOPS_CUH
