//===- ParallelPipeline.h - braidc's --parallel and --overlap ---*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The pass pipeline that braidc's --parallel, --overlap and --hw options
// stand for, in braid-opt's textual syntax. braidc runs it after import;
// braid-fuzz-partition builds its configurations with it, so that what the
// fuzzer checks is exactly what braidc compiles.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TOOLS_COMMON_PARALLELPIPELINE_H
#define BRAID_TOOLS_COMMON_PARALLELPIPELINE_H

#include "llvm/Support/Error.h"

#include <string>

namespace mlir {
namespace braid {

/// What to partition and overlap, spelled as braidc's options.
struct ParallelOptions {
  /// --parallel: comma-separated tp=N, dp=N, ep=N, cp=N, sp or sp=N.
  std::string parallel;
  /// --overlap: comma-separated domino[=K], domino-columns[=K],
  /// domino-both[=K], seq[=K], seq-at=P[:P...], comet[=K], balance, ring,
  /// attention-2d[=RxC], schedule, auto.
  std::string overlap;
  /// --hw: the hardware profile the overlap passes time schedules on.
  std::string hardware = "dgx-h100";
  /// --pipeline: passes to run after partitioning and before overlap.
  std::string pipeline;
};

/// The pipeline for `options`: [braid-balance-sequence,]
/// braid-split-fused-projections, braid-partition{...}, the extra pipeline,
/// the overlap passes, and with any overlap braid-schedule and
/// braid-verify-collectives. An error names the option and the item that is
/// wrong.
llvm::Expected<std::string>
buildParallelPipeline(const ParallelOptions &options);

} // namespace braid
} // namespace mlir

#endif // BRAID_TOOLS_COMMON_PARALLELPIPELINE_H
