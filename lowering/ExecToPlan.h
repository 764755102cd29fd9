//===- ExecToPlan.h - exec plans to .bplan files ----------------*- C++ -*-===//

#ifndef BRAID_LOWERING_EXECTOPLAN_H
#define BRAID_LOWERING_EXECTOPLAN_H

#include "dialects/exec/ExecDialect.h"

#include <string>

namespace braid::plan {
class Plan;
} // namespace braid::plan

namespace mlir {
namespace braid {

/// Fills `plan` (runtime/plan/Plan.proto) from an exec.plan op. Emits a
/// diagnostic and fails on anything the format cannot express.
LogicalResult translateExecToPlan(exec::PlanOp op,
                                  const std::string &weightsFile,
                                  ::braid::plan::Plan &plan);

/// Translates the module's one exec.plan and writes it to `path` (binary
/// protobuf), atomically: nothing is written on failure.
LogicalResult writePlanFile(ModuleOp module, const std::string &path,
                            const std::string &weightsFile);

} // namespace braid
} // namespace mlir

#endif // BRAID_LOWERING_EXECTOPLAN_H
