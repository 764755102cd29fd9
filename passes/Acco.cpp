//===- Acco.cpp - ACCO: the optimizer step beside the next gradients ------===//
//
// braid-acco turns a one-rank training step (braid-training-step's @main,
// run with mark-gradients) into one optimizer step of ACCO (Nabli et al.,
// arXiv 2406.02613, as the authors' trainer_decoupled.py does it) over the
// `ranks` ranks of a data-parallel mesh. One call runs two rounds of
// `micro` micro-batches on every rank; the communication of a round (the
// reduce-scatter of gradients, the optimizer on this rank's 1/P shard of
// every parameter, the all-gather of the parameters) runs beside the
// compute of the same round:
//
//   round 1  comm:    t~ = opt(t, state; pending / n)     state not kept
//            compute: B1 = sum of M gradients at t
//   round 2  comm:    t  = opt(t, state; (pending + B1) / (n + M P))
//            compute: B2 = sum of M gradients at t~       pending for the
//                                                          next call
//
// where `pending` is the sum of the previous call's B2 over the ranks and n
// its count (0 in the first call: the estimate is then the optimizer with a
// zero gradient). Round 1 is ACCO's *estimate* (delay compensation: the
// shard and optimizer state are restored after it, so only t~ survives),
// round 2 the *real* step on both halves of the gradients. Neither round's
// communication reads what its own round computes, so braid-schedule
// overlaps them without help, as it does CoCoD-SGD's average.
//
// State between calls: the parameters (whole on every rank), the optimizer
// state split over the ranks as ZeRO-1 splits it (each dimension-0-divisible
// state weight along its first dimension divisible by P), every rank's own
// pending gradient sum (`<parameter>.acco_pending`, declared [P, ...] and
// stored split, so a checkpoint holds every rank's) and the count
// `braid.acco.count`.
//
// Data: step k of a call (k < 2M) reads rows [k P B, (k + 1) P B) of the
// tokens and labels, rank r the B rows from k P B + r B: the windows
// synchronous data parallelism at batch P B reads, in the same order. The
// loss is [2M], each micro-batch's loss averaged over the ranks.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "dialects/braid/Builders.h"
#include "passes/IRHelpers.h"
#include "passes/OverlapModel.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDACCO
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

constexpr StringLiteral kGradientMark = "braid.gradient_of";

/// The ops of `body` that computing `targets` needs, stopping at values for
/// which `given` holds; nullptr in `*unreached` when every path ends there,
/// else the first value that is a block argument not given.
llvm::DenseSet<Operation *> sliceOf(ArrayRef<Value> targets,
                                    llvm::function_ref<bool(Value)> given,
                                    Value *unreached) {
  llvm::DenseSet<Operation *> ops;
  SmallVector<Value> work(targets.begin(), targets.end());
  *unreached = Value();
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (given(v))
      continue;
    Operation *def = v.getDefiningOp();
    if (!def) {
      if (!*unreached)
        *unreached = v;
      continue;
    }
    if (!ops.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  return ops;
}

/// The optimizer's elementwise ops, which the update computes on shards.
bool isElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, SqrtOp, RsqrtOp,
             NegOp, ExpOp, LogOp, CastOp, SelectOp, CompareOp>(op);
}

struct Acco : public mlir::braid::impl::BraidAccoBase<Acco> {
  using BraidAccoBase::BraidAccoBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t count = micro;
    if (count == 0 && !synchronous) {
      FailureOr<int64_t> chosen = chooseMicro(module);
      if (failed(chosen))
        return signalPassFailure();
      count = *chosen;
    }
    if (failed(rewrite(module, count)))
      signalPassFailure();
  }

  /// micro=auto: the fewest micro-batches per round whose compute covers
  /// the round's communication (the reduce-scatters, all-gathers and
  /// all-reduces of one optimizer step) on the cost model, at most 16.
  FailureOr<int64_t> chooseMicro(ModuleOp module) {
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
    if (failed(rewrite(*copy, 1)))
      return failure();
    FailureOr<ComputeAndCommunication> estimate =
        estimateComputeAndCommunication(*copy, hw, module, [](Operation *op) {
          return isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op)
                     ? CostPart::Communication
                     : CostPart::Compute;
        });
    if (failed(estimate))
      return failure();
    double compute = estimate->compute, communication = estimate->communication;
    int64_t chosen = estimate->coveringCount(16);
    char times[112];
    std::snprintf(times, sizeof(times),
                  "one round's compute %.3g ms per micro-batch, its "
                  "communication %.3g ms",
                  compute / 2 * 1e3, communication / 2 * 1e3);
    mlir::emitRemark(module.getLoc())
        << "braid-acco: micro auto = " << chosen
        << " (micro-batches per round; hw " << hw << ": " << times << ")";
    return chosen;
  }

  LogicalResult rewrite(ModuleOp module, int64_t micro);
};

