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
#include "passes/IRHelpers.h"
#include "passes/Passes.h"

#include "dialects/braid/ArenaPacking.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"

#include <limits>
#include <map>
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

namespace {
/// The dependence graph of one function body and list schedules of it.
class ListScheduler {
public:
  /// `splitGathers`: gathers go to a second communication stream when the
  /// body also has other collectives.
  ListScheduler(ArrayRef<Operation *> ops, const CostModel &model,
                bool splitGathers)
      : ops(ops), n(ops.size()), users(n), producers(n, 0) {
    for (auto [i, op] : llvm::enumerate(ops))
      index[op] = i;
    // The kernels braid-to-exec will run: with their fusions, which make
    // an elementwise-heavy stretch of the program much shorter than its
    // ops one by one (a window filled by the unfused estimates leaves the
    // collective exposed when the fused plan runs).
    cost.assign(n, 0.0);
    CostModel::Kernels kernels;
    if (n)
      kernels = model.predictKernels(*ops.front()->getBlock());
    for (auto [i, op] : llvm::enumerate(ops))
      cost[i] = kernels.seconds.lookup(op);
    for (auto [i, op] : llvm::enumerate(ops)) {
      llvm::SmallDenseSet<size_t, 4> from;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp(); def && index.count(def))
          from.insert(index[def]);
      producers[i] = from.size();
      for (size_t p : from)
        users[p].push_back(i);
    }
    // Optional micro-batches (braid-acco's run-time count) wait for the
    // micro-batch before them: a run decides whether to run one when its
    // stream reaches its first op, which must therefore come after the
    // previous micro-batch, not be hoisted to the start (a slice of the
    // tokens is ready at once).
    gateOf.assign(n, -1);
    for (auto [i, op] : llvm::enumerate(ops))
      if (auto batch = op->getAttrOfType<IntegerAttr>(kMicroBatchAttrName)) {
        int64_t k = batch.getInt();
        microBatchOps[k].push_back(i);
        if (op->hasAttr(kOptionalAttrName) && k > 0)
          gateOf[i] = k - 1;
      }
    for (size_t i = 0; i < n; ++i)
      if (gateOf[i] >= 0) {
        auto gate = microBatchOps.find(gateOf[i]);
        if (gate == microBatchOps.end() || gate->second.empty())
          gateOf[i] = -1;
        else
          gated[gateOf[i]].push_back(i);
      }
    // A communication round's kernels (braid.round: braid-acco's update on
    // this rank's shard, between its reduce-scatters and all-gathers) run
    // on the communication stream like its collectives.
    commKernel.assign(n, false);
    for (size_t i = 0; i < n; ++i)
      commKernel[i] =
          !isCollective(i) && ops[i]->hasAttr(kRoundAttrName);
    feedsCollective.assign(n, false);
    chained.assign(n, false);
    gather.assign(n, false);
    bool others = false;
    for (size_t i = 0; i < n; ++i)
      if (isCollective(i)) {
        int64_t in = 0;
        for (Value operand : ops[i]->getOperands())
          if (isa<RankedTensorType>(operand.getType()))
            in += getNumBytes(operand);
        gather[i] = getNumBytes(ops[i]->getResult(0)) > in;
        others = others || !gather[i];
      }
    streamOfCollective.assign(n, 0);
    for (size_t i = 0; i < n; ++i)
      if (isCollective(i) && splitGathers && others && gather[i])
        streamOfCollective[i] = 1;
    for (size_t i = 0; i < n; ++i)
      if (onComm(i)) {
        collectiveOrder[streamOfCollective[i]].push_back(i);
        for (Value operand : ops[i]->getOperands())
          if (Operation *def = operand.getDefiningOp();
              def && index.count(def)) {
            bool fromCollective = onComm(index[def]);
            feedsCollective[index[def]] =
                feedsCollective[index[def]] || !fromCollective;
            chained[i] = chained[i] || fromCollective;
          }
      }
    // Each fusion runs as one unit: its ops back to back, once every value
    // it reads from outside exists, so that no collective is issued and no
    // await placed between them (braid-to-exec fuses only across compute).
    // Not for communication rounds (their kernels issue like collectives)
    // nor across an optional micro-batch's gate.
    unitOf.assign(n, -1);
    internalProducers.assign(n, 0);
    for (const SmallVector<Operation *> &fusion : kernels.fusions) {
      SmallVector<size_t> members;
      for (Operation *op : fusion)
        members.push_back(index.lookup(op));
      std::set<int64_t> batches;
      for (size_t m : members)
        if (auto batch =
                ops[m]->getAttrOfType<IntegerAttr>(kMicroBatchAttrName))
          batches.insert(batch.getInt());
      bool separate = llvm::any_of(members, [&](size_t m) {
        return onComm(m) || (gateOf[m] >= 0 && batches.count(gateOf[m]));
      });
      if (separate)
        continue;
      for (size_t m : members)
        unitOf[m] = static_cast<int64_t>(units.size());
      units.push_back(std::move(members));
    }
    for (size_t p = 0; p < n; ++p)
      for (size_t u : users[p])
        if (unitOf[u] >= 0 && unitOf[u] == unitOf[p])
          ++internalProducers[u];
    for (const SmallVector<size_t> &unit : units)
      for (size_t m : unit)
        feedsCollective[unit.front()] =
            feedsCollective[unit.front()] || feedsCollective[m];
  }

