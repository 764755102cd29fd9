//===- MoveKernels.cpp - data movement on arena memory --------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/MoveKernels.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace braid::rt::cpu {
namespace {

int64_t elementsOf(const std::vector<int64_t> &shape, size_t begin = 0) {
  int64_t n = 1;
  for (size_t d = begin; d < shape.size(); ++d)
    n *= shape[d];
  return n;
}

/// Copies the strided source described by `shape` and per-dimension source
/// strides (in elements; 0 repeats) into `dst`, densely in row-major order.
/// Dimensions of size 1 are dropped and adjacent dimensions that are
/// contiguous in the source are merged first, so the innermost loop is as
/// long as it can be and a memcpy wherever the source runs contiguously.
void copyStrided(char *dst, const char *src, std::vector<int64_t> shape,
                 std::vector<int64_t> strides, size_t size) {
  // Drop unit dimensions, then merge (outer, inner) pairs whose strides
  // make them one run.
  std::vector<int64_t> dims, steps;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!dims.empty() && steps.back() == strides[d] * shape[d]) {
      dims.back() *= shape[d];
      steps.back() = strides[d];
      continue;
    }
    dims.push_back(shape[d]);
    steps.push_back(strides[d]);
  }
  if (dims.empty()) {
    std::memcpy(dst, src, size);
    return;
  }
  int64_t total = elementsOf(dims);
  if (total == 0)
    return;
  int64_t inner = dims.back(), innerStep = steps.back();
  int64_t rows = total / inner;
  size_t rank = dims.size();
  std::vector<int64_t> index(rank, 0);
  const char *rowSource = src;
  for (int64_t r = 0; r < rows; ++r) {
    if (innerStep == 1) {
      std::memcpy(dst, rowSource, static_cast<size_t>(inner) * size);
    } else if (innerStep == 0) {
      for (int64_t j = 0; j < inner; ++j)
        std::memcpy(dst + j * size, rowSource, size);
    } else {
      int64_t stride = innerStep * static_cast<int64_t>(size);
      switch (size) {
      case 4:
        for (int64_t j = 0; j < inner; ++j)
          std::memcpy(dst + j * 4, rowSource + j * stride, 4);
        break;
      case 8:
        for (int64_t j = 0; j < inner; ++j)
          std::memcpy(dst + j * 8, rowSource + j * stride, 8);
        break;
      case 2:
        for (int64_t j = 0; j < inner; ++j)
          std::memcpy(dst + j * 2, rowSource + j * stride, 2);
        break;
      default:
        for (int64_t j = 0; j < inner; ++j)
          std::memcpy(dst + j * size, rowSource + j * stride, size);
      }
    }
    dst += inner * static_cast<int64_t>(size);
    // Next row: the odometer over every dimension but the innermost.
    for (size_t d = rank - 1; d-- > 0;) {
      rowSource += steps[d] * static_cast<int64_t>(size);
      if (++index[d] < dims[d])
        break;
      rowSource -= steps[d] * dims[d] * static_cast<int64_t>(size);
      index[d] = 0;
    }
  }
}

/// Row-major strides, in elements, of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

} // namespace

void transposeBytes(const TensorView &x, const std::vector<int64_t> &permutation,
                    const TensorView &out) {
  std::vector<int64_t> from = stridesOf(x.shape), strides;
  for (int64_t p : permutation)
    strides.push_back(from[p]);
  copyStrided(static_cast<char *>(out.data), static_cast<const char *>(x.data),
              out.shape, strides, byteSize(x.dtype));
}

void sliceBytes(const TensorView &x, const std::vector<int64_t> &offsets,
                const std::vector<int64_t> &strides, const TensorView &out) {
  std::vector<int64_t> from = stridesOf(x.shape), steps(from.size());
  int64_t start = 0;
  for (size_t d = 0; d < from.size(); ++d) {
    start += offsets[d] * from[d];
    steps[d] = strides[d] * from[d];
  }
  size_t size = byteSize(x.dtype);
  if (out.numElements() == 0)
    return;
  copyStrided(static_cast<char *>(out.data),
              static_cast<const char *>(x.data) + start * size, out.shape,
              steps, size);
}

namespace {
/// Concatenation and its inverse: `pieces` side by side along `dim` of
/// `whole` (pieces[i] holds `whole`'s dimension `dim` positions after those
/// of the pieces before it). `join` copies pieces into whole, else whole
/// into pieces.
void joinOrSplit(const TensorView &whole, int64_t dim,
                 const std::vector<TensorView> &pieces, bool join) {
  size_t size = byteSize(whole.dtype);
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= whole.shape[d];
  int64_t wholeRow = elementsOf(whole.shape, dim) * static_cast<int64_t>(size);
  int64_t at = 0;
  for (const TensorView &piece : pieces) {
    int64_t row = elementsOf(piece.shape, dim) * static_cast<int64_t>(size);
    char *w = static_cast<char *>(whole.data) + at;
    char *p = static_cast<char *>(piece.data);
    for (int64_t o = 0; o < outer; ++o) {
      if (join)
        std::memcpy(w + o * wholeRow, p + o * row, row);
      else
        std::memcpy(p + o * row, w + o * wholeRow, row);
    }
    at += row;
  }
}
} // namespace

void concatBytes(const std::vector<TensorView> &inputs, int64_t dim,
                 const TensorView &out) {
  joinOrSplit(out, dim, inputs, /*join=*/true);
}

void splitBytes(const TensorView &x, int64_t dim,
                const std::vector<TensorView> &outputs) {
  joinOrSplit(x, dim, outputs, /*join=*/false);
}

void broadcastBytes(const TensorView &x, const TensorView &out) {
  std::vector<int64_t> from = stridesOf(x.shape);
  size_t lead = out.shape.size() - x.shape.size();
  std::vector<int64_t> strides(out.shape.size(), 0);
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (x.shape[d] != 1)
      strides[lead + d] = from[d];
  if (out.numElements() == 0)
    return;
  copyStrided(static_cast<char *>(out.data), static_cast<const char *>(x.data),
              out.shape, strides, byteSize(x.dtype));
}

void gatherBytes(const TensorView &x, const TensorView &indices, int64_t axis,
                 const TensorView &out) {
  int64_t count = indices.numElements();
  int64_t rowsAlong = x.shape[axis];
  std::vector<int64_t> rows(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t) {
    int64_t index = indices.dtype == DType::I32
                        ? static_cast<int64_t>(indices.as<int32_t>()[t])
                        : indices.as<int64_t>()[t];
    if (index < -rowsAlong || index >= rowsAlong)
      throw std::invalid_argument(
          "gather: index " + std::to_string(index) +
          " is out of range for dimension " + std::to_string(axis) +
          " of size " + std::to_string(rowsAlong));
    rows[t] = index < 0 ? index + rowsAlong : index;
  }
  size_t size = byteSize(x.dtype);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.shape[d];
  int64_t inner = elementsOf(x.shape, axis + 1) * static_cast<int64_t>(size);
  const char *src = static_cast<const char *>(x.data);
  char *dst = static_cast<char *>(out.data);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t t = 0; t < count; ++t, dst += inner)
      std::memcpy(dst, src + (o * rowsAlong + rows[t]) * inner, inner);
}

} // namespace braid::rt::cpu
