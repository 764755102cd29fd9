//===- ArenaPacking.cpp - first-fit packing of live ranges ----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/ArenaPacking.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <vector>

using namespace mlir::braid;

namespace {
int64_t alignUp(int64_t n, int64_t alignment) {
  return (std::max<int64_t>(1, n) + alignment - 1) / alignment * alignment;
}

/// The key both packings sort by: persistent first, then by start, then
/// by rank.
std::tuple<int, int64_t, int64_t> startKey(const ArenaBuffer &x) {
  return std::make_tuple(x.persistent ? 0 : 1, x.start, x.rank);
}

ArenaLayout firstFitByStart(llvm::ArrayRef<ArenaBuffer> buffers,
                            int64_t alignment) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return startKey(buffers[a]) < startKey(buffers[b]);
  });
  struct Placed {
    int64_t offset, size, end;
  };
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<Placed> active;
  for (size_t i : order) {
    const ArenaBuffer &buffer = buffers[i];
    int64_t size = alignUp(buffer.bytes, alignment);
    llvm::erase_if(active,
                   [&](const Placed &b) { return b.end < buffer.start; });
    llvm::sort(active, [](const Placed &a, const Placed &b) {
      return a.offset < b.offset;
    });
    int64_t offset = 0;
    for (const Placed &b : active) {
      if (b.offset - offset >= size)
        break;
      offset = std::max(offset, b.offset + b.size);
    }
    active.push_back({offset, size, buffer.end});
    layout.offsets[i] = offset;
    layout.peak = std::max(layout.peak, offset + size);
  }
  return layout;
}

ArenaLayout greedyBySize(llvm::ArrayRef<ArenaBuffer> buffers,
                         int64_t alignment) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  // Persistent buffers first (they overlap everything), then largest first;
  // ties by the start order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ArenaBuffer &x = buffers[a], &y = buffers[b];
    if (x.persistent != y.persistent)
      return x.persistent;
    int64_t sx = alignUp(x.bytes, alignment), sy = alignUp(y.bytes, alignment);
    if (sx != sy)
      return sx > sy;
    return startKey(x) < startKey(y);
  });
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> conflicts; // offset, size
  for (size_t i : order) {
    const ArenaBuffer &buffer = buffers[i];
    int64_t size = alignUp(buffer.bytes, alignment);
    conflicts.clear();
    for (size_t j : placed) {
      const ArenaBuffer &other = buffers[j];
      if (other.start <= buffer.end && buffer.start <= other.end)
        conflicts.push_back({layout.offsets[j], alignUp(other.bytes, alignment)});
    }
    llvm::sort(conflicts);
    int64_t offset = 0;
    for (auto [at, bytes] : conflicts) {
      if (at - offset >= size)
        break;
      offset = std::max(offset, at + bytes);
    }
    layout.offsets[i] = offset;
    layout.peak = std::max(layout.peak, offset + size);
    placed.push_back(i);
  }
  return layout;
}
} // namespace

ArenaLayout mlir::braid::packArena(llvm::ArrayRef<ArenaBuffer> buffers,
                                   int64_t alignment) {
  constexpr size_t kGreedyBySizeLimit = 20000;
  ArenaLayout byStart = firstFitByStart(buffers, alignment);
  if (buffers.size() > kGreedyBySizeLimit)
    return byStart;
  ArenaLayout bySize = greedyBySize(buffers, alignment);
  return bySize.peak < byStart.peak ? bySize : byStart;
}