  /// The first op of the fusion op `i` is in (run first), or `i`.
  size_t unitHead(size_t i) const {
    return unitOf[i] >= 0 ? units[unitOf[i]].front() : i;
  }

  bool isCollective(size_t i) const {
    return isa<CollectiveOpInterface>(ops[i]);
  }
  /// Whether op `i` runs on a communication stream: a collective or a
  /// communication round's kernel. The schedule treats both alike (issued
  /// in program order as soon as their operands exist, each in an async).
  bool onComm(size_t i) const { return isCollective(i) || commKernel[i]; }
  /// A collective whose result is larger than its operands (all-gathers:
  /// ZeRO-3's parameter gathers).
  bool isGather(size_t i) const { return gather[i]; }
  /// The communication stream of collective `i`: 0, or 1 for gathers when
  /// they are split off.
  unsigned streamOf(size_t i) const { return streamOfCollective[i]; }
  size_t indexOf(Operation *op) const { return index.lookup(op); }
  bool contains(Operation *op) const { return index.count(op) != 0; }

  /// The smallest `rank` (per op index) among the compute ops of the body
  /// that read a result of `c` (on a communication stream); none if only
  /// communication-stream ops (or the terminator) read them.
  std::optional<int64_t> firstComputeUse(size_t c,
                                         ArrayRef<int64_t> rank) const {
    std::optional<int64_t> first;
    for (Operation *user : ops[c]->getUsers())
      if (contains(user) && !onComm(indexOf(user)))
        first = std::min(first.value_or(INT64_MAX), rank[indexOf(user)]);
    return first;
  }

