//===- Overlap.h - entry points of the overlap passes ------------*- C++ -*-===//

#ifndef BRAID_PASSES_OVERLAP_H
#define BRAID_PASSES_OVERLAP_H

#include "passes/Explain.h"
#include "passes/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir {
namespace braid {

/// The size of dimension `dim` of `function`'s inputs: of the last input
/// where it exceeds 1; 0 when none does.
int64_t inputDimSize(func::FuncOp function, int64_t dim);
/// Domino's split of @`function` into `count` chunks (braid-domino).
LogicalResult applyDomino(ModuleOp module, StringRef function, int64_t count,
                          StringRef split);
/// ISO's split of @`function`'s sequence into chunks of `sizes`.
LogicalResult applySeqPipeline(ModuleOp module, StringRef function,
                               ArrayRef<int64_t> sizes);
/// Ring Attention for every attention whose K/V are all-gathered along the
/// sequence (braid-ring-attention).
LogicalResult applyRingAttention(ModuleOp module);
/// The zigzag sequence order for `parts` context-parallel ranks
/// (braid-balance-sequence).
LogicalResult applyBalanceSequence(ModuleOp module, int64_t parts);
/// COMET's per-source pieces for every expert-parallel MoE layer.
LogicalResult applyComet(ModuleOp module, int64_t combineChunks);
/// ATTENTION2D on a `rows` x `columns` grid of mesh axis `axis`.
LogicalResult applyAttention2D(ModuleOp module, StringRef axis, int64_t rows,
                               int64_t columns);

/// DDP's gradient buckets: the all-reduces of @`function` (every function
/// with a body when empty) in the order their operands are produced, fused
/// into buckets of at most `bucketBytes` (braid-buckets).
LogicalResult applyBuckets(ModuleOp module, StringRef function,
                           int64_t bucketBytes);

/// The estimated makespan (seconds) of a scheduled copy of @`function` of
/// `module` (of every function with a body when `function` is empty).
FailureOr<double> estimateScheduled(ModuleOp module, const CostModel &model,
                                    StringRef function);

/// Applies `transform` to a copy of `module` for every candidate, schedules
/// the copy, and returns the index of the candidate with the shortest
/// estimated makespan (the first of equals, to a relative 1e-9): of @`function`, or the sum over
/// every function with a body when `function` is empty. A candidate that
/// does not apply prints nothing: its first error becomes its reason. With
/// `pass` given, the decision (every candidate, named by `nameOf`, with its
/// estimate or reason) is recorded on `module` for --explain (Explain.h).
template <typename Transform>
inline FailureOr<size_t>
pickByCost(ModuleOp module, StringRef hw, size_t candidates,
           Transform transform, StringRef function = "", StringRef pass = "",
           llvm::function_ref<std::string(size_t)> nameOf = nullptr) {
  FailureOr<CostModel> model = CostModel::load(hw, module);
  if (failed(model))
    return failure();
  std::optional<size_t> best;
  double bestTime = 0;
  SmallVector<CandidateEstimate> table;
  for (size_t c = 0; c < candidates; ++c) {
    CandidateEstimate &row = table.emplace_back();
    row.name = nameOf ? nameOf(c) : std::to_string(c);
    ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &d) {
      if (row.rejected.empty() && d.getSeverity() == DiagnosticSeverity::Error)
        row.rejected = d.str();
      return success();
    });
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
    if (failed(transform(*copy, c))) {
      if (row.rejected.empty())
        row.rejected = "the transformation does not apply";
      continue;
    }
    FailureOr<double> estimate = estimateScheduled(*copy, *model, function);
    if (failed(estimate)) {
      if (row.rejected.empty())
        row.rejected = "its result cannot be scheduled";
      continue;
    }
    double time = *estimate;
    row.seconds = time;
    // Candidates within a relative 1e-9 of each other are equal: the first
    // wins, not whichever rounding error happens to be smaller.
    if (!best || time < bestTime * (1 - 1e-9)) {
      best = c;
      bestTime = time;
    }
  }
  if (!pass.empty())
    recordChoice(module, pass, function.empty() ? "*" : function, hw, table,
                 best);
  if (!best)
    return module.emitError("no candidate could be chunked"), failure();
  return *best;
}

/// The function attribute holding the estimate of a function before the
/// first overlap pass changed it: {hw, makespan_us}. braid-overlap-report
/// compares against it.
constexpr StringLiteral kBaselineAttr = "braid.unoverlapped";

/// Records the estimate of @`function` (every function with a body when
/// empty) on `hw` as its un-overlapped baseline (kBaselineAttr), unless an
/// earlier overlap pass recorded one. Overlap passes call it before they
/// change a function.
void recordBaseline(ModuleOp module, StringRef function, StringRef hw);

/// Applies `transform` (the pass `pass` configured as `what`, e.g.
/// "chunks=2") to @`function` of `module` unless the cost model on `hw`
/// estimates the result, scheduled, slower than the input, scheduled: then,
/// without `force`, `module` is left as it was and a warning says so. The
/// decision is recorded for --explain, and the input's estimate as the
/// function's un-overlapped baseline (kBaselineAttr) unless an earlier
/// overlap pass recorded one.
LogicalResult applyUnlessSlower(ModuleOp module, StringRef hw,
                                StringRef function, StringRef pass,
                                StringRef what, bool force,
                                function_ref<LogicalResult(ModuleOp)> transform);

} // namespace braid
} // namespace mlir

#endif // BRAID_PASSES_OVERLAP_H
