//===- Explain.h - the choices the overlap passes make ----------*- C++ -*-===//
//
// Part of the Braid project.
//
// Every `auto` option of an overlap pass (chunk counts, split points, grids,
// braid-overlap-auto's technique) is decided by the cost model over a list
// of candidates. The decision is recorded on the module, in the attribute
// `braid.explain`: one entry per decision with the pass, the function, the
// hardware profile, every candidate with its estimated makespan or why it
// does not apply, and the one chosen. `braidc --explain` and
// braid-overlap-report print the entries as tables.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_PASSES_EXPLAIN_H
#define BRAID_PASSES_EXPLAIN_H

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace mlir {
namespace braid {

/// One candidate of a decision.
struct CandidateEstimate {
  std::string name;
  /// The estimated makespan, seconds; none when the candidate does not apply.
  std::optional<double> seconds;
  /// Why it does not apply (its first error), when it does not.
  std::string rejected;
};

/// `seconds` in microseconds, rounded to the nanosecond (how estimates are
/// stored in attributes: no float noise in the printed IR).
double roundedMicroseconds(double seconds);

/// Appends a decision to `module`'s braid.explain attribute. `chosen` indexes
/// `candidates`; none when no candidate applied.
void recordChoice(ModuleOp module, StringRef pass, StringRef function,
                  StringRef hw, ArrayRef<CandidateEstimate> candidates,
                  std::optional<size_t> chosen);

/// The recorded decisions as text tables (empty when there are none).
std::string formatChoices(ModuleOp module);

} // namespace braid
} // namespace mlir

#endif // BRAID_PASSES_EXPLAIN_H