  /// One schedule: collectives in program order, each issued as soon as its
  /// operands exist and at least notBefore[c] compute ops have run (unless
  /// nothing else can run); the compute stream runs the earliest available
  /// op. Fails with an error when the body cannot be ordered.
  FailureOr<SmallVector<size_t>> run(ArrayRef<int64_t> notBefore,
                                     func::FuncOp function,
                                     double *makespan = nullptr) const {
    SmallVector<size_t> pending(producers.begin(), producers.end());
    for (size_t i = 0; i < n; ++i)
      if (gateOf[i] >= 0)
        ++pending[i];
    // Per fusion, the values it still waits for from outside.
    SmallVector<size_t> unitPending(units.size(), 0);
    for (size_t i = 0; i < n; ++i)
      if (unitOf[i] >= 0)
        unitPending[unitOf[i]] += pending[i] - internalProducers[i];
    // Per gating micro-batch, its ops not yet issued.
    std::map<int64_t, size_t> gateLeft;
    for (const auto &[k, waiting] : gated)
      gateLeft[k] = microBatchOps.find(k)->second.size();
    std::set<size_t> readyCompute, readyCollectives;
    for (size_t i = 0; i < n; ++i)
      if (unitOf[i] < 0 ? pending[i] == 0
                        : unitHead(i) == i && unitPending[unitOf[i]] == 0)
        (onComm(i) ? readyCollectives : readyCompute).insert(i);
    // When an op's operands exist (a fusion's: at its first op).
    SmallVector<double> available(n, 0.0);
    SmallVector<double> finish(n, 0.0);
    SmallVector<size_t> order;
    double computeTime = 0;
    std::array<double, 2> commTime = {0, 0};
    int64_t computeCount = 0;
    // A value op `u` reads exists at `at`; `internal` when a fusion's own
    // op made it (the fusion runs its ops in order anyway).
    auto arrive = [&](size_t u, double at, bool internal) {
      --pending[u];
      if (unitOf[u] < 0) {
        available[u] = std::max(available[u], at);
        if (pending[u] == 0)
          (onComm(u) ? readyCollectives : readyCompute).insert(u);
        return;
      }
      if (internal)
        return;
      size_t head = unitHead(u);
      available[head] = std::max(available[head], at);
      if (--unitPending[unitOf[u]] == 0)
        readyCompute.insert(head);
    };
    auto complete = [&](size_t i) {
      order.push_back(i);
      for (size_t u : users[i])
        arrive(u, finish[i], unitOf[u] >= 0 && unitOf[u] == unitOf[i]);
      auto batch = ops[i]->getAttrOfType<IntegerAttr>(kMicroBatchAttrName);
      auto gate = batch ? gateLeft.find(batch.getInt()) : gateLeft.end();
      if (gate != gateLeft.end() && --gate->second == 0)
        for (size_t u : gated.find(gate->first)->second)
          arrive(u, finish[i], false);
    };
    SmallVector<bool> issued(n, false);
    std::array<size_t, 2> firstPending = {0, 0}; // into collectiveOrder
    auto issue = [&](size_t c) {
      readyCollectives.erase(c);
      issued[c] = true;
      unsigned s = streamOf(c);
      while (firstPending[s] < collectiveOrder[s].size() &&
             issued[collectiveOrder[s][firstPending[s]]])
        ++firstPending[s];
      double start = std::max({commTime[s], computeTime, available[c]});
      finish[c] = start + cost[c];
      commTime[s] = finish[c];
      complete(c);
    };
    // The next collective to issue: the first in program order whose
    // operands exist. It may pass earlier collectives still waiting for
    // theirs (a gradient's reduce-scatter need not wait for the embedding's,
    // which backward produces last), except when an operand is itself a
    // collective's result: a chain of ring shifts keeps its place behind
    // every earlier collective, so that one chain does not fill the stream
    // before the other chains' first shifts. One the memory limit holds back
    // is passed by later ready ones; with `force`, the first ready one is
    // taken, held or not.
    // Per communication stream; of the two, the earlier in program order.
    auto nextToIssue = [&](bool force) -> std::optional<size_t> {
      std::optional<size_t> best;
      for (unsigned s = 0; s < 2; ++s) {
        bool waiting = false;
        for (size_t j = firstPending[s]; j < collectiveOrder[s].size(); ++j) {
          size_t c = collectiveOrder[s][j];
          if (issued[c])
            continue;
          if (!readyCollectives.count(c)) {
            waiting = true;
            continue;
          }
          if (waiting && chained[c])
            continue;
          if (force || computeCount >= notBefore[c]) {
            if (!best || c < *best)
              best = c;
            break;
          }
        }
      }
      return best;
    };
    while (order.size() < n) {
      // Issue every collective that may go, each as soon as its operands
      // exist.
      while (std::optional<size_t> c = nextToIssue(false))
        issue(*c);
      if (order.size() == n)
        break;
      if (readyCompute.empty()) {
        std::optional<size_t> c = nextToIssue(true);
        if (!c) {
          for (size_t i = 0; i < n; ++i)
            if (pending[i] > 0)
              return ops[i]->emitOpError("braid-schedule: waits for operands "
                                         "that never become ready");
          return function.emitError("braid-schedule: the body has a cycle");
        }
        issue(*c); // held back, but nothing else is left
        continue;
      }
      // An op available now that feeds a collective (its result is a
      // collective's operand: the collective issues as soon as it has run,
      // and its operand, a gradient say, need not wait for the update at
      // the end of the program); else the earliest op (program order)
      // available now; else the soonest.
      std::optional<size_t> pick;
      for (size_t i : readyCompute)
        if (available[i] <= computeTime && feedsCollective[i]) {
          pick = i;
          break;
        }
      if (!pick)
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
      computeTime = std::max(computeTime, available[i]);
      ArrayRef<size_t> run =
          unitOf[i] >= 0 ? ArrayRef<size_t>(units[unitOf[i]]) : ArrayRef(i);
      for (size_t m : run) {
        finish[m] = computeTime + cost[m];
        computeTime = finish[m];
        ++computeCount;
        complete(m);
      }
    }
    if (makespan)
      *makespan = std::max({computeTime, commTime[0], commTime[1]});
    return order;
  }

private:
  ArrayRef<Operation *> ops;
  size_t n;
  /// Per op, the seconds its kernel takes (CostModel::predictKernels).
  SmallVector<double> cost;
  /// The fusions braid-to-exec will make, each run as a unit (its ops in
  /// program order); per op, its unit (-1: none) and how many of its
  /// producers are in its unit.
  SmallVector<SmallVector<size_t>> units;
  SmallVector<int64_t> unitOf;
  SmallVector<size_t> internalProducers;
  llvm::DenseMap<Operation *, size_t> index;
  SmallVector<SmallVector<size_t>> users;
  SmallVector<size_t> producers;
  /// Per communication stream, its collectives in program order.
  std::array<SmallVector<size_t>, 2> collectiveOrder;
  SmallVector<bool> feedsCollective;
  SmallVector<bool> gather;
  SmallVector<unsigned> streamOfCollective;
  /// Communication-stream ops with an operand another one produced.
  SmallVector<bool> chained;
  SmallVector<bool> commKernel;
  /// Ops per micro-batch (braid.micro_batch); per op of an optional
  /// micro-batch, the micro-batch it waits for (-1: none), and per such
  /// micro-batch the ops waiting for it.
  std::map<int64_t, SmallVector<size_t>> microBatchOps;
  SmallVector<int64_t> gateOf;
  std::map<int64_t, SmallVector<size_t>> gated;
};

/// The arena braid-to-exec will build for an order (the same live ranges
/// and the same packing, see lowering/BraidToExec.cpp), before the order is
/// emitted: its peak, and the bytes of weights, constants, arguments and
/// outputs in it.
struct ArenaEstimate {
  int64_t peak = 0;
  int64_t persistentBytes = 0;
};

