//===- ArenaPacking.h - first-fit packing of live ranges --------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// How a plan's buffers share one arena: each buffer (an alias class of
// tensor values) lives over [start, end] program positions; persistent
// buffers (weights, constants, arguments, outputs) first, then the others by
// start position, each at the lowest aligned offset where it overlaps no live
// buffer (or greedy by size, when that packs tighter). braid-to-exec places the plan's buffers this way, and
// braid-schedule's memory limit predicts the same peak from an order before
// it emits it; one function keeps the two in agreement.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECTS_BRAID_ARENAPACKING_H
#define BRAID_DIALECTS_BRAID_ARENAPACKING_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir {
namespace braid {

/// On a function: the memory limit (bytes per rank) braid-schedule kept its
/// order under. braid-to-exec's fusions may grow the arena a little (see
/// kFusionArenaSlack), never past it.
constexpr llvm::StringLiteral kMemoryLimitAttrName = "braid.memory_limit";
/// A fusion braid-to-exec makes is kept when the arena grows by at most
/// 1/kFusionArenaSlack of itself (and stays within a memory limit): moving
/// a producer down to its consumer repacks the arena, which can move its
/// peak by an alignment unit or two either way.
constexpr int64_t kFusionArenaSlack = 100;

/// One buffer to place.
struct ArenaBuffer {
  /// First and last program positions it is live at (inclusive).
  int64_t start = 0, end = 0;
  /// Bytes (0 takes one byte; sizes are rounded up to the alignment).
  int64_t bytes = 0;
  /// Lives for the whole run: placed before every other buffer.
  bool persistent = false;
  /// Tie-break among buffers of the same kind and start (smaller first), so
  /// that plans do not depend on pointer order.
  int64_t rank = 0;
};

/// The arena: each buffer's offset (in the input's order) and the peak.
struct ArenaLayout {
  llvm::SmallVector<int64_t> offsets;
  int64_t peak = 0;
};

/// Places `buffers`, every offset and size a multiple of `alignment`, two
/// ways, and keeps the smaller arena (the first on a tie): first fit in the
/// order above, and greedy by size (largest first, each at the lowest
/// offset free over its whole live range; TFLite's arena planner does
/// this), which packs long-lived large buffers, such as prefetched
/// parameters, without the holes first fit leaves. Each placement walks
/// the buffers placed so far by offset up to the first gap that fits, so
/// both are quadratic in the buffers at worst (0.15 s for the 14,000
/// buffers of an ACCO step of GPT-2 small at dp=16, 7,500 of them live at
/// once); greedy by size is tried up to 20,000 of them.
ArenaLayout packArena(llvm::ArrayRef<ArenaBuffer> buffers, int64_t alignment);

} // namespace braid
} // namespace mlir

#endif // BRAID_DIALECTS_BRAID_ARENAPACKING_H
