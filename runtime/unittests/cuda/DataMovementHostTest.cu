//===- DataMovementHostTest.cu - data-movement functors vs the reference --===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Runs the drivers and functors of DataMovementOps.cuh on the host (the
// tiled transpose through a host emulation that uses the same TileMap) and
// compares transpose, slice, broadcast_to, concat, split, gather and
// scatter_add with the reference kernels on random data: every element type
// (so every word size), ranks 0 and 1, aligned and misaligned buffers, more
// pieces than one launch takes.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/kernels/DataMovementOps.cuh"
#include "runtime/kernels/ElementIO.h"
#include "runtime/reference/ReferenceKernels.h"

#include "HostBuffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace braid::rt;
namespace dm = braid::rt::cuda::dm;
using Shape = std::vector<int64_t>;

const DType kAllTypes[] = {DType::F32, DType::F16, DType::BF16,
                           DType::I64, DType::I32, DType::I1};

/// Runs functors on the host, copies with memmove; counts the functor
/// indices of the last launch and the launches.
struct HostLaunch {
  int64_t *count = nullptr;
  int *launches = nullptr;
  template <typename F> void operator()(const F &functor, int64_t n) const {
    if (count)
      *count = n;
    if (launches)
      ++*launches;
    cuda::runOnHost(functor, n);
  }
  void copy(void *dst, const void *src, uint64_t bytes) const {
    if (launches)
      ++*launches;
    std::memmove(dst, src, bytes);
  }
};

using Buffer = braid::rt::test::HostBuffer;
using braid::rt::test::isFloatType;
using braid::rt::test::numElements;

ref::Tensor randomTensor(std::mt19937 &rng, DType dtype, const Shape &shape) {
  int64_t n = numElements(shape);
  if (isFloatType(dtype)) {
    std::uniform_real_distribution<double> dist(-100, 100);
    std::vector<double> values(n);
    for (double &v : values)
      v = dist(rng);
    return ref::Tensor::ofFloats(dtype, shape, values);
  }
  std::uniform_int_distribution<int64_t> dist(dtype == DType::I1 ? 0 : -1000000,
                                              dtype == DType::I1 ? 1 : 1000000);
  std::vector<int64_t> values(n);
  for (int64_t &v : values)
    v = dist(rng);
  return ref::Tensor::ofInts(dtype, shape, values);
}

void expectEqual(const ref::Tensor &got, const ref::Tensor &want,
                 const std::string &what) {
  ASSERT_EQ(got.dtype, want.dtype) << what;
  ASSERT_EQ(got.shape, want.shape) << what;
  if (want.isFloat())
    EXPECT_EQ(got.f, want.f) << what;
  else
    EXPECT_EQ(got.i, want.i) << what;
}

std::string describe(const std::string &op, DType dtype, const Shape &shape,
                     bool misalign) {
  return op + " " + std::string(toString(dtype)) + " " + shapeToString(shape) +
         (misalign ? " (misaligned)" : "");
}

/// The strided driver on the host, tiles emulated.
void runStrided(const TensorView &out, const void *in, const cuda::Dims &dims,
                HostLaunch launch = {}) {
  dm::runStrided(byteSize(out.dtype), out.data, in, dims, launch,
                 dm::HostTiles{out.data, in});
}

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

void checkTranspose(std::mt19937 &rng, const Shape &shape,
                    const Shape &permutation) {
  Shape outShape;
  for (int64_t p : permutation)
    outShape.push_back(shape[p]);
  for (DType dtype : kAllTypes)
    for (bool misalign : {false, true}) {
      ref::Tensor x = randomTensor(rng, dtype, shape);
      Buffer in(x, misalign), out(dtype, outShape, misalign);
      runStrided(out.view, in.view.data, dm::transposeDims(shape, permutation));
      expectEqual(out.read(), ref::transpose(x, permutation),
                  describe("transpose", dtype, shape, misalign) + " by " +
                      shapeToString(permutation));
    }
}

