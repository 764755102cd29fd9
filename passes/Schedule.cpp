//===- Schedule.cpp - latency-hiding list scheduling ----------------------===//
//
// A list scheduler in estimated time with two resources, the compute stream
// and one communication stream. Collectives are issued the moment their
// operands exist (in program order among themselves, so every rank issues
// them in the same order on one stream); the compute stream runs, among the
// ops whose operands are available now, the earliest in program order, and
// stalls only when none is (then for the one available soonest). Waiting
// for a collective is thereby put off until no other work is left, across
// layer boundaries. Chunked programs (braid-domino, braid-seq-pipeline)
// interleave chunk by chunk this way without any pass-specific rule.
//
//===----------------------------------------------------------------------===//

#include "passes/Schedule.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

#include <set>

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDSCHEDULE
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

LogicalResult mlir::braid::requireUnscheduled(Operation *root,
                                              StringRef pass) {
  Operation *scheduled = nullptr;
  root->walk([&](Operation *op) {
    if (isa<AsyncOp, AwaitOp>(op)) {
      scheduled = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (!scheduled)
    return success();
  auto function = scheduled->getParentOfType<func::FuncOp>();
  return scheduled->emitError(pass)
         << ": @" << (function ? function.getSymName() : StringRef("?"))
         << " is already scheduled (it holds braid.async regions, "
            "braid-schedule's output); run "
         << pass << " before braid-schedule";
}

FailureOr<SmallVector<func::FuncOp>>
mlir::braid::selectFunctions(ModuleOp module, StringRef name, StringRef pass) {
  SmallVector<func::FuncOp> functions;
  if (!name.empty()) {
    auto function = module.lookupSymbol<func::FuncOp>(name);
    if (!function || function.isExternal())
      return module.emitError(pass) << ": no function @" << name
                                    << " with a body",
             failure();
    functions.push_back(function);
    return functions;
  }
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal())
      functions.push_back(function);
  return functions;
}

FailureOr<SmallVector<func::FuncOp>>
mlir::braid::selectUnscheduledFunctions(ModuleOp module, StringRef name,
                                        StringRef pass) {
  FailureOr<SmallVector<func::FuncOp>> functions =
      selectFunctions(module, name, pass);
  if (failed(functions))
    return failure();
  for (func::FuncOp function : *functions)
    if (failed(requireUnscheduled(function, pass)))
      return failure();
  return functions;
}

LogicalResult mlir::braid::forEachUnscheduledFunction(
    ModuleOp module, StringRef name, StringRef pass,
    function_ref<LogicalResult(func::FuncOp)> body) {
  FailureOr<SmallVector<func::FuncOp>> functions =
      selectUnscheduledFunctions(module, name, pass);
  if (failed(functions))
    return failure();
  for (func::FuncOp function : *functions)
    if (failed(body(function)))
      return failure();
  return success();
}

LogicalResult mlir::braid::scheduleFunction(func::FuncOp function,
                                            const CostModel &model,
                                            int64_t memoryLimit,
                                            StringRef stream) {
  Block &body = function.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator()) {
    if (isa<AsyncOp, AwaitOp>(op))
      return op.emitOpError("braid-schedule expects synchronous collectives; "
                            "this program is already scheduled");
    if (op.getNumRegions() != 0)
      return op.emitOpError("braid-schedule does not handle ops with regions");
    ops.push_back(&op);
  }
  size_t n = ops.size();
  llvm::DenseMap<Operation *, size_t> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  SmallVector<SmallVector<size_t>> users(n);
  SmallVector<size_t> pending(n, 0);
  for (auto [i, op] : llvm::enumerate(ops)) {
    llvm::SmallDenseSet<size_t, 4> producers;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && index.count(def))
        producers.insert(index[def]);
    pending[i] = producers.size();
    for (size_t p : producers)
      users[p].push_back(i);
  }
  auto isCollective = [&](size_t i) {
    return isa<CollectiveOpInterface>(ops[i]);
  };
  std::set<size_t> readyCompute, readyCollectives;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0)
      (isCollective(i) ? readyCollectives : readyCompute).insert(i);

  SmallVector<double> available(n, 0.0); // when an op's operands exist
  SmallVector<double> finish(n, 0.0);
  SmallVector<bool> awaited(n, false);
  SmallVector<size_t> order;
  double computeTime = 0, commTime = 0;
  int64_t inFlight = 0;
  auto complete = [&](size_t i) {
    order.push_back(i);
    for (size_t u : users[i]) {
      available[u] = std::max(available[u], finish[i]);
      if (--pending[u] == 0)
        (isCollective(u) ? readyCollectives : readyCompute).insert(u);
    }
  };
  SmallVector<size_t> collectiveOrder;
  for (size_t i = 0; i < n; ++i)
    if (isCollective(i))
      collectiveOrder.push_back(i);
  collectiveOrder.push_back(n); // sentinel
  size_t nextCollective = 0;
  auto issue = [&](size_t c) {
    readyCollectives.erase(c);
    ++nextCollective;
    double start = std::max({commTime, computeTime, available[c]});
    finish[c] = start + model.seconds(ops[c]);
    commTime = finish[c];
    inFlight += getNumBytes(ops[c]->getResult(0));
    complete(c);
  };
  while (order.size() < n) {
    // Issue collectives in program order (one stream runs them in order,
    // so a later one must not get ahead of an earlier one still waiting for
    // its operands: a chain of ring shifts would otherwise fill the stream
    // before the other chains' first shifts), each as soon as its operands
    // exist, as far as the memory limit allows.
    while (!readyCollectives.empty() &&
           *readyCollectives.begin() == collectiveOrder[nextCollective]) {
      size_t c = *readyCollectives.begin();
      int64_t bytes = getNumBytes(ops[c]->getResult(0));
      if (memoryLimit > 0 && inFlight > 0 && inFlight + bytes > memoryLimit) {
        ops[c]->setAttr(kHeldByMemoryAttr, UnitAttr::get(function.getContext()));
        break;
      }
      issue(c);
    }
    if (order.size() == n)
      break;
    if (readyCompute.empty()) {
      if (readyCollectives.empty() ||
          *readyCollectives.begin() != collectiveOrder[nextCollective]) {
        for (size_t i = 0; i < n; ++i)
          if (pending[i] > 0)
            return ops[i]->emitOpError("braid-schedule: waits for operands "
                                       "that never become ready");
        return function.emitError("braid-schedule: the body has a cycle");
      }
      issue(*readyCollectives.begin()); // held back, but nothing else is left
      continue;
    }
    // The earliest op (program order) available now, else the soonest.
    std::optional<size_t> pick;
    for (size_t i : readyCompute)
      if (available[i] <= computeTime) {
        pick = i;
        break;
      }
    if (!pick)
      for (size_t i : readyCompute)
        if (!pick || available[i] < available[*pick])
          pick = i;
    size_t i = *pick;
    readyCompute.erase(i);
    double start = std::max(computeTime, available[i]);
    finish[i] = start + model.seconds(ops[i]);
    computeTime = finish[i];
    for (Value operand : ops[i]->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && index.count(def) && isCollective(index[def]) &&
          !awaited[index[def]]) {
        awaited[index[def]] = true;
        inFlight -= getNumBytes(operand);
      }
    complete(i);
  }

  // Emit: the new order; each collective in an async. A result read on the
  // compute stream is awaited right before its first reader there; one read
  // by another collective is awaited inside that collective's async, so the
  // communication stream waits for it, not the compute stream (a ring of
  // shifts runs back to back while compute goes on).
  Operation *terminator = body.getTerminator();
  for (size_t i : order)
    ops[i]->moveBefore(terminator);
  OpBuilder builder(function.getContext());
  SmallVector<std::pair<Operation *, AsyncOp>> wrapped;
  for (size_t i : order) {
    if (!isCollective(i))
      continue;
    Operation *collective = ops[i];
    Value result = collective->getResult(0);
    builder.setInsertionPoint(collective);
    auto async = AsyncOp::create(
        builder, collective->getLoc(),
        TypeRange{FutureType::get(cast<RankedTensorType>(result.getType()))},
        stream);
    Block *region = builder.createBlock(&async.getBody());
    collective->moveBefore(region, region->end());
    builder.setInsertionPointToEnd(region);
    YieldOp::create(builder, collective->getLoc(), result);
    wrapped.push_back({collective, async});
  }
  for (auto [collective, async] : wrapped) {
    Value result = collective->getResult(0);
    auto type = cast<RankedTensorType>(result.getType());
    Operation *yield = async.getBody().front().getTerminator();
    Operation *firstMain = nullptr;
    llvm::DenseMap<Operation *, Value> awaitedIn; // per consuming async
    for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
      Operation *user = use.getOwner();
      if (user == yield)
        continue;
      auto consumer = user->getParentOfType<AsyncOp>();
      if (!consumer) {
        if (!firstMain || user->isBeforeInBlock(firstMain))
          firstMain = user;
        continue;
      }
      Value &done = awaitedIn[consumer];
      if (!done) {
        builder.setInsertionPointToStart(&consumer.getBody().front());
        done = AwaitOp::create(builder, collective->getLoc(), type,
                               async.getResult(0));
      }
      use.set(done);
    }
    if (!firstMain)
      continue;
    builder.setInsertionPoint(firstMain);
    Value done = AwaitOp::create(builder, collective->getLoc(), type,
                                 async.getResult(0));
    for (OpOperand &use : llvm::make_early_inc_range(result.getUses()))
      if (use.getOwner() != yield && !use.getOwner()->getParentOfType<AsyncOp>())
        use.set(done);
  }
  return success();
}

namespace {
struct SchedulePass : public mlir::braid::impl::BraidScheduleBase<SchedulePass> {
  using BraidScheduleBase::BraidScheduleBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<CostModel> model = CostModel::load(hw, module);
    if (failed(model))
      return signalPassFailure();
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal() &&
          failed(scheduleFunction(function, *model, memoryLimit, stream)))
        return signalPassFailure();
  }
};
} // namespace
