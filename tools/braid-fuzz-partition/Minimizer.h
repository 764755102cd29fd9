//===- Minimizer.h - delta debugging of a failing case ----------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Shrinks a case that mismatches (or crashes) while it keeps failing the
// same way: first the configuration (overlap items dropped, the mesh cut to
// one axis and to 2 ranks), then the program: surplus outputs dropped, and
// ops bypassed (their result replaced by an operand of the same type, which
// removes a whole residual block at once) by delta debugging over groups of
// ops, with dead code, unused weights and unused inputs removed after each
// step.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TOOLS_BRAIDFUZZPARTITION_MINIMIZER_H
#define BRAID_TOOLS_BRAIDFUZZPARTITION_MINIMIZER_H

#include "CaseRunner.h"

#include <chrono>

namespace mlir {
namespace braid {
namespace fuzz {

/// A failing case: its program and configuration, and how it failed.
struct FailingCase {
  OwningOpRef<ModuleOp> program;
  std::string parallel;
  std::string overlap;
  CaseResult result;
};

/// Whether `candidate` fails the way `original` did: both mismatch with
/// errors within three orders of magnitude of each other, or both crash at
/// the same kind of stage with the same reason up to numbers.
bool sameFailure(const CaseResult &candidate, const CaseResult &original);

/// Shrinks `failing` in place within `budget`; returns the number of trial
/// runs.
int64_t minimize(CaseRunner &runner, FailingCase &failing, uint64_t dataSeed,
                 std::chrono::seconds budget);

} // namespace fuzz
} // namespace braid
} // namespace mlir

#endif // BRAID_TOOLS_BRAIDFUZZPARTITION_MINIMIZER_H