TEST(DataMovementHost, TransposeSmall) {
  std::mt19937 rng(1);
  checkTranspose(rng, {}, {});
  checkTranspose(rng, {5}, {0});
  checkTranspose(rng, {3, 4}, {1, 0});
  checkTranspose(rng, {1, 7}, {1, 0});
  checkTranspose(rng, {0, 3}, {1, 0});
  // Every permutation of a rank-4 tensor.
  Shape permutation = {0, 1, 2, 3};
  do
    checkTranspose(rng, {2, 3, 4, 5}, permutation);
  while (std::next_permutation(permutation.begin(), permutation.end()));
}

TEST(DataMovementHost, TransposeTiledAndPacked) {
  std::mt19937 rng(2);
  checkTranspose(rng, {40, 50}, {1, 0});             // tiles, partial edges
  checkTranspose(rng, {64, 32}, {1, 0});             // full tiles
  checkTranspose(rng, {2, 33, 3, 40}, {0, 3, 2, 1}); // tiles in a batch
  checkTranspose(rng, {3, 20, 17}, {2, 0, 1});       // tiles, batch in between
  checkTranspose(rng, {4, 16, 8, 64}, {0, 2, 1, 3}); // heads swap: packs
  checkTranspose(rng, {2, 5, 3, 16}, {2, 1, 0, 3});
}

TEST(DataMovementHost, TransposePlans) {
  std::mt19937 rng(3);
  auto plan = [](const Shape &shape, const Shape &permutation) {
    return dm::planStrided(dm::transposeDims(shape, permutation)).kind;
  };
  EXPECT_EQ(plan({40, 50}, {1, 0}), dm::StridedPlan::Tiled);
  EXPECT_EQ(plan({3, 4}, {1, 0}), dm::StridedPlan::Strided);
  EXPECT_EQ(plan({4, 16, 8, 64}, {0, 2, 1, 3}), dm::StridedPlan::Strided);
  // Size-1 dimensions moved around: a plain copy.
  EXPECT_EQ(plan({1, 7, 1, 9}, {2, 1, 3, 0}), dm::StridedPlan::Contiguous);
  EXPECT_EQ(plan({0, 4}, {1, 0}), dm::StridedPlan::Empty);
  // [4, 16, 8, 64] f32 -> 16-byte packs: 4 elements per index.
  Buffer in(randomTensor(rng, DType::F32, {4, 16, 8, 64}), false),
      out(DType::F32, {4, 8, 16, 64}, false);
  int64_t count = 0;
  runStrided(out.view, in.view.data,
             dm::transposeDims({4, 16, 8, 64}, {0, 2, 1, 3}),
             HostLaunch{&count});
  EXPECT_EQ(count, 4 * 16 * 8 * 64 / 4);
}

//===----------------------------------------------------------------------===//
// slice, broadcast_to
//===----------------------------------------------------------------------===//

TEST(DataMovementHost, SliceRandom) {
  std::mt19937 rng(4);
  const Shape shapes[] = {{}, {1}, {17}, {6, 40}, {3, 4, 5}, {2, 3, 4, 32}};
  for (const Shape &shape : shapes)
    for (int trial = 0; trial < 20; ++trial) {
      size_t rank = shape.size();
      Shape offsets(rank), sizes(rank), strides(rank), staticOffsets(rank);
      std::vector<int64_t> indices;
      for (size_t d = 0; d < rank; ++d) {
        strides[d] = trial % 3 == 0 ? 1 : 1 + rng() % 3;
        offsets[d] = rng() % shape[d];
        int64_t room = (shape[d] - offsets[d] - 1) / strides[d] + 1;
        sizes[d] = trial % 4 == 1 ? room : rng() % (room + 1);
        staticOffsets[d] = offsets[d];
        if (rng() % 3 == 0) {
          staticOffsets[d] = dm::kDynamic;
          indices.push_back(offsets[d]);
        }
      }
      for (DType dtype : kAllTypes)
        for (bool misalign : {false, true}) {
          ref::Tensor x = randomTensor(rng, dtype, shape);
          Buffer in(x, misalign), out(dtype, sizes, misalign);
          int64_t base = 0;
          cuda::Dims dims = dm::sliceDims(shape, staticOffsets, sizes, strides,
                                          indices, base);
          runStrided(out.view,
                     static_cast<const char *>(in.view.data) +
                         base * byteSize(dtype),
                     dims);
          expectEqual(out.read(), ref::slice(x, offsets, sizes, strides),
                      describe("slice", dtype, shape, misalign) + " offsets " +
                          shapeToString(offsets) + " sizes " +
                          shapeToString(sizes) + " strides " +
                          shapeToString(strides));
        }
    }
}

