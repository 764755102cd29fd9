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

} // namespace braid::rt