/// With gathers on their own stream, a collective on the first stream is no
/// longer proven done by a later gather's await (one stream runs in order;
/// two do not), so its operand, a gradient, would stay allocated until its
/// own reader, the update at the end of the step. It is awaited where a
/// gather issued after it is first awaited instead, when that comes first:
/// where one stream would have proven it done, and where waiting for it
/// costs no more than one stream did. Per op index: the order index of the
/// op that await goes before, or -1.
SmallVector<int64_t> earlyAwaits(ArrayRef<Operation *> ops,
                                 const ListScheduler &graph,
                                 ArrayRef<size_t> order) {
  size_t n = ops.size();
  SmallVector<int64_t> position(n, 0), early(n, -1);
  for (auto [k, i] : llvm::enumerate(order))
    position[i] = int64_t(k);
  std::optional<int64_t> gatherReader; // earliest, of gathers issued later
  for (size_t k = order.size(); k-- > 0;) {
    size_t c = order[k];
    if (!graph.onComm(c))
      continue;
    std::optional<int64_t> reader = graph.firstComputeUse(c, position);
    if (graph.streamOf(c) == 1) {
      if (reader)
        gatherReader = std::min(gatherReader.value_or(INT64_MAX), *reader);
      continue;
    }
    if (reader && gatherReader && *gatherReader < *reader)
      early[c] = *gatherReader;
  }
  return early;
}

/// Positions: the op at order index k is at 2k+1; the await braid-schedule
/// inserts before it (for a collective it is the first compute-stream
/// reader of, or earlier: earlyAwaits) at 2k.
ArenaEstimate estimateArena(func::FuncOp function, ArrayRef<Operation *> ops,
                            const ListScheduler &graph,
                            ArrayRef<size_t> order) {
  constexpr int64_t kAlignment = 64; // braid-to-exec's default
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  size_t n = ops.size();
  int64_t end = 2 * int64_t(n) + 2;
  SmallVector<int64_t> position(n);
  for (auto [k, i] : llvm::enumerate(order))
    position[i] = 2 * int64_t(k) + 1;
  Operation *terminator = function.getBody().front().getTerminator();

  // Per collective, where the compute stream awaits it (kNone: nowhere).
  SmallVector<int64_t> awaitAt(n, kNone);
  SmallVector<int64_t> early = earlyAwaits(ops, graph, order);
  for (size_t i = 0; i < n; ++i) {
    if (!graph.onComm(i))
      continue;
    if (std::optional<int64_t> reader = graph.firstComputeUse(i, position))
      awaitAt[i] = *reader - 1;
    else if (llvm::is_contained(ops[i]->getUsers(), terminator))
      awaitAt[i] = end - 2;
    if (early[i] >= 0 && awaitAt[i] != kNone)
      awaitAt[i] = std::min(awaitAt[i], position[order[early[i]]] - 1);
  }
  // When the compute stream knows a collective is done: its own await or a
  // later one's on its stream (a stream runs in order).
  SmallVector<int64_t> done(n, end);
  std::array<int64_t, 2> later = {end, end};
  for (size_t k = order.size(); k-- > 0;) {
    size_t i = order[k];
    if (!graph.onComm(i))
      continue;
    int64_t &first = later[graph.streamOf(i)];
    first = std::min(first, awaitAt[i]);
    done[i] = first;
  }

  llvm::EquivalenceClasses<Value> aliases;
  SmallVector<Value> values; // in emitted order, for the tie-break
  for (BlockArgument arg : function.getArguments())
    aliases.insert(arg);
  for (size_t i : order)
    for (Value result : ops[i]->getResults())
      if (isa<RankedTensorType>(result.getType())) {
        values.push_back(result);
        aliases.insert(result);
        if (auto reshape = dyn_cast<ReshapeOp>(ops[i]))
          aliases.unionSets(reshape.getInput(), result);
      }
  auto leader = [&](Value v) { return aliases.getOrInsertLeaderValue(v); };
  llvm::MapVector<Value, std::pair<int64_t, int64_t>> ranges;
  auto extend = [&](Value v, int64_t from, int64_t to) {
    auto [it, inserted] = ranges.try_emplace(leader(v), from, to);
    it->second.first = std::min(it->second.first, from);
    it->second.second = std::max(it->second.second, to);
  };
  llvm::DenseSet<Value> persistent;
  for (BlockArgument arg : function.getArguments())
    persistent.insert(leader(arg));
  for (Value v : terminator->getOperands())
    if (isa<RankedTensorType>(v.getType()))
      persistent.insert(leader(v));
  for (size_t i : order) {
    Operation *op = ops[i];
    if (isa<GetWeightOp, ConstantOp>(op)) {
      persistent.insert(leader(op->getResult(0)));
      continue;
    }
    if (auto set = dyn_cast<SetWeightOp>(op)) {
      extend(set.getValue(), end, end);
      continue;
    }
    if (isa<ReshapeOp>(op))
      continue;
    int64_t at = position[i];
    int64_t until = graph.onComm(i) ? std::max(at, done[i]) : at;
    for (Value v : op->getOperands())
      if (isa<RankedTensorType>(v.getType()))
        extend(v, at, until);
    for (Value v : op->getResults())
      if (isa<RankedTensorType>(v.getType()))
        extend(v, at, until);
  }
  for (Value v : persistent)
    extend(v, 0, end);

  llvm::DenseMap<Value, int64_t> classBytes, rank;
  int64_t numArgs = function.getNumArguments();
  for (BlockArgument arg : function.getArguments()) {
    classBytes[leader(arg)] =
        std::max(classBytes.lookup(leader(arg)), getNumBytes(arg));
    rank.try_emplace(leader(arg), int64_t(arg.getArgNumber()) - numArgs);
  }
  for (auto [k, v] : llvm::enumerate(values)) {
    classBytes[leader(v)] =
        std::max(classBytes.lookup(leader(v)), getNumBytes(v));
    rank.try_emplace(leader(v), k);
  }
  ArenaEstimate estimate;
  SmallVector<ArenaBuffer> buffers;
  for (auto &[v, range] : ranges) {
    bool whole = persistent.count(v) != 0;
    buffers.push_back({range.first, range.second, classBytes.lookup(v), whole,
                       rank.lookup(v)});
    if (whole)
      estimate.persistentBytes +=
          (std::max<int64_t>(1, classBytes.lookup(v)) + kAlignment - 1) /
          kAlignment * kAlignment;
  }
  estimate.peak = packArena(buffers, kAlignment).peak;
  return estimate;
}