TEST(DataMovementHost, SliceOutOfRangeThrows) {
  int64_t base = 0;
  // A dynamic offset past the end, and a negative one.
  EXPECT_THROW(
      dm::sliceDims({10, 4}, {dm::kDynamic, 0}, {3, 4}, {1, 1}, {8}, base),
      std::out_of_range);
  EXPECT_THROW(
      dm::sliceDims({10, 4}, {dm::kDynamic, 0}, {3, 4}, {1, 1}, {-1}, base),
      std::out_of_range);
  EXPECT_NO_THROW(
      dm::sliceDims({10, 4}, {dm::kDynamic, 0}, {3, 4}, {1, 1}, {7}, base));
  EXPECT_EQ(base, 28);
}

TEST(DataMovementHost, BroadcastTo) {
  struct Case {
    Shape from, to;
  };
  const Case cases[] = {
      {{}, {}},
      {{}, {5}},
      {{1}, {33}},
      {{3}, {4, 3}},
      {{64}, {3, 64}},
      {{6, 1}, {6, 16}},
      {{2, 1, 4}, {2, 3, 4}},
      {{1, 5, 1}, {4, 5, 3}},
      {{7}, {0, 7}},
      {{5, 3}, {5, 3}},
      {{1, 1, 32}, {2, 3, 32}},
  };
  std::mt19937 rng(5);
  for (const Case &c : cases)
    for (DType dtype : kAllTypes)
      for (bool misalign : {false, true}) {
        ref::Tensor x = randomTensor(rng, dtype, c.from);
        Buffer in(x, misalign), out(dtype, c.to, misalign);
        runStrided(out.view, in.view.data, cuda::broadcastDims(c.from, c.to));
        expectEqual(out.read(), ref::broadcastTo(x, c.to),
                    describe("broadcast_to", dtype, c.from, misalign) + " to " +
                        shapeToString(c.to));
      }
}

//===----------------------------------------------------------------------===//
// concat, split
//===----------------------------------------------------------------------===//

/// Shapes of the pieces: `base` with dimension `dim` set to each size.
std::vector<Shape> pieceShapes(const Shape &base, int64_t dim,
                               const std::vector<int64_t> &sizes) {
  std::vector<Shape> shapes;
  for (int64_t size : sizes) {
    Shape shape = base;
    shape[dim] = size;
    shapes.push_back(shape);
  }
  return shapes;
}

struct PiecesCase {
  Shape base;
  int64_t dim;
  std::vector<int64_t> sizes;
};

std::vector<PiecesCase> piecesCases() {
  std::vector<PiecesCase> cases = {
      {{5}, 0, {5}},
      {{0}, 0, {2, 3, 1}},
      {{4, 0}, 1, {8, 8}},
      {{0, 6}, 0, {3, 0, 2}},
      {{3, 0, 4}, 1, {2, 5, 1}},
      {{2, 0, 16}, 1, {1, 2, 3}},
      {{2, 3, 0}, 2, {64, 32, 128}},
      {{2, 3, 0}, 2, {7, 3, 1}},
      {{0, 2, 5}, 0, {1, 1, 2, 1}},
      {{4, 0}, 1, {0, 3, 0}},
  };
  // More pieces than one launch takes, some empty.
  std::vector<int64_t> many;
  for (int k = 0; k < 70; ++k)
    many.push_back(k % 5 == 0 ? 0 : 1 + k % 3);
  cases.push_back({{3, 0, 2}, 1, many});
  cases.push_back({{0}, 0, many});
  return cases;
}

