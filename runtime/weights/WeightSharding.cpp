//===- WeightSharding.cpp - the slice of a weight one rank holds ----------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/weights/WeightSharding.h"

#include <cstring>
#include <stdexcept>

namespace braid::rt {

namespace {
int64_t axisPosition(const MeshShape &mesh, const std::string &axis) {
  for (size_t i = 0; i < mesh.axisNames.size(); ++i)
    if (mesh.axisNames[i] == axis)
      return static_cast<int64_t>(i);
  return -1;
}

/// Checks `dimAxes` against the shape and mesh; returns, per dimension, the
/// number of slices.
std::vector<int64_t> sliceCounts(const std::vector<int64_t> &fullShape,
                                 const DimAxes &dimAxes,
                                 const MeshShape &mesh) {
  size_t rank = fullShape.size();
  std::vector<int64_t> counts(rank, 1);
  if (dimAxes.empty())
    return counts;
  if (dimAxes.size() != rank)
    throw std::invalid_argument(
        "sharding has " + std::to_string(dimAxes.size()) +
        " entries for a tensor of rank " + std::to_string(rank));
  std::vector<bool> used(mesh.axisNames.size(), false);
  for (size_t d = 0; d < rank; ++d) {
    for (const std::string &axis : dimAxes[d]) {
      int64_t position = axisPosition(mesh, axis);
      if (position < 0)
        throw std::invalid_argument("dimension " + std::to_string(d) +
                                    " is split over axis '" + axis +
                                    "', which the mesh does not have");
      if (used[position])
        throw std::invalid_argument("axis '" + axis +
                                    "' splits more than one dimension or "
                                    "splits one twice");
      used[position] = true;
      counts[d] *= mesh.axisSizes[position];
    }
    if (fullShape[d] % counts[d] != 0)
      throw std::invalid_argument("dimension " + std::to_string(d) +
                                  " of size " + std::to_string(fullShape[d]) +
                                  " does not split evenly into " +
                                  std::to_string(counts[d]) + " slices");
  }
  return counts;
}
} // namespace

std::vector<int64_t> shardShape(const std::vector<int64_t> &fullShape,
                                const DimAxes &dimAxes, const MeshShape &mesh) {
  std::vector<int64_t> counts = sliceCounts(fullShape, dimAxes, mesh);
  std::vector<int64_t> shape(fullShape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    shape[d] = fullShape[d] / counts[d];
  return shape;
}

ShardRegion wholeTensor(const std::vector<int64_t> &shape) {
  return ShardRegion{std::vector<int64_t>(shape.size(), 0), shape};
}

ShardRegion shardRegion(const ShardRegion &block, const DimAxes &dimAxes,
                        const MeshShape &mesh, int64_t rank) {
  ShardRegion region;
  region.sizes = shardShape(block.sizes, dimAxes, mesh);
  region.offsets = block.offsets;
  if (dimAxes.empty())
    return region;
  for (size_t d = 0; d < block.sizes.size(); ++d) {
    int64_t index = 0;
    for (const std::string &axis : dimAxes[d]) {
      int64_t position = axisPosition(mesh, axis);
      index = index * mesh.axisSizes[position] + mesh.coordinate(rank, axis);
    }
    region.offsets[d] += index * region.sizes[d];
  }
  return region;
}

ShardRegion shardRegion(const std::vector<int64_t> &fullShape,
                        const DimAxes &dimAxes, const MeshShape &mesh,
                        int64_t rank) {
  return shardRegion(wholeTensor(fullShape), dimAxes, mesh, rank);
}

namespace {
/// Calls `run(offsetInFull, offsetInRegion, bytes)` for every contiguous run
/// (along the last dimension) of `region` in a row-major tensor of
/// `fullShape`; offsets in bytes.
template <typename Run>
void forEachRun(const std::vector<int64_t> &fullShape, size_t elementBytes,
                const ShardRegion &region, Run &&run) {
  size_t rank = fullShape.size();
  int64_t total = 1;
  for (int64_t size : region.sizes)
    total *= size;
  if (total == 0)
    return;
  if (rank == 0) {
    run(0, 0, elementBytes);
    return;
  }
  // Step through the leading dimensions like an odometer.
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * fullShape[d + 1];
  size_t runBytes = static_cast<size_t>(region.sizes[rank - 1]) * elementBytes;
  std::vector<int64_t> index(rank, 0);
  size_t inRegion = 0;
  for (int64_t r = 0; r < total / region.sizes[rank - 1]; ++r) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset += (region.offsets[d] + index[d]) * strides[d];
    run(static_cast<size_t>(offset) * elementBytes, inRegion, runBytes);
    inRegion += runBytes;
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
      if (++index[d] < region.sizes[d])
        break;
      index[d] = 0;
    }
  }
}
} // namespace

void copyRegion(const void *source, const std::vector<int64_t> &fullShape,
                size_t elementBytes, const ShardRegion &region,
                void *destination, const std::function<void(size_t)> &copied) {
  auto *src = static_cast<const char *>(source);
  auto *dst = static_cast<char *>(destination);
  forEachRun(fullShape, elementBytes, region,
             [&](size_t inFull, size_t inRegion, size_t bytes) {
               std::memcpy(dst + inRegion, src + inFull, bytes);
               if (copied)
                 copied(inFull + bytes);
             });
}

void placeRegion(const void *source, const std::vector<int64_t> &fullShape,
                 size_t elementBytes, const ShardRegion &region,
                 void *destination) {
  auto *src = static_cast<const char *>(source);
  auto *dst = static_cast<char *>(destination);
  forEachRun(fullShape, elementBytes, region,
             [&](size_t inFull, size_t inRegion, size_t bytes) {
               std::memcpy(dst + inFull, src + inRegion, bytes);
             });
}

} // namespace braid::rt
