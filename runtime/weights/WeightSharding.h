//===- WeightSharding.h - the slice of a weight one rank holds --*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// A plan says, per dimension of a weight, which mesh axes split it (none:
// replicated). Along a dimension split over axes (a0, a1, ...), a rank holds
// slice number `row-major coordinate of the rank over (a0, a1, ...)` of
// `size / (|a0| * |a1| * ...)` elements: a0 cuts the dimension into blocks
// and a1 cuts each of those. Listed in mesh order, that is also the rank's
// position in the collective group of those axes; ZeRO under tensor
// parallelism lists dp after tp (each dp rank's piece of a tp rank's
// block), and gathers it over dp only.
//
// A plan may read only a block (a box) of a weight; the sharding then splits
// the block, and a rank holds the block's offset plus its slice of the block.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_WEIGHTS_WEIGHTSHARDING_H
#define BRAID_RUNTIME_WEIGHTS_WEIGHTSHARDING_H

#include "runtime/comm/Communicator.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace braid::rt {

/// Per dimension, the mesh axes that split it; empty: replicated. An empty
/// list of dimensions means the whole weight is replicated.
using DimAxes = std::vector<std::vector<std::string>>;

/// The box of a full tensor that one rank holds.
struct ShardRegion {
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;
};

/// The shape of one rank's shard. Throws std::invalid_argument (with the
/// dimension, axis and sizes) unless `dimAxes` is empty or has one entry per
/// dimension, every axis exists in the mesh, no axis is used twice and every
/// split dimension divides evenly.
std::vector<int64_t> shardShape(const std::vector<int64_t> &fullShape,
                                const DimAxes &dimAxes, const MeshShape &mesh);

/// The box that covers the whole tensor of `shape`.
ShardRegion wholeTensor(const std::vector<int64_t> &shape);

/// The region of the full tensor that `rank` holds of `block`, a box of the
/// full tensor that the plan loader checked to lie inside it: the block's
/// offsets plus the rank's slice of a tensor of the block's sizes. Checks the
/// sharding against the block's sizes as shardShape does.
ShardRegion shardRegion(const ShardRegion &block, const DimAxes &dimAxes,
                        const MeshShape &mesh, int64_t rank);

/// The region of the full tensor that `rank` holds when the whole tensor is
/// sharded; checks as shardShape.
ShardRegion shardRegion(const std::vector<int64_t> &fullShape,
                        const DimAxes &dimAxes, const MeshShape &mesh,
                        int64_t rank);

/// Copies `region` of the row-major tensor `source` (of `fullShape`, elements
/// of `elementBytes`) into the dense row-major `destination`. `copied`, when
/// given, is called as the copy moves through `source` with the byte offset
/// below which it has read everything it will (in increasing order).
void copyRegion(const void *source, const std::vector<int64_t> &fullShape,
                size_t elementBytes, const ShardRegion &region,
                void *destination,
                const std::function<void(size_t)> &copied = nullptr);

/// The inverse of copyRegion: writes the dense row-major `source` (the
/// region's shape) into `region` of the row-major tensor `destination` of
/// `fullShape` (a checkpoint puts each rank's shard back into the whole
/// weight this way).
void placeRegion(const void *source, const std::vector<int64_t> &fullShape,
                 size_t elementBytes, const ShardRegion &region,
                 void *destination);

} // namespace braid::rt

#endif // BRAID_RUNTIME_WEIGHTS_WEIGHTSHARDING_H
