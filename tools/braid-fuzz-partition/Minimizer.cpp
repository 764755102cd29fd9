//===- Minimizer.cpp - delta debugging of a failing case ------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "Minimizer.h"

#include "FuzzConfig.h"

#include "dialects/braid/BraidDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <cctype>

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::fuzz;

namespace {

/// `text` with every run of digits replaced by '#', so that reasons that
/// differ only in sizes compare equal.
std::string withoutNumbers(llvm::StringRef text) {
  std::string result;
  for (size_t k = 0; k < text.size(); ++k) {
    if (std::isdigit(static_cast<unsigned char>(text[k]))) {
      if (result.empty() || result.back() != '#')
        result += '#';
      continue;
    }
    result += text[k];
  }
  return result;
}

/// The pass name of a pipeline element, without its options.
std::string passName(llvm::StringRef stage) {
  return stage.split('{').first.str();
}

/// An op of @main that can be replaced by one of its operands.
struct Bypass {
  size_t op;
  unsigned operand;
};

std::vector<Operation *> bodyOps(func::FuncOp main) {
  std::vector<Operation *> ops;
  for (Operation &op : main.getBody().front().without_terminator())
    ops.push_back(&op);
  return ops;
}

std::vector<Bypass> bypasses(ModuleOp module) {
  std::vector<Bypass> result;
  auto main = module.lookupSymbol<func::FuncOp>("main");
  std::vector<Operation *> ops = bodyOps(main);
  for (size_t k = 0; k < ops.size(); ++k) {
    Operation *op = ops[k];
    if (op->getNumResults() != 1 || op->use_empty())
      continue;
    for (OpOperand &operand : op->getOpOperands())
      if (operand.get().getType() == op->getResult(0).getType()) {
        result.push_back({k, operand.getOperandNumber()});
      }
  }
  return result;
}

/// Erases dead ops, weights nothing reads and inputs nothing uses.
void removeDeadCode(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  bool changed = true;
  while (changed) {
    changed = false;
    std::vector<Operation *> ops = bodyOps(main);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it)
      if ((*it)->use_empty()) {
        (*it)->erase();
        changed = true;
      }
  }
  llvm::StringSet<> read;
  main.walk([&](GetWeightOp get) { read.insert(get.getName()); });
  for (WeightOp weight : llvm::to_vector(module.getOps<WeightOp>()))
    if (!read.contains(weight.getSymName()))
      weight.erase();
  llvm::BitVector unused(main.getNumArguments());
  for (BlockArgument arg : main.getArguments())
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
  if (unused.any())
    (void)main.eraseArguments(unused);
}

/// A copy of `module` with the given ops bypassed (at most one bypass per
/// op: the first listed).
OwningOpRef<ModuleOp> bypassed(ModuleOp module, llvm::ArrayRef<Bypass> chosen) {
  OwningOpRef<ModuleOp> copy = module.clone();
  auto main = copy->lookupSymbol<func::FuncOp>("main");
  std::vector<Operation *> ops = bodyOps(main);
  llvm::DenseSet<size_t> done;
  for (const Bypass &bypass : chosen) {
    if (!done.insert(bypass.op).second)
      continue;
    Operation *op = ops[bypass.op];
    op->getResult(0).replaceAllUsesWith(op->getOperand(bypass.operand));
  }
  removeDeadCode(*copy);
  return copy;
}

/// A copy of `module` without result `index` of @main.
OwningOpRef<ModuleOp> withoutResult(ModuleOp module, unsigned index) {
  OwningOpRef<ModuleOp> copy = module.clone();
  auto main = copy->lookupSymbol<func::FuncOp>("main");
  Operation *ret = main.getBody().front().getTerminator();
  ret->eraseOperand(index);
  llvm::BitVector erase(main.getNumResults());
  erase.set(index);
  (void)main.eraseResults(erase);
  removeDeadCode(*copy);
  return copy;
}

/// Runs trials until the budget is spent.
class Reducer {
public:
  Reducer(CaseRunner &runner, FailingCase &failing, uint64_t dataSeed,
          std::chrono::seconds budget)
      : runner(runner), failing(failing), dataSeed(dataSeed),
        deadline(std::chrono::steady_clock::now() + budget) {}

  void reduce() {
    reduceConfiguration();
    reduceOutputs();
    reduceOps();
  }

  int64_t trials = 0;

private:
  bool timeLeft() const { return std::chrono::steady_clock::now() < deadline; }