TEST(DataMovementHost, Concat) {
  std::mt19937 rng(6);
  for (const PiecesCase &c : piecesCases())
    for (DType dtype : kAllTypes)
      for (bool misalign : {false, true}) {
        std::vector<ref::Tensor> inputs;
        std::vector<Buffer> buffers;
        std::vector<void *> pointers;
        for (const Shape &shape : pieceShapes(c.base, c.dim, c.sizes))
          inputs.push_back(randomTensor(rng, dtype, shape));
        buffers.reserve(inputs.size());
        for (const ref::Tensor &input : inputs) {
          buffers.emplace_back(input, misalign);
          pointers.push_back(buffers.back().view.data);
        }
        Shape outShape = c.base;
        outShape[c.dim] =
            std::accumulate(c.sizes.begin(), c.sizes.end(), int64_t(0));
        Buffer out(dtype, outShape, misalign);
        dm::runPieces(true, out.view.data, outShape, byteSize(dtype), c.dim,
                      pointers, c.sizes, HostLaunch{});
        expectEqual(out.read(), ref::concat(inputs, c.dim),
                    describe("concat", dtype, outShape, misalign) + " along " +
                        std::to_string(c.dim));
      }
}

TEST(DataMovementHost, Split) {
  std::mt19937 rng(7);
  for (const PiecesCase &c : piecesCases())
    for (DType dtype : kAllTypes)
      for (bool misalign : {false, true}) {
        Shape inShape = c.base;
        inShape[c.dim] =
            std::accumulate(c.sizes.begin(), c.sizes.end(), int64_t(0));
        ref::Tensor x = randomTensor(rng, dtype, inShape);
        Buffer in(x, misalign);
        std::vector<Buffer> outs;
        std::vector<void *> pointers;
        std::vector<Shape> shapes = pieceShapes(c.base, c.dim, c.sizes);
        outs.reserve(shapes.size());
        for (const Shape &shape : shapes) {
          outs.emplace_back(dtype, shape, misalign);
          pointers.push_back(outs.back().view.data);
        }
        dm::runPieces(false, in.view.data, inShape, byteSize(dtype), c.dim,
                      pointers, c.sizes, HostLaunch{});
        std::vector<ref::Tensor> want = ref::split(x, c.dim, c.sizes);
        for (size_t k = 0; k < outs.size(); ++k)
          expectEqual(outs[k].read(), want[k],
                      describe("split", dtype, inShape, misalign) + " piece " +
                          std::to_string(k));
      }
}

TEST(DataMovementHost, PiecesUseWideWords) {
  std::mt19937 rng(8);
  // [4, 24] f32 + [4, 8] f32 along 1: rows of 96 and 32 bytes -> 16-byte
  // words, 8 of them per output row, one launch.
  Buffer a(randomTensor(rng, DType::F32, {4, 24}), false),
      b(randomTensor(rng, DType::F32, {4, 8}), false),
      out(DType::F32, {4, 32}, false);
  int64_t count = 0;
  int launches = 0;
  dm::runPieces(true, out.view.data, {4, 32}, 4, 1, {a.view.data, b.view.data},
                {24, 8}, HostLaunch{&count, &launches});
  EXPECT_EQ(count, 4 * 8);
  EXPECT_EQ(launches, 1);
  // 70 pieces: three launches (32 + 32 + 6 non-empty pieces at most).
  std::vector<Buffer> pieces;
  std::vector<void *> pointers;
  std::vector<int64_t> sizes(70, 1);
  pieces.reserve(70);
  for (int k = 0; k < 70; ++k) {
    pieces.emplace_back(DType::F32, Shape{2, 1}, false);
    pointers.push_back(pieces.back().view.data);
  }
  Buffer big(DType::F32, {2, 70}, false);
  launches = 0;
  dm::runPieces(false, big.view.data, {2, 70}, 4, 1, pointers, sizes,
                HostLaunch{nullptr, &launches});
  EXPECT_EQ(launches, 3);
}

