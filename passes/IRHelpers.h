//===- IRHelpers.h - small IR builders the passes share --------*- C++ -*-===//

#ifndef BRAID_PASSES_IRHELPERS_H
#define BRAID_PASSES_IRHELPERS_H

#include "dialects/braid/BraidDialect.h"
#include "dialects/braid/Builders.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace braid {

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

/// The one-rank training step (braid-training-step's @main) that a
/// data-parallel training algorithm's pass rewrites: @main with a body and
/// its braid.training contract, one step per call, no mesh yet, returning
/// only the scalar f32 loss. `data[i]`: whether argument i is the step's
/// tokens or labels. Errors name `pass` and `algorithm`.
struct OneRankStep {
  func::FuncOp main;
  DictionaryAttr training;
  func::ReturnOp ret;
  RankedTensorType lossType;
  SmallVector<bool> data;
  int64_t batch = 0;
};
FailureOr<OneRankStep> checkOneRankStep(ModuleOp module, StringRef pass,
                                        StringRef algorithm);

/// The earliest all-gather in `gather`'s block, before it, that gathers the
/// same block the same way: the same operand, or reshapes of one value to
/// the same type (CSE merges those), on the same mesh axes and dimension,
/// to the same type. Null when none: `gather` is not a second gather.
AllGatherOp firstSameGather(AllGatherOp gather);

} // namespace braid
} // namespace mlir

#endif // BRAID_PASSES_IRHELPERS_H
