//===- Fusion.h - which braid ops braid-to-exec fuses into one kernel -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// braid-to-exec fuses a matmul's bias add, activation and residual add into
// its kernel (an epilogue), and a tree of elementwise ops of one shape and
// one float type (f32, bf16, f16; the kernels compute in f32 and round each
// step to the type, so a fusion gives the unfused ops' values) into one
// `elementwise` kernel at its root. Where the ops may move (which
// instructions may lie between them) is the caller's rule: braid-to-exec's
// is "only compute on the same stream", the cost estimates of the overlap
// passes apply the same one to an unscheduled body or to the main block of
// a scheduled one. What may join is decided here, once, so that the
// estimates the scheduler fills its windows with are the kernels the plan
// will run.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECTS_BRAID_FUSION_H
#define BRAID_DIALECTS_BRAID_FUSION_H

#include "dialects/braid/BraidDialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace mlir {
namespace braid {

/// The most inputs and steps an `elementwise` kernel takes; the runtime's
/// kMaxChainInputs and kMaxChainSteps (runtime/exec/KernelRegistry.h).
constexpr size_t kMaxChainInputs = 8;
constexpr size_t kMaxChainSteps = 32;

/// The optional group (braid.optional, braid-acco's micro-batches beyond a
/// round's minimum) `op` is in; -1: none. Fusions never join ops of
/// different groups: a skipped group's kernels do not run.
int64_t optionalGroupOf(Operation *op);

/// The value `value` is a view of: through reshapes to the op that made it.
Value viewedValue(Value value);

/// What a matmul does to its product before writing it: the bias add, the
/// activation and the residual add that followed it in the program, in
/// that order, fused into its kernel (`fuse-epilogues`).
struct Epilogue {
  Value bias, addend;
  StringRef activation;
  /// The last fused op's result: what the kernel writes.
  Value result;
  /// The fused ops' FLOPs.
  int64_t flops = 0;
  /// The fused ops, in program order, and the values they pass along
  /// (which get no buffer: the product, the intermediate results and the
  /// reshapes between them).
  SmallVector<Operation *> ops;
  SmallVector<Value> internal;
  /// Bytes the fused kernel moves beyond the matmul's own: the bias and
  /// the addend it reads (the product is written once, as the result).
  int64_t extraBytes() const;
};

/// The epilogue of float matmul `matmul`: each next op is the only user of
/// the previous result (through reshapes that keep the rows), joins as a
/// bias, activation or residual add in that order, and `mayMoveUp(op)` (the
/// caller's placement rule); a bias or addend must exist at the matmul,
/// `existsAtMatmul(value)`. Its result is the matmul's when nothing joins.
Epilogue collectEpilogue(MatmulOp matmul,
                         llvm::function_ref<bool(Operation *)> mayMoveUp,
                         llvm::function_ref<bool(Value)> existsAtMatmul);

/// A tree of elementwise ops of one shape and float type fused into one
/// `elementwise` kernel at its root (`fuse-elementwise`): the ops in
/// evaluation order, root last; the values they read from outside the tree
/// (registers 0..L-1 of the kernel); and two registers per op (L + i for op
/// i's result, -1 for a unary op's second).
struct ElementwiseGroup {
  SmallVector<Operation *> ops;
  SmallVector<Value> leaves;
  SmallVector<int64_t> operands;
  std::string names;
  int64_t flops = 0;
  /// Whether the `elementwise` kernel runs it: two ops or more, and no more
  /// leaves than it takes.
  bool fusible() const {
    return ops.size() >= 2 && leaves.size() <= kMaxChainInputs;
  }
  /// Bytes the kernel moves in its one pass: the leaves read, the root's
  /// result written.
  int64_t bytes() const;
};

/// The `elementwise` kernel's name for `op` if it is an op the kernel runs,
/// on operands and a result of one float type; empty otherwise.
StringRef elementwiseKernelName(Operation *op);

/// The tree at `root` (an op elementwiseKernelName names): an operand's
/// producer joins when the operand is its only use, it is such an op with
/// the root's result type and optional group, the tree has room, and
/// `mayMoveDown(producer)` (the caller's placement rule). Check fusible()
/// before using it.
ElementwiseGroup
collectElementwiseTree(Operation *root,
                       llvm::function_ref<bool(Operation *)> mayMoveDown);

} // namespace braid
} // namespace mlir

#endif // BRAID_DIALECTS_BRAID_FUSION_H
