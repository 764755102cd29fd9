//===- Chunking.h - split runs of ops into independent chunks ---*- C++ -*-===//
//
// The dependency analysis behind the overlap passes. Starting from seeds (a
// value split along a dimension, or an op computed in blocks of one of its
// factors), it follows the dimension mapping of every op, in block order, to
// find the maximal runs of ops that can be computed chunk by chunk: an op
// joins when a chunked operand's dimension is led by a parallel factor that
// leads every dimension it is part of. For every op of a run it records what
// chunk i needs of each operand: chunk i (the same split), the prefix of
// chunks 0..i (keys/values of causal attention when queries are chunked
// along the sequence), or the whole value. An op that needs a chunked value
// whole ends the run there (the chunks are concatenated).
//
// Chunks may have different sizes (ISO balances attention with uneven
// split points). The rewrite clones every op of a run once per chunk, op by
// op (op 1 of every chunk, then op 2 of every chunk, ...), and leaves the
// interleaving to braid-schedule.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_PASSES_CHUNKING_H
#define BRAID_PASSES_CHUNKING_H

#include "dialects/braid/BraidDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace braid {

/// A value split into chunks along one dimension: the chunks' sizes along
/// it, in order.
struct ChunkLayout {
  int64_t dim = -1;
  SmallVector<int64_t> sizes;
};

/// What chunk i of an op needs of one operand.
enum class ChunkUse {
  /// Not a tensor.
  None,
  /// The whole value, the same for every chunk.
  Whole,
  /// Chunk i along `dim`.
  Chunk,
  /// Chunks 0..i along `dim` (a causal prefix).
  Prefix,
};

struct OperandChunking {
  ChunkUse use = ChunkUse::None;
  int64_t dim = -1;
  /// The chunks' sizes along `dim` (Chunk and Prefix).
  SmallVector<int64_t> sizes;
};

/// How one op of a run is computed in chunks.
struct OpChunking {
  /// The factor of the op's dimension mapping the chunks split.
  unsigned factor = 0;
  /// The chunks' sizes in units of that factor.
  SmallVector<int64_t> factorSizes;
  SmallVector<OperandChunking> operands;
  /// The chunk layout of each result (dim -1: not chunked).
  SmallVector<ChunkLayout> results;
  /// The op's mapping before the rewrite.
  DimensionMapping mapping;
};

/// Chunk sizes that split `size` into `count` parts as evenly as possible
/// (the first ones one larger).
SmallVector<int64_t> evenChunks(int64_t size, int64_t count);

/// The analysis over the top-level ops of one block.
class ChunkAnalysis {
public:
  /// Seeds: values split as given, and ops computed in chunks of one of
  /// their factors (sizes in units of the factor).
  void seedValue(Value value, ChunkLayout layout) {
    seeds[value] = std::move(layout);
  }
  /// A value whose chunks already exist (made by the caller): chunked ops
  /// read `pieces` instead of slices of `value`.
  void seedPieces(Value value, ChunkLayout layout, SmallVector<Value> pieces) {
    seeds[value] = layout;
    presetPieces[value] = std::move(pieces);
  }
  void seedOp(Operation *op, unsigned factor, SmallVector<int64_t> sizes) {
    opSeeds[op] = {factor, std::move(sizes)};
  }

  /// Runs the analysis over `block`.
  void run(Block &block);

  /// The ops computed in chunks, in block order, with how.
  const llvm::MapVector<Operation *, OpChunking> &getOps() const {
    return ops;
  }
  /// The layout of a chunked value (seeds and results of chunked ops).
  const ChunkLayout *getLayout(Value value) const {
    auto it = layouts.find(value);
    return it == layouts.end() ? nullptr : &it->second;
  }
  /// The run (connected chunked ops) an op belongs to, or -1.
  int getRun(Operation *op) const {
    auto it = runOf.find(op);
    return it == runOf.end() ? -1 : it->second;
  }

  /// Rewrites the block: every chunked op becomes one op per chunk, seeds
  /// and other whole values are sliced where a chunk needs a part, chunked
  /// values are concatenated where something needs them whole. Returns
  /// failure (with a diagnostic) if a clone does not verify.
  LogicalResult rewrite(Block &block);

private:
  std::optional<OpChunking> analyzeOp(Operation *op);

  llvm::DenseMap<Value, ChunkLayout> seeds;
  llvm::DenseMap<Value, SmallVector<Value>> presetPieces;
  llvm::DenseMap<Operation *, std::pair<unsigned, SmallVector<int64_t>>>
      opSeeds;
  llvm::DenseMap<Value, ChunkLayout> layouts;
  llvm::MapVector<Operation *, OpChunking> ops;
  llvm::DenseMap<Operation *, int> runOf;
};

} // namespace braid
} // namespace mlir

#endif // BRAID_PASSES_CHUNKING_H
