//===- Schedule.h - latency-hiding list scheduling --------------*- C++ -*-===//

#ifndef BRAID_PASSES_SCHEDULE_H
#define BRAID_PASSES_SCHEDULE_H

#include "passes/OverlapModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace braid {

/// The attribute braid-schedule leaves on a collective whose issue the
/// memory limit held back (read by braid-overlap-report).
constexpr StringLiteral kHeldByMemoryAttr = "braid.held_by_memory_limit";

/// Fails with one error, naming `pass`, when `root` (a function or a
/// module) already holds braid.async regions (braid-schedule's output):
/// `pass` rewrites synchronous collectives, so it runs before
/// braid-schedule.
LogicalResult requireUnscheduled(Operation *root, StringRef pass);

/// The functions a pass named `pass` transforms: @`name`, or every function
/// with a body when `name` is empty. Fails with one error when @`name` does
/// not exist.
FailureOr<SmallVector<func::FuncOp>> selectFunctions(ModuleOp module,
                                                     StringRef name,
                                                     StringRef pass);

/// selectFunctions, then requireUnscheduled on each: a pass that rewrites
/// synchronous collectives checks every function before changing any.
FailureOr<SmallVector<func::FuncOp>>
selectUnscheduledFunctions(ModuleOp module, StringRef name, StringRef pass);

/// selectUnscheduledFunctions, then `body` on each function until one
/// fails: the usual runOnOperation of a pass that rewrites synchronous
/// collectives function by function.
LogicalResult
forEachUnscheduledFunction(ModuleOp module, StringRef name, StringRef pass,
                           function_ref<LogicalResult(func::FuncOp)> body);

/// Reorders `function`'s body and turns every synchronous collective into a
/// braid.async on stream `stream` issued as early as its operands allow,
/// with its braid.await right before the first op that reads it, so that
/// independent compute runs in between (see braid-schedule in Passes.td).
/// Gathers (results larger than their operands) are issued at most a window
/// of ops ahead of their first reader: with `boundPrefetch`, the smallest
/// window that costs at most 1% of estimated time, and with `memoryLimit`
/// (bytes, 0: none) at most the largest window whose arena (the plan's
/// peak per rank) fits; fails naming the bytes needed when none does.
/// With a `gatherStream` other than `stream` (empty: none), a body that has
/// both gathers and other collectives issues its gathers on `gatherStream`,
/// so that a parameter gather need not wait behind a gradient's
/// reduce-scatter (FSDP2's known problem); the runtime gives the two streams
/// separate communicators.
LogicalResult scheduleFunction(func::FuncOp function, const CostModel &model,
                               int64_t memoryLimit, StringRef stream,
                               bool boundPrefetch = true,
                               StringRef gatherStream = "");

} // namespace braid
} // namespace mlir

#endif // BRAID_PASSES_SCHEDULE_H
