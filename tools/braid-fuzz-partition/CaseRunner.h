//===- CaseRunner.h - one differential test of a pipeline -------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Runs one case: the single-device program on the reference interpreter
// gives the expected outputs; a copy goes through the pipeline pass by pass
// (verifying the IR after each), is translated to a plan in memory, loaded by
// the runtime's PlanLoader and run by the CPU Executor on one thread per rank
// with ThreadCommunicator; every rank's outputs are compared with the
// expected ones. Weights and inputs are random, derived from a data seed and
// each tensor's name, so that a program reduced by the minimizer keeps the
// values of what is left.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TOOLS_BRAIDFUZZPARTITION_CASERUNNER_H
#define BRAID_TOOLS_BRAIDFUZZPARTITION_CASERUNNER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
namespace braid {
namespace fuzz {

enum class Outcome {
  /// Every rank's outputs match the reference.
  Pass,
  /// A pass emitted an error and failed: a clean refusal.
  Rejected,
  /// Some rank computed other values.
  Mismatch,
  /// Anything else: invalid IR after a pass, a pass failing silently, a plan
  /// the runtime refuses, an execution error, a generator bug.
  Crash,
};

const char *outcomeName(Outcome outcome);

/// How far one output is from the reference on its worst rank.
struct OutputError {
  std::string name;
  double maxAbs = 0;
  double relative = 0;
  int64_t worstRank = 0;
  /// How far the f32 reference moves, at most, when the same program is
  /// evaluated in double precision or with every stored value perturbed by
  /// one ulp (relative, like `relative`): the rounding error the program
  /// amplifies. Ill-conditioned programs (a division by a mean of signed
  /// values, the normalized difference of two identical rows, a top-k near
  /// tie) raise it.
  double referenceError = 0;
  /// The element that decides the outcome: the one furthest beyond, or
  /// closest to, the error it is allowed (the tolerance plus a multiple of
  /// how far that element moves under other roundings). Its index in each
  /// dimension, that allowance (relative, like `relative`), and the values
  /// there on the worst rank, in the f32 reference and in double precision.
  std::vector<int64_t> worstElement;
  double accepted = 0;
  double got = 0, expected = 0, exact = 0;
};

/// The result of one case.
struct CaseResult {
  Outcome outcome = Outcome::Pass;
  /// Rejected: the first line of the first error; crash: what went wrong;
  /// mismatch: which outputs.
  std::string reason;
  /// The pass (or stage) where it was rejected or crashed.
  std::string stage;
  /// Per output, when the plan ran.
  std::vector<OutputError> outputs;
  /// The ranks the plan ran on, its collectives, and the weights it
  /// shards: how much partitioning the case exercised.
  int64_t ranks = 0;
  int64_t collectives = 0;
  int64_t shardedWeights = 0;
};

/// Settings shared by every case.
struct RunnerOptions {
  /// Largest relative error (to the largest expected magnitude) accepted.
  double tolerance = 1e-4;
  /// Each element may differ from the f32 reference by the tolerance plus
  /// this multiple of how far it moves under other roundings: a partitioned
  /// program sums in another order, so its rounding errors are like those,
  /// amplified by the same conditioning.
  double conditioningFactor = 8;
  /// Longest a collective or an event wait may block (a deadlock detector).
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

/// Runs cases in one MLIR context (the dialects it needs are loaded once).
class CaseRunner {
public:
  CaseRunner(MLIRContext &context, RunnerOptions options);

  /// Parses a program (errors name `bufferName`); null after printing the
  /// parser's errors to `errors`.
  OwningOpRef<ModuleOp> parse(llvm::StringRef text, llvm::StringRef bufferName,
                              std::string &errors);

  /// Runs `program` (left unchanged) through the comma-separated pass
  /// `pipeline` on data from `dataSeed`.
  CaseResult run(ModuleOp program, const std::vector<std::string> &pipeline,
                 uint64_t dataSeed);

private:
  MLIRContext &context;
  RunnerOptions options;
};

} // namespace fuzz
} // namespace braid
} // namespace mlir

#endif // BRAID_TOOLS_BRAIDFUZZPARTITION_CASERUNNER_H