/// The gathers braid-schedule may hold back (prefetch): collectives larger
/// than their operands, outside communication rounds, read on the compute
/// stream; per op, the compute-stream index of its first reader.
struct PrefetchGathers {
  SmallVector<size_t> gathers;
  SmallVector<int64_t> firstUse;
  int64_t numCompute = 0;

  /// Per op of `n`, the compute ops that must run before it issues: each
  /// gather at most `window` ops ahead of its first reader.
  SmallVector<int64_t> notBefore(size_t n, int64_t window) const {
    SmallVector<int64_t> limits(n, 0);
    for (size_t g : gathers)
      limits[g] = std::max<int64_t>(0, firstUse[g] - window);
    return limits;
  }
};

PrefetchGathers prefetchGathers(ArrayRef<Operation *> ops,
                                const ListScheduler &graph) {
  size_t n = ops.size();
  PrefetchGathers result;
  result.firstUse.assign(n, 0);
  SmallVector<int64_t> computeIndex(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (!graph.onComm(i))
      computeIndex[i] = result.numCompute++;
  for (size_t i = 0; i < n; ++i) {
    if (!graph.isCollective(i) || !graph.isGather(i) ||
        ops[i]->hasAttr(kRoundAttrName))
      continue;
    std::optional<int64_t> use = graph.firstComputeUse(i, computeIndex);
    if (!use)
      continue;
    result.firstUse[i] = *use;
    result.gathers.push_back(i);
  }
  return result;
}

/// The body's ops, in order, without the terminator.
SmallVector<Operation *> bodyOps(func::FuncOp function) {
  SmallVector<Operation *> ops;
  for (Operation &op : function.getBody().front().without_terminator())
    ops.push_back(&op);
  return ops;
}

/// The smallest peak a memory limit can get from the current body: every
/// gather issued just before its first reader (the plan the limit's
/// bisection falls back to; a limit below it cannot be met).
FailureOr<int64_t> tightestPeak(func::FuncOp function, const CostModel &model,
                                bool splitGathers) {
  SmallVector<Operation *> ops = bodyOps(function);
  ListScheduler graph(ops, model, splitGathers);
  PrefetchGathers held = prefetchGathers(ops, graph);
  FailureOr<SmallVector<size_t>> order =
      graph.run(held.notBefore(ops.size(), /*window=*/0), function);
  if (failed(order))
    return failure();
  return estimateArena(function, ops, graph, *order).peak;
}

/// Under a memory limit, the regathers (ZeRO-3's backward parameter
/// gathers, Megatron-SP's backward activation gathers) whose forward copy
/// fits are dropped and the forward copy kept alive instead: one
/// collective fewer each, paid in memory the limit says is there (FSDP's
/// reshard_after_forward=False, per value). The forward's latest gathers
/// are kept first (the backward pass reads them first, so they live the
/// least longer); how many by bisection on the tightest plan's peak, the
/// one the limit's prefetch bisection falls back to, checked at each
/// step rather than assumed monotonic. Nothing is kept when even the
/// regathering plan does not fit (scheduleFunction then says why).
LogicalResult keepForwardGathers(func::FuncOp function, const CostModel &model,
                                 int64_t memoryLimit, bool splitGathers) {
  Block &body = function.getBody().front();
  SmallVector<std::pair<Operation *, Operation *>> pairs; // first, again
  DenseMap<Operation *, size_t> position;
  for (auto [i, op] : llvm::enumerate(body.without_terminator()))
    position[&op] = i;
  for (auto again : body.getOps<AllGatherOp>())
    if (again->hasAttr(kRegatherAttrName))
      if (AllGatherOp first = firstSameGather(again))
        pairs.push_back({first, again});
  if (pairs.empty())
    return success();
  llvm::stable_sort(pairs, [&](const auto &a, const auto &b) {
    return position[a.first] > position[b.first];
  });

  // Keeps the first k: each regather's uses read the first copy, and the
  // regather leaves the block; undone in reverse.
  struct Kept {
    Operation *again;
    Operation *before;
    SmallVector<OpOperand *> uses;
  };
  SmallVector<Kept> kept;
  auto keep = [&](size_t k) {
    for (size_t i = kept.size(); i < k; ++i) {
      auto [first, again] = pairs[i];
      Kept entry{again, again->getNextNode(), {}};
      for (OpOperand &use : again->getResult(0).getUses())
        entry.uses.push_back(&use);
      for (OpOperand *use : entry.uses)
        use->set(first->getResult(0));
      again->remove();
      kept.push_back(std::move(entry));
    }
  };
  auto undo = [&](size_t k) {
    while (kept.size() > k) {
      Kept &entry = kept.back();
      body.getOperations().insert(Block::iterator(entry.before), entry.again);
      for (OpOperand *use : entry.uses)
        use->set(entry.again->getResult(0));
      kept.pop_back();
    }
  };
  auto fits = [&](size_t k) -> FailureOr<bool> {
    undo(std::min(k, kept.size()));
    keep(k);
    FailureOr<int64_t> peak = tightestPeak(function, model, splitGathers);
    if (failed(peak))
      return failure();
    return *peak <= memoryLimit;
  };
  auto fail = [&]() {
    undo(0);
    return failure();
  };
  size_t low = 0, high = pairs.size();
  FailureOr<bool> all = fits(high);
  if (failed(all))
    return fail();
  if (!*all) {
    FailureOr<bool> none = fits(0);
    if (failed(none))
      return fail();
    if (!*none)
      return success(); // scheduleFunction says what it needs
    while (high - low > 1) {
      size_t mid = low + (high - low) / 2;
      FailureOr<bool> ok = fits(mid);
      if (failed(ok))
        return fail();
      (*ok ? low : high) = mid;
    }
    undo(0);
    keep(low);
  }
  int64_t bytes = 0;
  for (Kept &entry : kept) {
    bytes += getNumBytes(entry.again->getResult(0));
    Value input = entry.again->getNumOperands() ? entry.again->getOperand(0)
                                                : Value();
    entry.again->erase();
    // The regather's own reshape of its operand, now unread.
    while (input) {
      Operation *def = input.getDefiningOp();
      if (!isa_and_nonnull<ReshapeOp>(def) || !def->use_empty())
        break;
      input = def->getOperand(0);
      def->erase();
    }
  }
  function.emitRemark() << "braid-schedule: @" << function.getSymName()
                        << " keeps " << kept.size() << " of " << pairs.size()
                        << " gathered values from the forward pass for the "
                           "backward pass instead of gathering them again ("
                        << bytes << " bytes; memory-limit " << memoryLimit
                        << ")";
  return success();
}
} // namespace

