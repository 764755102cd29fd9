//===- BalanceSequence.cpp - zigzag sequence order for causal balance -----===//
//
// Context parallelism gives rank r the r-th contiguous block of the
// sequence; under a causal mask the last rank's queries see every key and
// the first rank's only its own, so the slowest rank does about twice the
// average work. braid-balance-sequence reorders the sequence of a
// single-device program so that, split into P contiguous blocks afterwards,
// rank r holds the original chunks r and 2P-1-r of 2P (the zigzag layout):
// every rank then sees about the same number of (query, key) pairs.
//
// The reorder is a permutation pi of the sequence applied where it enters
// (inputs and sequence-indexed constants, by braid.gather with pi) and
// undone where something needs the natural order (outputs, ops that need the
// sequence whole, by braid.gather with pi^-1). Which values carry the
// sequence comes from the chunk analysis (passes/Chunking.h). Everything in
// between is unchanged except causal attention: its mask, "key index <=
// query index", becomes "pi(key) <= pi(query)", an explicit comparison of
// positions, which braid-ring-attention and braid-attention-2d carry along
// with their key/value blocks.
//
//===----------------------------------------------------------------------===//

#include "passes/Chunking.h"
#include "passes/Overlap.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Verifier.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDBALANCESEQUENCE
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

Value indexConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type =
      RankedTensorType::get({(int64_t)values.size()}, b.getI64Type());
  return ConstantOp::create(b, loc, type,
                            DenseElementsAttr::get(type, values));
}

/// `v` reordered along `dim` by `indices` (out[i] = v[indices[i]]).
Value reorder(OpBuilder &b, Location loc, Value v, Value indices, int64_t dim) {
  return GatherOp::create(b, loc, v.getType(), v, indices,
                          b.getI64IntegerAttr(dim));
}

} // namespace

LogicalResult mlir::braid::applyBalanceSequence(ModuleOp module,
                                                int64_t parts) {
  auto function = module.lookupSymbol<func::FuncOp>("main");
  if (!function)
    return module.emitError("braid-balance-sequence: no function @main");
  if (!module.getOps<MeshOp>().empty())
    return module.emitError("braid-balance-sequence: runs on the "
                            "single-device program, before braid-partition");
  int64_t length = inputDimSize(function, 1);
  if (length == 0 || parts < 1 || length % (2 * parts) != 0)
    return function.emitError("braid-balance-sequence: the sequence (")
           << length << ") does not split into " << 2 * parts
           << " equal chunks for " << parts << " ranks";

  // pi: rank r's block holds chunks r and 2P-1-r.
  int64_t chunk = length / (2 * parts);
  SmallVector<int64_t> pi, inverse(length);
  for (int64_t r = 0; r < parts; ++r)
    for (int64_t c : {r, 2 * parts - 1 - r})
      for (int64_t i = 0; i < chunk; ++i)
        pi.push_back(c * chunk + i);
  for (auto [i, p] : llvm::enumerate(pi))
    inverse[p] = i;

  ChunkAnalysis analysis;
  Block &body = function.getBody().front();
  for (BlockArgument arg : function.getArguments())
    if (auto type = dyn_cast<RankedTensorType>(arg.getType());
        type && type.getRank() > 1 && type.getDimSize(1) == length)
      analysis.seedValue(arg, {1, {length}});
  analysis.run(body);
  if (analysis.getOps().empty())
    return success();

  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Location loc = function.getLoc();
  Value forward = indexConstant(b, loc, pi);
  Value backward = indexConstant(b, loc, inverse);
  Value positions = forward; // original position of each reordered index

  // Values in the reordered sequence (results of analysed ops) and the
  // copies made of others.
  llvm::DenseMap<Value, int64_t> reordered;
  llvm::DenseMap<std::pair<Value, int64_t>, Value> into, outOf;
  auto intoOrder = [&](Value v, int64_t dim, Operation *before) {
    auto &made = into[{v, dim}];
    if (!made) {
      b.setInsertionPoint(before);
      made = reorder(b, before->getLoc(), v, forward, dim);
    }
    return made;
  };
  auto outOfOrder = [&](Value v, Operation *before) {
    auto &made = outOf[{v, reordered.lookup(v)}];
    if (!made) {
      b.setInsertionPointAfterValue(v);
      made = reorder(b, before->getLoc(), v, backward, reordered.lookup(v));
    }
    return made;
  };

  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (op == forward.getDefiningOp() || op == backward.getDefiningOp())
      continue;
    auto it = analysis.getOps().find(op);
    if (it == analysis.getOps().end()) {
      for (OpOperand &operand : op->getOpOperands())
        if (reordered.count(operand.get()))
          operand.set(outOfOrder(operand.get(), op));
      continue;
    }
    const OpChunking &chunking = it->second;
    for (auto [i, use] : llvm::enumerate(chunking.operands)) {
      Value v = op->getOperand(i);
      switch (use.use) {
      case ChunkUse::None:
        break;
      case ChunkUse::Whole:
        if (reordered.count(v))
          op->setOperand(i, outOfOrder(v, op));
        break;
      case ChunkUse::Chunk:
      case ChunkUse::Prefix:
        if (!reordered.count(v) || reordered.lookup(v) != use.dim)
          op->setOperand(i, intoOrder(v, use.dim, op));
        break;
      }
    }
    // Causal attention compares original positions instead of indices.
    if (auto attention = dyn_cast<AttentionOp>(op); attention &&
                                                    attention.getCausal()) {
      std::optional<int64_t> offset =
          attention.getCausalOffset()
              ? getConstantIntValue(attention.getCausalOffset())
              : std::optional<int64_t>(0);
      if (attention.getMask() || !offset || *offset != 0)
        return attention.emitOpError("braid-balance-sequence: expects causal "
                                     "self-attention without a mask or "
                                     "offset");
      b.setInsertionPoint(attention);
      auto column = RankedTensorType::get({length, 1}, b.getI64Type());
      auto row = RankedTensorType::get({1, length}, b.getI64Type());
      Value mask = CompareOp::create(
          b, attention.getLoc(),
          RankedTensorType::get({length, length}, b.getI1Type()),
          CompareKindAttr::get(b.getContext(), CompareKind::GE),
          ReshapeOp::create(b, attention.getLoc(), column, positions),
          ReshapeOp::create(b, attention.getLoc(), row, positions));
      attention.getMaskMutable().assign(mask);
      attention.getCausalOffsetMutable().clear();
      attention.setCausal(false);
    } else if (llvm::any_of(chunking.operands, [](const OperandChunking &u) {
                 return u.use == ChunkUse::Prefix;
               })) {
      return op->emitOpError("braid-balance-sequence: reads a causal prefix "
                             "of the sequence, which a reordering breaks");
    }
    for (auto [result, layout] : llvm::zip(op->getResults(), chunking.results))
      if (layout.dim >= 0)
        reordered[result] = layout.dim;
    if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
      return op->emitOpError("braid-balance-sequence: does not verify "
                             "after reordering");
  }
  return success();
}

namespace {
struct BalanceSequencePass
    : public mlir::braid::impl::BraidBalanceSequenceBase<BalanceSequencePass> {
  using BraidBalanceSequenceBase::BraidBalanceSequenceBase;
  void runOnOperation() override {
    if (failed(applyBalanceSequence(getOperation(), parts)))
      signalPassFailure();
  }
};
} // namespace
