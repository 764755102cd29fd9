//===- IRHelpers.h - small IR builders the passes share --------*- C++ -*-===//

#ifndef BRAID_PASSES_IRHELPERS_H
#define BRAID_PASSES_IRHELPERS_H

#include "dialects/braid/BraidDialect.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace braid {

/// The static unit-stride slice of `v` holding `size` elements of dimension
/// `dim` from `offset`.
Value sliceAlong(OpBuilder &b, Location loc, Value v, int64_t dim,
                 int64_t offset, int64_t size);

/// This rank's index in its group over `axes` of `mesh`, row-major over the
/// axes as listed (braid.rank and index arithmetic).
Value groupIndex(OpBuilder &b, Location loc, MeshOp mesh,
                 ArrayRef<StringRef> axes);

/// Makes `op`, whose operands already hold the blocks, compute only
/// `blocks` of its factors (of `mapping`, the op's mapping before any
/// rewrite): every result dimension made of a blocked factor takes the
/// block's size, the op adjusts itself through `restrictToBlock` (slice
/// sizes, causal offsets), and the result must verify. Partitioning (a
/// rank's share) and chunking (Domino, ISO) both compute ops on blocks this
/// way. Returns failure with a diagnostic naming the factor.
LogicalResult computeOnBlock(OpBuilder &b, Operation *op,
                             const DimensionMapping &mapping,
                             ArrayRef<FactorBlock> blocks);

} // namespace braid
} // namespace mlir

#endif // BRAID_PASSES_IRHELPERS_H