  /// Runs a candidate; adopts it when it fails the same way.
  bool tryCandidate(ModuleOp program, const std::string &parallel,
                    const std::string &overlap) {
    if (!timeLeft())
      return false;
    llvm::Expected<std::string> pipeline = fullPipeline(parallel, overlap);
    if (!pipeline) {
      llvm::consumeError(pipeline.takeError());
      return false;
    }
    ++trials;
    CaseResult result = runner.run(program, splitPipeline(*pipeline), dataSeed);
    if (!sameFailure(result, failing.result))
      return false;
    failing.parallel = parallel;
    failing.overlap = overlap;
    failing.result = result;
    return true;
  }

  void reduceConfiguration() {
    // Drop overlap items one by one.
    llvm::SmallVector<llvm::StringRef> items;
    std::string overlap = failing.overlap;
    llvm::StringRef(overlap).split(items, ',', -1, false);
    for (size_t k = 0; k < items.size();) {
      std::string fewer;
      for (size_t j = 0; j < items.size(); ++j)
        if (j != k)
          fewer += (fewer.empty() ? "" : ",") + items[j].str();
      if (tryCandidate(*failing.program, failing.parallel, fewer)) {
        overlap = fewer;
        items.clear();
        llvm::StringRef(overlap).split(items, ',', -1, false);
      } else {
        ++k;
      }
    }
    // One axis instead of two; then 2 ranks instead of 3 or 4.
    llvm::SmallVector<llvm::StringRef> axes;
    std::string parallel = failing.parallel;
    llvm::StringRef(parallel).split(axes, ',', -1, false);
    if (axes.size() > 1)
      for (llvm::StringRef axis : axes)
        if (tryCandidate(*failing.program, axis.str(), failing.overlap))
          break;
    axes.clear();
    parallel = failing.parallel;
    llvm::StringRef(parallel).split(axes, ',', -1, false);
    std::string smaller;
    for (llvm::StringRef axis : axes) {
      auto [kind, size] = axis.split('=');
      smaller += (smaller.empty() ? "" : ",") + kind.str() +
                 (size.empty() ? "" : "=2");
    }
    if (smaller != failing.parallel)
      tryCandidate(*failing.program, smaller, failing.overlap);
  }

  void reduceOutputs() {
    for (unsigned k = 0;;) {
      auto main = failing.program->lookupSymbol<func::FuncOp>("main");
      if (main.getNumResults() <= 1 || k >= main.getNumResults())
        return;
      OwningOpRef<ModuleOp> candidate = withoutResult(*failing.program, k);
      if (tryCandidate(*candidate, failing.parallel, failing.overlap))
        failing.program = std::move(candidate);
      else
        ++k;
    }
  }

  /// Delta debugging over the bypassable ops: groups first, then singles.
  void reduceOps() {
    size_t granularity = 2;
    while (timeLeft()) {
      std::vector<Bypass> candidates = bypasses(*failing.program);
      if (candidates.empty())
        return;
      granularity = std::min(granularity, candidates.size());
      size_t chunk = (candidates.size() + granularity - 1) / granularity;
      bool progress = false;
      for (size_t start = 0; start < candidates.size() && !progress;
           start += chunk) {
        size_t end = std::min(candidates.size(), start + chunk);
        OwningOpRef<ModuleOp> candidate = bypassed(
            *failing.program,
            llvm::ArrayRef<Bypass>(candidates).slice(start, end - start));
        if (tryCandidate(*candidate, failing.parallel, failing.overlap)) {
          failing.program = std::move(candidate);
          progress = true;
        }
      }
      if (progress) {
        granularity = std::max<size_t>(2, granularity - 1);
        continue;
      }
      if (chunk == 1)
        return;
      granularity *= 2;
    }
  }

  CaseRunner &runner;
  FailingCase &failing;
  uint64_t dataSeed;
  std::chrono::steady_clock::time_point deadline;
};

} // namespace

bool mlir::braid::fuzz::sameFailure(const CaseResult &candidate,
                                    const CaseResult &original) {
  if (candidate.outcome != original.outcome)
    return false;
  if (original.outcome == Outcome::Mismatch) {
    // Within three orders of magnitude of the original error: a reduction
    // must not drift from a rounding problem to a gross bug or back.
    auto worst = [](const CaseResult &result) {
      double error = 0;
      for (const OutputError &output : result.outputs)
        error = std::max(error, output.relative);
      return error;
    };
    double before = worst(original), after = worst(candidate);
    return after >= before / 1000 && after <= before * 1000;
  }
  if (original.outcome != Outcome::Crash)
    return false;
  return passName(candidate.stage) == passName(original.stage) &&
         withoutNumbers(candidate.reason) == withoutNumbers(original.reason);
}

int64_t mlir::braid::fuzz::minimize(CaseRunner &runner, FailingCase &failing,
                                    uint64_t dataSeed,
                                    std::chrono::seconds budget) {
  Reducer reducer(runner, failing, dataSeed, budget);
  reducer.reduce();
  return reducer.trials;
}
