//===- Builders.h - small braid IR builders ---------------------*- C++ -*-===//
//
// Builders shared by the dialect's own rules (gradients) and the passes.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BUILDERS_H
#define BRAID_DIALECT_BUILDERS_H

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

/// The unit-stride slice of `v` holding `size` elements of dimension `dim`
/// from the runtime index `offset`.
Value sliceAlongAt(OpBuilder &b, Location loc, Value v, int64_t dim,
                   Value offset, int64_t size);

/// A rank-0 `braid.constant` of element type `elementType` holding `value`.
Value scalarConstant(OpBuilder &b, Location loc, Type elementType,
                     double value);

/// `value` broadcast to `type` (`braid.broadcast_to` of a scalar constant:
/// no large constant in the IR or the plan).
Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   double value);

/// A rank-1 `braid.constant` of `values` in integer type `elementType` (i64
/// or i32).
Value integerVector(OpBuilder &b, Location loc, Type elementType,
                    ArrayRef<int64_t> values);

/// One-hot rows of `indices` over `classes` classes in `elementType`:
/// `[indices..., classes]`, 1 where the class is the index (a compare with
/// an iota constant, cast).
Value oneHot(OpBuilder &b, Location loc, Value indices, int64_t classes,
             Type elementType);

/// Turns the slices of weights under `root` into reads of blocks, as
/// braid.get_weight's canonicalization does (every use of a read a slice
/// that cuts only unsharded dimensions), without folding anything else;
/// returns how many reads it replaced.
int64_t readWeightSlicesAsBlocks(Operation *root);

} // namespace braid
} // namespace mlir

#endif // BRAID_DIALECT_BUILDERS_H