//===----------------------------------------------------------------------===//
// gather
//===----------------------------------------------------------------------===//

TEST(DataMovementHost, Gather) {
  struct Case {
    Shape x;
    int64_t axis;
    Shape indices;
  };
  const Case cases[] = {
      {{10}, 0, {}},         {{10}, 0, {4}},       {{50, 64}, 0, {7}},
      {{50, 64}, 0, {3, 5}}, {{6, 50, 8}, 1, {9}}, {{4, 6, 5}, 2, {2, 2}},
      {{5, 3}, 1, {0}},      {{5, 3}, 0, {0, 4}},  {{0, 3}, 1, {2}},
      {{3, 7, 1}, 1, {11}},
  };
  std::mt19937 rng(9);
  for (const Case &c : cases)
    for (DType dtype : kAllTypes)
      for (DType indexType : {DType::I64, DType::I32})
        for (bool misalign : {false, true}) {
          int64_t size = c.x[c.axis];
          std::vector<int64_t> values(numElements(c.indices));
          for (int64_t &v : values)
            v = static_cast<int64_t>(rng() % (2 * size)) - size;
          ref::Tensor x = randomTensor(rng, dtype, c.x);
          ref::Tensor indices =
              ref::Tensor::ofInts(indexType, c.indices, values);
          Shape outShape(c.x.begin(), c.x.begin() + c.axis);
          outShape.insert(outShape.end(), c.indices.begin(), c.indices.end());
          outShape.insert(outShape.end(), c.x.begin() + c.axis + 1, c.x.end());
          Buffer xb(x, misalign), ib(indices, misalign),
              out(dtype, outShape, misalign);
          dm::runGather(xb.view, ib.view, c.axis, out.view, HostLaunch{});
          expectEqual(out.read(), ref::gather(x, indices, c.axis),
                      describe("gather", dtype, c.x, misalign) + " axis " +
                          std::to_string(c.axis) + " indices " +
                          std::string(toString(indexType)));
        }
}

TEST(DataMovementHost, GatherOutOfRangeWritesZeros) {
  // The reference throws; the kernel writes zero rows and stays in bounds.
  ref::Tensor x =
      ref::Tensor::ofFloats(DType::F32, {3, 4}, std::vector<double>(12, 7.0));
  ref::Tensor indices = ref::Tensor::ofInts(DType::I64, {4}, {1, 3, -4, -3});
  Buffer xb(x, false), ib(indices, false), out(DType::F32, {4, 4}, false);
  dm::runGather(xb.view, ib.view, 0, out.view, HostLaunch{});
  std::vector<double> want = {7, 7, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 7};
  EXPECT_EQ(out.read().f, want);
}

//===----------------------------------------------------------------------===//
// scatter_add
//===----------------------------------------------------------------------===//

/// Runs the scatter_add driver on the host with `scratchFloats` floats of
/// f32 scratch for 16-bit results.
ref::Tensor scatterAddOnHost(const ref::Tensor &updates,
                             const ref::Tensor &indices, int64_t axis,
                             const Shape &shape, int64_t scratchFloats,
                             bool misalign = false) {
  std::vector<float> scratch(scratchFloats);
  Buffer ub(updates, misalign), ib(indices, misalign),
      out(updates.dtype, shape, misalign);
  dm::runScatterAdd(ub.view, ib.view, axis, out.view, scratch.data(),
                    scratchFloats, HostLaunch{});
  return out.read();
}

