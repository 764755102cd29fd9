//===- Shape.cpp - shape arithmetic shared by the kernels -----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Shape.h"

#include <algorithm>

namespace braid::rt {

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t sa = d < rank - a.size() ? 1 : a[d - (rank - a.size())];
    int64_t sb = d < rank - b.size() ? 1 : b[d - (rank - b.size())];
    if (sa != sb && sa != 1 && sb != 1)
      return std::nullopt;
    result[d] = sa == 1 ? sb : sa;
  }
  return result;
}

bool broadcastsTo(const Shape &shape, const Shape &target) {
  if (shape.size() > target.size())
    return false;
  size_t offset = target.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && shape[d] != target[d + offset])
      return false;
  return true;
}

std::optional<uint64_t> checkedByteSize(const Shape &shape,
                                        size_t elementBytes) {
  int64_t bytes = static_cast<int64_t>(elementBytes);
  bool empty = false;
  for (int64_t size : shape) {
    empty |= size == 0;
    if (size != 0 && __builtin_mul_overflow(bytes, size, &bytes))
      return std::nullopt;
  }
  return empty ? 0 : static_cast<uint64_t>(bytes);
}

} // namespace braid::rt