LogicalResult Acco::rewrite(ModuleOp module, int64_t micro) {
  auto fail = [&](Operation *at) { return at->emitError("braid-acco: "); };
  if (micro < 1 || ranks < 1)
    return fail(module) << "micro and ranks must be positive (micro=" << micro
                        << ", ranks=" << static_cast<int64_t>(ranks) << ")";
  if (maxMicro != 0 && (maxMicro < micro || synchronous))
    return fail(module) << "max-micro=" << static_cast<int64_t>(maxMicro)
                        << (synchronous
                                ? " does not apply to synchronous "
                                  "accumulation"
                                : " is below micro=" + std::to_string(micro));
  // A run-time count: room for maxMicro micro-batches per round, the ones
  // past `micro` optional.
  bool dynamic = maxMicro > micro;
  int64_t perRound = dynamic ? static_cast<int64_t>(maxMicro) : micro;
  FailureOr<OneRankStep> oneRank =
      checkOneRankStep(module, "braid-acco", "ACCO");
  if (failed(oneRank))
    return failure();
  func::FuncOp main = oneRank->main;
  DictionaryAttr training = oneRank->training;
  Block &body = main.getBody().front();
  func::ReturnOp ret = oneRank->ret;
  RankedTensorType lossType = oneRank->lossType;
  Value loss = ret.getOperand(0);
  int64_t batch = oneRank->batch;
  ArrayRef<bool> data = oneRank->data;
  if (llvm::count(data, true) != 2 ||
      (int64_t)data.size() != llvm::count(data, true))
    return fail(main) << "@main must take only the arguments named '"
                      << training.getAs<StringAttr>("tokens").getValue()
                      << "' and '"
                      << training.getAs<StringAttr>("labels").getValue() << "'";

  // The gradients braid-training-step marked, in program order.
  SmallVector<Value> grads;
  SmallVector<StringRef> gradOf;
  for (Operation &op : body) {
    auto of = op.getAttrOfType<FlatSymbolRefAttr>(kGradientMark);
    if (!of)
      continue;
    if (op.getNumResults() != 1)
      return fail(&op) << "a marked gradient must be the only result of its "
                          "op";
    grads.push_back(op.getResult(0));
    gradOf.push_back(of.getValue());
    op.removeAttr(kGradientMark);
  }
  if (grads.empty())
    return fail(main) << "@main marks no gradients (run braid-training-step "
                         "with mark-gradients=true)";
  llvm::DenseSet<Value> gradSet(grads.begin(), grads.end());
  for (Value g : grads) {
    auto type = cast<RankedTensorType>(g.getType());
    if (!type.getElementType().isF32())
      return fail(g.getDefiningOp())
             << "ACCO accumulates f32 gradients; this one is " << type;
  }

  // State: what the step sets, and how it reads weights.
  SymbolTable symbols(module);
  SmallVector<SetWeightOp> sets;
  llvm::DenseSet<StringAttr> parameters;
  for (Operation &op : body) {
    if (auto set = dyn_cast<SetWeightOp>(op)) {
      if (set.getMesh())
        return fail(set) << "sets a sharded weight; the step must not be "
                            "partitioned";
      sets.push_back(set);
      if (!symbols.lookup<WeightOp>(set.getName()).getZeros())
        parameters.insert(set.getNameAttr().getAttr());
    }
    if (auto get = dyn_cast<GetWeightOp>(op))
      if (get.getMesh() || (get.getBlock() &&
                            symbols.lookup<WeightOp>(get.getName()).getState()))
        return fail(get) << "reads a shard or a block of state weight @"
                         << get.getName()
                         << "; ACCO needs whole reads of the state";
    if (isa<AllReduceOp, ReduceScatterOp, AllGatherOp, AllToAllOp,
            CollectivePermuteOp, BroadcastOp>(op))
      return fail(&op) << "the one-rank step must have no collectives";
  }
  if (parameters.empty())
    return fail(main) << "the step sets no parameter";

  // The two parts of the step: the forward and backward pass (the loss and
  // the gradients from the batch and the weights), and the update (the set
  // values from the gradients and the weights).
  auto isRead = [](Value v) { return (bool)v.getDefiningOp<GetWeightOp>(); };
  Value unreached;
  SmallVector<Value> computeTargets(grads);
  computeTargets.push_back(loss);
  llvm::DenseSet<Operation *> computeOps = sliceOf(
      computeTargets,
      [&](Value v) { return isRead(v) || isa<BlockArgument>(v); }, &unreached);
  SmallVector<Value> setValues;
  for (SetWeightOp set : sets)
    setValues.push_back(set.getValue());
  llvm::DenseSet<Operation *> updateOps = sliceOf(
      setValues, [&](Value v) { return isRead(v) || gradSet.count(v); },
      &unreached);
  if (unreached)
    return fail(main) << "the optimizer update reads the batch other than "
                         "through the marked gradients";
  for (Operation *op : updateOps)
    if (computeOps.count(op) && !isa<ConstantOp, arith::ConstantOp>(op))
      return fail(op) << "is shared by the forward-backward pass and the "
                         "optimizer update; ACCO runs them apart";

  OpBuilder b(module.getBodyRegion());
  Location loc = main.getLoc();
  MLIRContext *context = module.getContext();
  auto mesh = MeshOp::create(b, loc, b.getStringAttr("world"),
                             b.getStrArrayAttr({"dp"}),
                             b.getDenseI64ArrayAttr({ranks}));
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  ArrayAttr axes = b.getStrArrayAttr({"dp"});
  auto reduction = [&](ReductionKind kind) {
    return ReductionKindAttr::get(context, kind);
  };
  // Where a tensor of `type` is split over the ranks: its first dimension
  // that divides by P (ZeRO-1's choice), or -1 (kept whole).
  auto splitDim = [&](RankedTensorType type) -> int64_t {
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.getDimSize(d) % ranks == 0 && type.getDimSize(d) >= ranks)
        return d;
    return -1;
  };
  auto local = [&](RankedTensorType type, int64_t dim) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] /= ranks;
    return type.clone(shape);
  };
  auto shardingAttr = [&](int64_t rank, int64_t dim) {
    SmallVector<Attribute> entries(rank, b.getStrArrayAttr({}));
    entries[dim] = axes;
    return b.getArrayAttr(entries);
  };

  // The new state: each gradient's pending sum, stored [P, ...] split along
  // the ranks, and the count of micro-batches in it.
  Operation *lastWeight = nullptr;
  for (auto w : module.getOps<WeightOp>())
    lastWeight = w;
  b.setInsertionPointAfter(lastWeight);
  SmallVector<WeightOp> pendingWeights;
  for (auto [i, g] : llvm::enumerate(synchronous ? ArrayRef<Value>() : grads)) {
    auto type = cast<RankedTensorType>(g.getType());
    SmallVector<int64_t> shape{ranks};
    llvm::append_range(shape, type.getShape());
    std::string name = (gradOf[i] + ".acco_pending").str();
    if (symbols.lookup(name))
      return fail(module) << "the module already has a weight @" << name;
    pendingWeights.push_back(WeightOp::create(
        b, loc, b.getStringAttr(name), TypeAttr::get(type.clone(shape)),
        b.getUnitAttr(), b.getUnitAttr()));
  }
  // The count of the pending sum: the ranks' total (a fixed count is the
  // same on every rank), or with a run-time count each rank's own, stored
  // [P] split.
  StringRef countName = dynamic ? "braid.acco.counts" : "braid.acco.count";
  if (!synchronous && symbols.lookup(countName))
    return fail(module) << "the module already has a weight @" << countName;
  auto scalarType = RankedTensorType::get({}, b.getF32Type());
  auto countsType = RankedTensorType::get({ranks}, b.getF32Type());
  WeightOp countWeight;
  if (!synchronous)
    countWeight = WeightOp::create(
        b, loc, b.getStringAttr(countName),
        TypeAttr::get(dynamic ? countsType : scalarType), b.getUnitAttr(),
        b.getUnitAttr());

  // The new entry block: the data inputs hold 2M steps (M synchronously)
  // of P batches.
  int64_t steps = synchronous ? micro : 2 * perRound;
  auto *entry = new Block();
  main.getBody().push_front(entry);
  SmallVector<Type> argTypes;
  for (BlockArgument arg : body.getArguments()) {
    auto ranked = cast<RankedTensorType>(arg.getType());
    SmallVector<int64_t> shape(ranked.getShape());
    shape[0] *= steps * ranks;
    argTypes.push_back(ranked.clone(shape));
    entry->addArgument(argTypes.back(), arg.getLoc());
  }
  b.setInsertionPointToStart(entry);
  Value rank = RankOp::create(b, loc, meshRef, b.getStringAttr("dp"));
  auto constant = [&](double v) {
    return scalarConstant(b, loc, b.getF32Type(), v);
  };

  // Every weight read once, at the start: the parameters whole, the
  // optimizer state this rank's shard where it is split.
  IRMapping reads;
  llvm::DenseMap<Value, int64_t> readSplit; // read value -> split dim
  for (Operation &op : body) {
    auto get = dyn_cast<GetWeightOp>(op);
    if (!get)
      continue;
    auto weight = symbols.lookup<WeightOp>(get.getName());
    auto type = cast<RankedTensorType>(get.getType());
    int64_t dim = splitDim(type);
    if (weight.getState() && weight.getZeros() && dim >= 0 &&
        !parameters.count(get.getNameAttr().getAttr())) {
      if (llvm::any_of(get->getUsers(),
                       [&](Operation *user) { return computeOps.count(user); }))
        return fail(get) << "optimizer state read by the forward-backward "
                            "pass";
      Value shard = GetWeightOp::create(
          b, loc, local(type, dim), get.getNameAttr(), nullptr, nullptr,
          meshRef, shardingAttr(type.getRank(), dim));
      reads.map(get.getResult(), shard);
      readSplit[get.getResult()] = dim;
      continue;
    }
    reads.map(get.getResult(), b.clone(op)->getResult(0));
  }
  // A pending weight's row: this rank's [1, ...] of its [P, ...].
  auto rowOf = [](WeightOp weight) {
    RankedTensorType stored = weight.getTensorType();
    SmallVector<int64_t> shape(stored.getShape());
    shape[0] = 1;
    return stored.clone(shape);
  };
  SmallVector<Value> pending;
  for (auto [g, weight] : llvm::zip(grads, pendingWeights)) {
    RankedTensorType stored = weight.getTensorType();
    Value shard = GetWeightOp::create(
        b, loc, rowOf(weight), FlatSymbolRefAttr::get(weight.getSymNameAttr()),
        nullptr, nullptr, meshRef, shardingAttr(stored.getRank(), 0));
    pending.push_back(ReshapeOp::create(b, loc, g.getType(), shard));
  }
  Value count;
  if (dynamic)
    count = ReshapeOp::create(
        b, loc, scalarType,
        GetWeightOp::create(
            b, loc, RankedTensorType::get({1}, b.getF32Type()),
            FlatSymbolRefAttr::get(countWeight.getSymNameAttr()), nullptr,
            nullptr, meshRef, shardingAttr(1, 0)));
  else if (!synchronous)
    count = GetWeightOp::create(
        b, loc, scalarType,
        FlatSymbolRefAttr::get(countWeight.getSymNameAttr()));

  // One optimizer update, on shards, from gradient sums `sums` over `scale`
  // times their count: returns the values of the step's set_weight ops
  // (parameters whole, split state as shards) and whether each is a shard.
  struct Update {
    SmallVector<Value> values;
    SmallVector<int64_t> splits;
  };
  auto update = [&](ArrayRef<Value> sums, Value scale) -> FailureOr<Update> {
    // Values of the one-rank update: whole, or this rank's shard along a
    // dimension.
    IRMapping whole;
    llvm::DenseMap<Value, std::pair<Value, int64_t>> shards;
    for (auto [get, split] : readSplit)
      shards[get] = {reads.lookup(get), split};
    // The whole value of `v`, or null where the update has only a shard.
    auto wholeOf = [&](Value v) -> Value {
      if (readSplit.count(v))
        return Value();
      if (Value w = whole.lookupOrNull(v))
        return w;
      return reads.lookupOrNull(v);
    };
    // `v` split along `dim`: its shard, or a slice of its whole value.
    auto shardOf = [&](Value v, int64_t dim) -> Value {
      auto it = shards.find(v);
      if (it != shards.end())
        return it->second.second == dim ? it->second.first : Value();
      Value full = wholeOf(v);
      if (!full)
        return Value();
      auto type = cast<RankedTensorType>(full.getType());
      Value offset = arith::MulIOp::create(
          b, loc, rank,
          arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim) / ranks));
      Value s =
          sliceAlongAt(b, loc, full, dim, offset, type.getDimSize(dim) / ranks);
      shards[v] = {s, dim};
      return s;
    };
    for (auto [g, sum] : llvm::zip(grads, sums)) {
      auto type = cast<RankedTensorType>(g.getType());
      Value scaled = MulOp::create(b, loc, sum, scale);
      int64_t dim = splitDim(type);
      if (dim < 0) {
        whole.map(g, AllReduceOp::create(b, loc, type, meshRef, axes, scaled,
                                         reduction(ReductionKind::Sum))
                         .getResult());
        continue;
      }
      shards[g] = {ReduceScatterOp::create(
                       b, loc, local(type, dim), meshRef, axes, scaled,
                       reduction(ReductionKind::Sum), b.getI64IntegerAttr(dim))
                       .getResult(),
                   dim};
    }
    for (Operation &op : body.without_terminator()) {
      if (!updateOps.count(&op) || isa<GetWeightOp>(op))
        continue;
      auto resultType =
          op.getNumResults() == 1
              ? dyn_cast<RankedTensorType>(op.getResult(0).getType())
              : RankedTensorType();
      int64_t dim = resultType ? splitDim(resultType) : -1;
      // Elementwise ops on parameter-shaped tensors run on this rank's
      // shard; scalars stay whole.
      if (isElementwise(&op) && dim >= 0) {
        IRMapping map;
        for (Value v : op.getOperands()) {
          auto type = cast<RankedTensorType>(v.getType());
          if (type.getRank() == 0) {
            Value s = wholeOf(v);
            if (!s)
              return fail(&op) << "reads a scalar the update did not compute",
                     failure();
            map.map(v, s);
            continue;
          }
          if (type.getShape() != resultType.getShape())
            return fail(&op) << "broadcasts a non-scalar in the optimizer "
                                "update; ACCO cannot split it",
                   failure();
          Value s = shardOf(v, dim);
          if (!s)
            return fail(&op) << "mixes shards split along different "
                                "dimensions",
                   failure();
          map.map(v, s);
        }
        Operation *clone = b.clone(op, map);
        clone->getResult(0).setType(local(resultType, dim));
        shards[op.getResult(0)] = {clone->getResult(0), dim};
        continue;
      }
      if (auto reduce = dyn_cast<ReduceSumOp>(op);
          reduce && resultType && resultType.getRank() == 0 &&
          !wholeOf(reduce.getInput()) && shards.count(reduce.getInput())) {
        // Global-norm clipping's sum of squares: this shard's, then the
        // ranks' sum.
        IRMapping map;
        map.map(reduce.getInput(), shards[reduce.getInput()].first);
        Value partial = b.clone(op, map)->getResult(0);
        whole.map(op.getResult(0),
                  AllReduceOp::create(b, loc, resultType, meshRef, axes,
                                      partial, reduction(ReductionKind::Sum))
                      .getResult());
        continue;
      }
      IRMapping map;
      for (Value v : op.getOperands()) {
        Value w = wholeOf(v);
        if (!w)
          return fail(&op) << "needs a whole operand the update only has "
                              "split; ACCO cannot split this optimizer",
                 failure();
        map.map(v, w);
      }
      Operation *clone = b.clone(op, map);
      for (auto [old, now] : llvm::zip(op.getResults(), clone->getResults()))
        whole.map(old, now);
    }
    Update result;
    for (SetWeightOp set : sets) {
      Value v = set.getValue();
      if (Value w = wholeOf(v)) {
        result.values.push_back(w);
        result.splits.push_back(-1);
      } else {
        auto it = shards.find(v);
        if (it == shards.end())
          return fail(set) << "sets a value the update did not compute",
                 failure();
        result.values.push_back(it->second.first);
        result.splits.push_back(it->second.second);
      }
    }
    return result;
  };

  // The parameters whole from an update: the all-gather of their shards.
  auto gathered = [&](const Update &u) {
    llvm::DenseMap<StringAttr, Value> params;
    for (auto [set, value, dim] : llvm::zip(sets, u.values, u.splits)) {
      if (!parameters.count(set.getNameAttr().getAttr()))
        continue;
      params[set.getNameAttr().getAttr()] =
          dim < 0
              ? value
              : AllGatherOp::create(b, loc, set.getValue().getType(), meshRef,
                                    axes, value, b.getI64IntegerAttr(dim))
                    .getResult();
    }
    return params;
  };

  // Forward and backward of micro-batch `k` of this call at parameters
  // `params` (name -> whole value): this rank's gradients and loss.
  int64_t stepRows = ranks * batch;
  auto compute = [&](int64_t k,
                     const llvm::DenseMap<StringAttr, Value> &params) {
    IRMapping map;
    Value offset = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, rank,
                              arith::ConstantIndexOp::create(b, loc, batch)),
        arith::ConstantIndexOp::create(b, loc, k * stepRows));
    for (auto [old, now] :
         llvm::zip(body.getArguments(), entry->getArguments()))
      map.map(old, sliceAlongAt(b, loc, now, 0, offset, batch));
    for (Operation &op : body)
      if (auto get = dyn_cast<GetWeightOp>(op)) {
        auto it = params.find(get.getNameAttr().getAttr());
        map.map(get.getResult(), it != params.end()
                                     ? it->second
                                     : reads.lookup(get.getResult()));
      }
    for (Operation &op : body.without_terminator())
      if (computeOps.count(&op) && !isa<GetWeightOp>(op))
        b.clone(op, map);
    SmallVector<Value> out;
    for (Value g : grads)
      out.push_back(map.lookup(g));
    out.push_back(map.lookup(loss));
    return out;
  };
  // Micro-batches [begin, end) at `params`: their losses appended to
  // `losses`, the sum of their gradients returned.
  // Per micro-batch, whether it ran on this rank: 1, or for an optional
  // one a value it computes (a skipped group's reads as 0).
  SmallVector<Value> losses, ran;
  SmallVector<int64_t> optionalRounds; // per optional group, its round
  Value yes = dynamic ? scalarConstant(b, loc, b.getI1Type(), 1) : Value();
  auto microBatches = [&](int64_t begin, int64_t end,
                          const llvm::DenseMap<StringAttr, Value> &params) {
    SmallVector<Value> sums;
    for (int64_t k = begin; k < end; ++k) {
      Operation *mark = &entry->back();
      SmallVector<Value> out = compute(k, params);
      bool optional = dynamic && k % perRound >= micro;
      if (optional)
        out.push_back(CastOp::create(b, loc, scalarType, yes));
      if (dynamic) {
        int64_t group = static_cast<int64_t>(optionalRounds.size());
        for (Operation *op = mark->getNextNode(); op; op = op->getNextNode()) {
          op->setAttr(kMicroBatchAttrName, b.getI64IntegerAttr(k));
          if (optional)
            op->setAttr(kOptionalAttrName, b.getI64IntegerAttr(group));
        }
        if (optional)
          optionalRounds.push_back(k / perRound + 1);
        ran.push_back(optional ? out.pop_back_val() : constant(1.0));
      }
      losses.push_back(out.pop_back_val());
      if (sums.empty()) {
        sums = out;
        continue;
      }
      for (size_t i = 0; i < sums.size(); ++i)
        sums[i] = AddOp::create(b, loc, sums[i], out[i]);
    }
    return sums;
  };

  // The state for the next call from update `u` and its gathered
  // parameters.
  auto setState = [&](const Update &u,
                      llvm::DenseMap<StringAttr, Value> &next) {
    for (auto [set, value, dim] : llvm::zip(sets, u.values, u.splits)) {
      StringAttr name = set.getNameAttr().getAttr();
      if (parameters.count(name)) {
        SetWeightOp::create(b, loc, set.getNameAttr(), next[name]);
        continue;
      }
      auto type = cast<RankedTensorType>(set.getValue().getType());
      if (dim < 0)
        SetWeightOp::create(b, loc, set.getNameAttr(), value);
      else
        SetWeightOp::create(b, loc, set.getNameAttr(), value, meshRef,
                            shardingAttr(type.getRank(), dim));
    }
  };
  // The losses returned and the step's new contract.
  auto finish = [&](ArrayRef<Value> losses) -> LogicalResult {
    // One step per call (accumulate=1) keeps a plain step's scalar loss.
    auto lossesType =
        steps == 1 ? lossType
                   : RankedTensorType::get({steps}, lossType.getElementType());
    Value all = losses.front();
    if (steps > 1) {
      SmallVector<Value> rows;
      for (Value l : losses)
        rows.push_back(ReshapeOp::create(
            b, loc, RankedTensorType::get({1}, lossType.getElementType()), l));
      all = ConcatOp::create(b, loc, lossesType, rows, 0);
    }
    DictionaryAttr lossAttrs = main.getResultAttrDict(0);
    if (!dynamic) {
      Value mean = AllReduceOp::create(b, loc, lossesType, meshRef, axes, all,
                                       reduction(ReductionKind::Avg));
      func::ReturnOp::create(b, ret.getLoc(), mean);
    } else {
      // Each micro-batch's loss averaged over the ranks that ran it, and
      // their count.
      auto rowType = RankedTensorType::get({1}, lossType.getElementType());
      SmallVector<Value> rows;
      for (Value r : ran)
        rows.push_back(ReshapeOp::create(b, loc, rowType, r));
      Value ranks = AllReduceOp::create(
          b, loc, lossesType, meshRef, axes,
          ConcatOp::create(b, loc, lossesType, rows, 0),
          reduction(ReductionKind::Sum));
      Value sum = AllReduceOp::create(b, loc, lossesType, meshRef, axes, all,
                                      reduction(ReductionKind::Sum));
      Value mean =
          DivOp::create(b, loc, sum, MaxOp::create(b, loc, ranks, constant(1.0)));
      func::ReturnOp::create(b, ret.getLoc(), ValueRange{mean, ranks});
    }
    body.dropAllDefinedValueUses();
    body.erase();

    SmallVector<Type> results{lossesType};
    if (dynamic)
      results.push_back(lossesType);
    main.setFunctionType(FunctionType::get(context, argTypes, results));
    SmallVector<DictionaryAttr> resultAttrs{lossAttrs};
    if (dynamic) {
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr("braid.name", b.getStringAttr("ran"))));
      main->setAttr(kOptionalUntilAttrName,
                    b.getDenseI64ArrayAttr(optionalRounds));
    }
    main.setAllResultAttrs(resultAttrs);
    NamedAttrList entries(training);
    if (dynamic)
      entries.set("ran", b.getStringAttr("ran"));
    entries.set("batch", b.getI64IntegerAttr(batch * ranks));
    entries.set("steps", b.getI64IntegerAttr(steps));
    if (!synchronous)
      entries.set("algorithm", b.getStringAttr("acco"));
    main->setAttr("braid.training", entries.getDictionary(context));
    return success();
  };

  llvm::DenseMap<StringAttr, Value> current;
  for (Operation &op : body)
    if (auto get = dyn_cast<GetWeightOp>(op);
        get && parameters.count(get.getNameAttr().getAttr()))
      current[get.getNameAttr().getAttr()] = reads.lookup(get.getResult());

  Value one = constant(1.0);
  if (synchronous) {
    // Gradient accumulation: M micro-batches at t, then one step on their
    // mean.
    SmallVector<Value> first = microBatches(0, micro, current);
    FailureOr<Update> step =
        update(first, constant(1.0 / static_cast<double>(micro * ranks)));
    if (failed(step))
      return failure();
    llvm::DenseMap<StringAttr, Value> next = gathered(*step);
    setState(*step, next);
    return finish(losses);
  }

  // With a run-time count, the work made since `mark`, the collectives and
  // the optimizer update between them, is communication round `round`:
  // braid-schedule runs it on the communication stream, as the authors run
  // the update (the compute stream never waits for a reduce-scatter), and
  // the round's optional micro-batches are skipped once it is done.
  // Constants and weight reads (no work, live throughout) stay where they
  // are. A fixed count keeps the update on the compute stream: there the
  // round's operands are freed as the update reads them, where on the
  // communication stream they live until the round is awaited
  // (docs/training.md has the measurements).
  auto inRound = [&](Operation *mark, int64_t round) {
    if (!dynamic)
      return;
    for (Operation *op = mark->getNextNode(); op; op = op->getNextNode())
      if (isa<CostOpInterface>(op) && !isa<ConstantOp, GetWeightOp>(op))
        op->setAttr(kRoundAttrName, b.getI64IntegerAttr(round));
  };
  // The micro-batches this rank ran in a round: M, plus its optional ones'
  // flags.
  auto countOf = [&](ArrayRef<Value> flags) {
    Value total = constant(static_cast<double>(micro));
    for (Value flag : flags.drop_front(micro))
      total = AddOp::create(b, loc, total, flag);
    return total;
  };

  // Round 1: the estimate from the pending gradients (scale P max(n, 1):
  // a zero sum in the first call; with a run-time count, n is the ranks'
  // sum of their own counts), beside the gradients at t.
  Operation *mark = &entry->back();
  Value pendingCount =
      dynamic ? AllReduceOp::create(b, loc, scalarType, meshRef, axes, count,
                                    reduction(ReductionKind::Sum))
                    .getResult()
              : Value();
  Value estimateScale = DivOp::create(
      b, loc, one,
      dynamic ? MaxOp::create(b, loc, pendingCount, one).getResult()
              : MulOp::create(b, loc, MaxOp::create(b, loc, count, one),
                              constant(static_cast<double>(ranks)))
                    .getResult());
  FailureOr<Update> estimate = update(pending, estimateScale);
  if (failed(estimate))
    return failure();
  llvm::DenseMap<StringAttr, Value> estimated = gathered(*estimate);
  inRound(mark, 1);
  SmallVector<Value> first = microBatches(0, perRound, current);

  // Round 2: the real step on both halves, beside the gradients at t~.
  mark = &entry->back();
  SmallVector<Value> both;
  for (auto [p, g] : llvm::zip(pending, first))
    both.push_back(AddOp::create(b, loc, p, g));
  Value realScale;
  if (dynamic) {
    Value firstCount =
        AllReduceOp::create(b, loc, scalarType, meshRef, axes,
                            countOf(ArrayRef<Value>(ran).take_front(perRound)),
                            reduction(ReductionKind::Sum));
    realScale = DivOp::create(b, loc, one,
                              AddOp::create(b, loc, pendingCount, firstCount));
  } else {
    realScale = DivOp::create(
        b, loc, one,
        MulOp::create(
            b, loc,
            AddOp::create(b, loc, count, constant(static_cast<double>(micro))),
            constant(static_cast<double>(ranks))));
  }
  FailureOr<Update> real = update(both, realScale);
  if (failed(real))
    return failure();
  llvm::DenseMap<StringAttr, Value> next = gathered(*real);
  inRound(mark, 2);
  SmallVector<Value> second = microBatches(perRound, steps, estimated);

  setState(*real, next);
  for (auto [sum, weight] : llvm::zip(second, pendingWeights)) {
    RankedTensorType row = rowOf(weight);
    SetWeightOp::create(b, loc, FlatSymbolRefAttr::get(weight.getSymNameAttr()),
                        ReshapeOp::create(b, loc, row, sum), meshRef,
                        shardingAttr(row.getRank(), 0));
  }
  if (dynamic)
    SetWeightOp::create(
        b, loc, FlatSymbolRefAttr::get(countWeight.getSymNameAttr()),
        ReshapeOp::create(b, loc, RankedTensorType::get({1}, b.getF32Type()),
                          countOf(ArrayRef<Value>(ran).drop_front(perRound))),
        meshRef, shardingAttr(1, 0));
  else
    SetWeightOp::create(b, loc,
                        FlatSymbolRefAttr::get(countWeight.getSymNameAttr()),
                        constant(static_cast<double>(micro)));

  return finish(losses);
}

} // namespace