/// The largest error the f32 sums may have against the reference's double
/// sums (rounded once), relative to the largest result magnitude: f32 adds;
/// one rounding step of the 16-bit types either way.
double scatterAddTolerance(DType dtype) {
  return dtype == DType::F32 ? 1e-5 : dtype == DType::F16 ? 0x1p-10 : 0x1p-7;
}

TEST(DataMovementHost, ScatterAdd) {
  struct Case {
    Shape out;
    int64_t axis;
    Shape indices;
  };
  const Case cases[] = {
      {{10, 8}, 0, {4, 6}}, {{3, 5, 4}, 1, {7}}, {{4, 6, 5}, 2, {2, 3}},
      {{6}, 0, {9}},        {{5, 3}, 0, {}},     {{5, 3}, 1, {0}},
      {{0, 3}, 1, {2}},
  };
  std::mt19937 rng(18);
  for (const Case &c : cases)
    for (DType dtype : {DType::F32, DType::F16, DType::BF16})
      for (DType indexType : {DType::I64, DType::I32})
        for (bool misalign : {false, true}) {
          // Indices in [-size, size): repeated, negative, all in range.
          int64_t size = std::max<int64_t>(c.out[c.axis], 1);
          std::vector<int64_t> values(numElements(c.indices));
          for (int64_t &v : values)
            v = static_cast<int64_t>(rng() % (2 * size)) - size;
          ref::Tensor indices =
              ref::Tensor::ofInts(indexType, c.indices, values);
          ref::Tensor updates = randomTensor(
              rng, dtype, ref::gatheredShape(c.out, c.indices, c.axis));
          ref::Tensor want =
              ref::scatterAdd(updates, indices, c.axis, c.out);
          std::string what = describe("scatter_add", dtype, c.out, misalign) +
                             " axis " + std::to_string(c.axis) + " indices " +
                             std::string(toString(indexType));
          // Scratch for the whole result, and a small one: several windows.
          for (int64_t scratchFloats : {int64_t(4096), int64_t(7)}) {
            ref::Tensor got = scatterAddOnHost(updates, indices, c.axis, c.out,
                                               scratchFloats, misalign);
            ASSERT_EQ(got.shape, want.shape) << what;
            double scale = 0, worst = 0;
            for (size_t k = 0; k < want.f.size(); ++k) {
              scale = std::max(scale, std::fabs(want.f[k]));
              worst = std::max(worst, std::fabs(got.f[k] - want.f[k]));
            }
            EXPECT_LE(worst, scatterAddTolerance(dtype) * scale)
                << what << " scratch " << scratchFloats;
          }
        }
}

TEST(DataMovementHost, ScatterAddSumsSixteenBitTypesInF32) {
  // 256 + 1 + 1: bf16 has 8 significant bits, so adding in bf16 would stay
  // at 256; the f32 sum is 258, which bf16 holds. Windows of 1 float.
  ref::Tensor updates = ref::Tensor::ofFloats(DType::BF16, {3}, {256, 1, 1});
  ref::Tensor indices = ref::Tensor::ofInts(DType::I64, {3}, {-2, 0, 0});
  EXPECT_EQ(scatterAddOnHost(updates, indices, 0, {2}, 1).f,
            (std::vector<double>{258, 0}));
  // Without scratch a 16-bit result cannot be summed: an error, not a guess.
  EXPECT_THROW(scatterAddOnHost(updates, indices, 0, {2}, 0), cuda::CudaError);
}

TEST(DataMovementHost, ScatterAddDropsIndicesOutOfRange) {
  // The reference throws; the kernel adds nothing for them, in bounds.
  ref::Tensor updates =
      ref::Tensor::ofFloats(DType::F32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  ref::Tensor indices = ref::Tensor::ofInts(DType::I64, {4}, {1, 3, -4, -3});
  EXPECT_EQ(scatterAddOnHost(updates, indices, 0, {3, 2}, 0).f,
            (std::vector<double>{7, 8, 1, 2, 0, 0}));
}

} // namespace
