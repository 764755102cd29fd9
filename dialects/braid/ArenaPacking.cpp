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

/// A placed buffer: bytes [offset, top) of the arena, live until `end`.
struct Placed {
  int64_t offset, top, end;
  uint32_t buffer;
};

bool lowerInArena(const Placed &a, const Placed &b) {
  return std::tie(a.offset, a.top) < std::tie(b.offset, b.top);
}

/// Inserts `p` into `byOffset`, which stays sorted by offset.
void insertByOffset(std::vector<Placed> &byOffset, const Placed &p) {
  byOffset.insert(llvm::upper_bound(byOffset, p, lowerInArena), p);
}

ArenaLayout firstFitByStart(llvm::ArrayRef<ArenaBuffer> buffers,
                            int64_t alignment) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return startKey(buffers[a]) < startKey(buffers[b]);
  });
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  // The buffers live at the current start (all placed earlier and not yet
  // ended), by offset.
  std::vector<Placed> active;
  for (size_t i : order) {
    const ArenaBuffer &buffer = buffers[i];
    int64_t size = alignUp(buffer.bytes, alignment);
    llvm::erase_if(active,
                   [&](const Placed &p) { return p.end < buffer.start; });
    int64_t offset = 0;
    for (const Placed &p : active) {
      if (p.offset - offset >= size)
        break;
      offset = std::max(offset, p.top);
    }
    layout.offsets[i] = offset;
    layout.peak = std::max(layout.peak, offset + size);
    insertByOffset(active, {offset, offset + size, buffer.end,
                            static_cast<uint32_t>(i)});
  }
  return layout;
}

ArenaLayout greedyBySize(llvm::ArrayRef<ArenaBuffer> buffers,
                         int64_t alignment) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> sizes;
  sizes.reserve(buffers.size());
  for (const ArenaBuffer &b : buffers)
    sizes.push_back(alignUp(b.bytes, alignment));
  // Persistent buffers first (they overlap everything), then largest first;
  // ties by the start order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ArenaBuffer &x = buffers[a], &y = buffers[b];
    if (x.persistent != y.persistent)
      return x.persistent;
    if (sizes[a] != sizes[b])
      return sizes[a] > sizes[b];
    return startKey(x) < startKey(y);
  });
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  // The buffers placed so far, by offset (then size): each placement walks
  // them in that order, skipping those not live with it, up to the first
  // gap that fits. Sorting a buffer's conflicts instead made this the
  // larger part of compiling a big training step (7,500 of its 14,000
  // buffers live at once, 70 packings).
  std::vector<Placed> byOffset;
  byOffset.reserve(buffers.size());
  for (size_t i : order) {
    const ArenaBuffer &buffer = buffers[i];
    int64_t size = sizes[i], offset = 0;
    for (const Placed &p : byOffset) {
      const ArenaBuffer &other = buffers[p.buffer];
      if (other.start > buffer.end || buffer.start > other.end)
        continue;
      if (p.offset - offset >= size)
        break;
      offset = std::max(offset, p.top);
    }
    layout.offsets[i] = offset;
    layout.peak = std::max(layout.peak, offset + size);
    insertByOffset(byOffset, {offset, offset + size, buffer.end,
                              static_cast<uint32_t>(i)});
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
