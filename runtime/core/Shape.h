//===- Shape.h - shape arithmetic shared by the kernels ---------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CORE_SHAPE_H
#define BRAID_RUNTIME_CORE_SHAPE_H

#include <cstdint>
#include <optional>
#include <vector>

namespace braid::rt {

using Shape = std::vector<int64_t>;

/// Numpy broadcast of two shapes, or nullopt when they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// Whether `shape` broadcasts numpy-style to exactly `target`.
bool broadcastsTo(const Shape &shape, const Shape &target);

} // namespace braid::rt

#endif // BRAID_RUNTIME_CORE_SHAPE_H
