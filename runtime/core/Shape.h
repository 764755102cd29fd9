//===- Shape.h - shape arithmetic shared by the kernels ---------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CORE_SHAPE_H
#define BRAID_RUNTIME_CORE_SHAPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace braid::rt {

using Shape = std::vector<int64_t>;

/// Numpy broadcast of two shapes, or nullopt when they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// Whether `shape` broadcasts numpy-style to exactly `target`.
bool broadcastsTo(const Shape &shape, const Shape &target);

/// The bytes of a tensor of `shape` (sizes >= 0) with elements of
/// `elementBytes`, or nullopt when its non-zero sizes times `elementBytes`
/// multiply to more than INT64_MAX. Within that bound every product of some
/// of the sizes (an element count, a stride, a block, in any order) fits in
/// int64, even for an empty tensor.
std::optional<uint64_t> checkedByteSize(const Shape &shape,
                                        size_t elementBytes);

} // namespace braid::rt

#endif // BRAID_RUNTIME_CORE_SHAPE_H