LogicalResult mlir::braid::scheduleFunction(func::FuncOp function,
                                            const CostModel &model,
                                            int64_t memoryLimit,
                                            StringRef stream,
                                            bool boundPrefetch,
                                            StringRef gatherStream) {
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
  bool splitGathers = !gatherStream.empty() && gatherStream != stream;
  if (memoryLimit > 0) {
    if (failed(keepForwardGathers(function, model, memoryLimit, splitGathers)))
      return failure();
    ops = bodyOps(function);
  }
  size_t n = ops.size();
  ListScheduler graph(ops, model, splitGathers);
  SmallVector<int64_t> notBefore(n, 0);
  FailureOr<SmallVector<size_t>> scheduled = graph.run(notBefore, function);
  if (failed(scheduled))
    return failure();
  SmallVector<size_t> order = std::move(*scheduled);

  // Prefetch: a gather (a collective whose result is larger than its
  // operands: ZeRO-3's parameter gathers) may issue only once the compute
  // stream is within a window of W ops (in program order) of its first
  // reader. Unbounded, every parameter gather of a ZeRO-3 step would issue
  // at its start and hold all parameters twice (forward and backward
  // copies). With prefetch=auto, W is the smallest window whose estimated
  // makespan is within 1% of the unbounded one's (as far ahead as hiding
  // the gathers needs, and no further); the memory limit then takes the
  // largest W <= that whose arena fits. Both by bisection on whole
  // schedules, checked rather than assumed monotonic. Other collectives are
  // not held back: an all-reduce or reduce-scatter issued later keeps its
  // operand, a gradient, alive longer, and saves nothing.
  // Nor are the gathers of a communication round with a run-time
  // micro-batch count (braid-acco, braid.round): the round's optional
  // micro-batches run only while its communication is in flight, so a
  // gather held back to its first reader would keep them all running.
  PrefetchGathers held = prefetchGathers(ops, graph);
  int64_t numCompute = held.numCompute;
  SmallVector<size_t> &gathers = held.gathers;
  struct Trial {
    int64_t window = 0;
    SmallVector<size_t> order;
    ArenaEstimate arena;
    double makespan = 0;
  };
  auto trial = [&](int64_t window) -> FailureOr<Trial> {
    Trial t;
    t.window = window;
    FailureOr<SmallVector<size_t>> tried =
        graph.run(held.notBefore(n, window), function, &t.makespan);
    if (failed(tried))
      return failure();
    t.order = std::move(*tried);
    t.arena = estimateArena(function, ops, graph, t.order);
    return t;
  };
  if (!gathers.empty() && (boundPrefetch || memoryLimit > 0)) {
    FailureOr<Trial> unbounded = trial(numCompute);
    if (failed(unbounded))
      return failure();
    FailureOr<Trial> tightest = trial(0);
    if (failed(tightest))
      return failure();
    // Bisection between `low`, which is not `ok`, and `high`, which is:
    // both end one window apart.
    auto bisect = [&](Trial &low, Trial &high,
                      function_ref<bool(const Trial &)> ok) -> LogicalResult {
      while (high.window - low.window > 1) {
        FailureOr<Trial> mid =
            trial(low.window + (high.window - low.window) / 2);
        if (failed(mid))
          return failure();
        (ok(*mid) ? high : low) = std::move(*mid);
      }
      return success();
    };
    Trial chosen = *unbounded;
    if (boundPrefetch) {
      // The smallest window within 1% of unbounded prefetch's time.
      double slowest = unbounded->makespan * 1.01;
      auto fast = [&](const Trial &t) { return t.makespan <= slowest; };
      Trial low = *tightest, high = *unbounded;
      if (fast(low))
        high = low;
      else if (failed(bisect(low, high, fast)))
        return failure();
      if (high.arena.peak < chosen.arena.peak)
        chosen = std::move(high);
    }
    int64_t persistentBytes = tightest->arena.persistentBytes;
    if (memoryLimit > 0 && persistentBytes > memoryLimit)
      return function.emitError()
             << "braid-schedule: memory-limit " << memoryLimit
             << " bytes cannot be met: @" << function.getSymName()
             << "'s weights, optimizer state, constants, inputs and outputs "
                "alone take "
             << persistentBytes << " bytes per rank";
    if (memoryLimit > 0 && chosen.arena.peak > memoryLimit) {
      if (tightest->arena.peak > memoryLimit)
        return function.emitError()
               << "braid-schedule: memory-limit " << memoryLimit
               << " bytes cannot be met: @" << function.getSymName()
               << " needs " << tightest->arena.peak
               << " bytes per rank even with every gather issued just "
                  "before its first reader ("
               << persistentBytes
               << " of them weights, optimizer state, constants, inputs and "
                  "outputs; "
               << unbounded->arena.peak
               << " with unbounded prefetch); braid-schedule does not "
                  "reorder compute to save memory";
      // The largest window that fits: the last below "does not fit".
      Trial fits = *tightest;
      if (failed(bisect(fits, chosen, [&](const Trial &t) {
            return t.arena.peak > memoryLimit;
          })))
        return failure();
      chosen = std::move(fits);
    }
    // Held back: issued after more compute ops than with unbounded
    // prefetch.
    auto computeBeforeIssue = [&](ArrayRef<size_t> o) {
      SmallVector<int64_t> before(n, 0);
      int64_t count = 0;
      for (size_t i : o) {
        if (graph.onComm(i))
          before[i] = count;
        else
          ++count;
      }
      return before;
    };
    SmallVector<int64_t> was = computeBeforeIssue(unbounded->order);
    SmallVector<int64_t> now = computeBeforeIssue(chosen.order);
    int64_t numHeld = 0;
    for (size_t g : gathers)
      if (now[g] > was[g]) {
        ops[g]->setAttr(kHeldByMemoryAttr,
                        UnitAttr::get(function.getContext()));
        ++numHeld;
      }
    order = std::move(chosen.order);
    if (memoryLimit > 0) {
      InFlightDiagnostic remark = function.emitRemark();
      remark << "braid-schedule: @" << function.getSymName() << " needs "
             << chosen.arena.peak << " bytes per rank (memory-limit "
             << memoryLimit << "; " << unbounded->arena.peak
             << " with unbounded prefetch): ";
      if (numHeld == 0)
        remark << "no gather held back";
      else
        remark << "gathers issued at most " << chosen.window
               << " ops ahead of their first reader, " << numHeld << " of "
               << gathers.size() << " held back";
    }
  } else if (memoryLimit > 0) {
    ArenaEstimate estimate = estimateArena(function, ops, graph, order);
    if (estimate.peak > memoryLimit)
      return function.emitError()
             << "braid-schedule: memory-limit " << memoryLimit
             << " bytes cannot be met: @" << function.getSymName()
             << " needs " << estimate.peak << " bytes per rank ("
             << estimate.persistentBytes
             << " of them weights, optimizer state, constants, inputs and "
                "outputs) and has no gather to hold back; braid-schedule "
                "does not reorder compute to save memory";
    function.emitRemark() << "braid-schedule: @" << function.getSymName()
                          << " needs " << estimate.peak
                          << " bytes per rank (memory-limit " << memoryLimit
                          << "): no gather to hold back";
  }

  // braid-to-exec's fusions may grow the arena a little; the limit tells it
  // how far they may.
  if (memoryLimit > 0)
    function->setAttr(kMemoryLimitAttrName,
                      IntegerAttr::get(IntegerType::get(function.getContext(),
                                                        64),
                                       memoryLimit));

  // Emit: the new order; each collective (and each communication round's
  // kernel) in an async. A result read on the compute stream is awaited
  // right before its first reader there; one read by another async is
  // awaited inside that async, so the communication stream waits for it,
  // not the compute stream (a ring of shifts runs back to back while
  // compute goes on).
  Operation *terminator = body.getTerminator();
  for (size_t i : order)
    ops[i]->moveBefore(terminator);
  OpBuilder builder(function.getContext());
  // The asyncs: one per collective; a communication round's work issued
  // back to back (no compute op between in the order) shares one, so that
  // braid-to-exec fuses the update's elementwise chains there as it does
  // on the compute stream.
  // Ops that do no work (weight reads, constants, index arithmetic) do not
  // part a run: they move before its async.
  auto free = [](Operation *op) {
    return isa<GetWeightOp, ConstantOp, RankOp, arith::ConstantOp,
               arith::AddIOp, arith::SubIOp, arith::MulIOp>(op);
  };
  struct Run {
    SmallVector<size_t> members;
    SmallVector<size_t> hoisted;
  };
  SmallVector<Run> runs;
  bool open = false; // the last run takes the next round op
  SmallVector<size_t> between;
  for (size_t i : order) {
    if (!graph.onComm(i)) {
      if (open && free(ops[i]))
        between.push_back(i);
      else
        open = false;
      continue;
    }
    bool round = ops[i]->hasAttr(kRoundAttrName);
    if (open && round &&
        graph.streamOf(runs.back().members.back()) == graph.streamOf(i)) {
      runs.back().hoisted.append(between);
      runs.back().members.push_back(i);
    } else {
      runs.push_back({{i}, {}});
    }
    between.clear();
    open = round;
  }
  SmallVector<std::pair<SmallVector<Value>, AsyncOp>> wrapped;
  for (const Run &each : runs) {
    ArrayRef<size_t> run = each.members;
    for (size_t h : each.hoisted)
      ops[h]->moveBefore(ops[run.front()]);
    llvm::SmallPtrSet<Operation *, 8> inRun;
    for (size_t i : run)
      inRun.insert(ops[i]);
    // Results read outside the run leave it as futures.
    SmallVector<Value> leaving;
    SmallVector<Type> futures;
    for (size_t i : run)
      for (Value result : ops[i]->getResults()) {
        bool outside = llvm::any_of(result.getUsers(), [&](Operation *user) {
          return !inRun.contains(user);
        });
        if (!outside)
          continue;
        auto type = dyn_cast<RankedTensorType>(result.getType());
        if (!type)
          return ops[i]->emitOpError("braid-schedule: a communication-stream "
                                     "op with a result that is not a tensor");
        leaving.push_back(result);
        futures.push_back(FutureType::get(type));
      }
    Operation *first = ops[run.front()];
    builder.setInsertionPoint(first);
    auto async = AsyncOp::create(builder, first->getLoc(), futures,
                                 graph.streamOf(run.front()) ? gatherStream
                                                             : stream);
    Block *region = builder.createBlock(&async.getBody());
    for (size_t i : run)
      ops[i]->moveBefore(region, region->end());
    builder.setInsertionPointToEnd(region);
    YieldOp::create(builder, first->getLoc(), leaving);
    wrapped.push_back({std::move(leaving), async});
  }
  SmallVector<int64_t> early = earlyAwaits(ops, graph, order);
  for (auto &[values, async] : wrapped) {
    Operation *yield = async.getBody().front().getTerminator();
    for (auto [result, future] : llvm::zip(values, async.getResults())) {
      Operation *op = result.getDefiningOp();
      auto type = cast<RankedTensorType>(result.getType());
      Operation *firstMain = nullptr;
      llvm::DenseMap<Operation *, Value> awaitedIn; // per consuming async
      for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
        Operation *user = use.getOwner();
        if (user == yield)
          continue;
        auto consumer = user->getParentOfType<AsyncOp>();
        if (consumer == async)
          continue; // read in its own region, after it
        if (!consumer) {
          if (!firstMain || user->isBeforeInBlock(firstMain))
            firstMain = user;
          continue;
        }
        Value &done = awaitedIn[consumer];
        if (!done) {
          builder.setInsertionPointToStart(&consumer.getBody().front());
          done = AwaitOp::create(builder, op->getLoc(), type, future);
        }
        use.set(done);
      }
      if (!firstMain)
        continue;
      if (int64_t at = early[graph.indexOf(op)]; at >= 0) {
        Operation *gatherReader = ops[order[at]];
        if (gatherReader->isBeforeInBlock(firstMain))
          firstMain = gatherReader;
      }
      // Before the fusion its reader is in, not inside it.
      if (graph.contains(firstMain))
        firstMain = ops[graph.unitHead(graph.indexOf(firstMain))];
      builder.setInsertionPoint(firstMain);
      Value done = AwaitOp::create(builder, op->getLoc(), type, future);
      for (OpOperand &use : llvm::make_early_inc_range(result.getUses()))
        if (use.getOwner() != yield &&
            !use.getOwner()->getParentOfType<AsyncOp>())
          use.set(done);
    }
  }
  return success();
}

namespace {
struct SchedulePass : public mlir::braid::impl::BraidScheduleBase<SchedulePass> {
  using BraidScheduleBase::BraidScheduleBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (prefetch != "auto" && prefetch != "all") {
      module.emitError("braid-schedule: prefetch must be auto or all, not '")
          << prefetch << "'";
      return signalPassFailure();
    }
    FailureOr<CostModel> model = CostModel::load(hw, module);
    if (failed(model))
      return signalPassFailure();
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal() &&
          failed(scheduleFunction(function, *model, memoryLimit, stream,
                                           prefetch == "auto", gatherStream)))
        return signalPassFailure();
  }
};
} // namespace
