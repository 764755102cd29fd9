//===- LocalSgd.cpp - CoCoD-SGD: local steps, averaging in the background -===//
//
// braid-cocod-sgd turns a one-rank training step (braid-training-step's
// @main) into one *period* of CoCoD-SGD (Shen et al., IJCAI'19) over the
// `ranks` ranks of a data-parallel mesh: every rank runs `period` local
// steps of the optimizer on its own batches, while the average of the
// parameters the period started from moves in the background; at the end
//
//     x <- mean over ranks(x_start) + (x_end - x_start)
//
// (the rule as JYWa/Overlap_Local_SGD's CoCoDSGD writes it: the snapshot of
// the last synchronization, averaged, plus this rank's progress since).
// Taking the snapshot at the start of the period that overlaps its
// all-reduce makes the snapshot the period's entry value, so nothing but
// the parameters is carried between calls, and the all-reduce depends on
// nothing the local steps compute: braid-schedule issues it first and
// awaits it at the end. Optimizer state (momentum buffers, AdamW moments,
// the step count: the `zeros` state weights) stays local, as in the
// authors' code.
//
// This is different math from synchronous data parallelism: the ranks'
// parameters differ between averagings. The program's contract changes
// with it: the tokens and labels inputs hold `period` steps of `ranks`
// batches ([period * ranks * B, S]); rank r's block is rows
// [r * period * B, (r + 1) * period * B), local step k reads B rows of it
// from k * B; the loss is [period]: step k's loss averaged over the ranks.
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

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDCOCODSGD
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

struct CocodSgd : public mlir::braid::impl::BraidCocodSgdBase<CocodSgd> {
  using BraidCocodSgdBase::BraidCocodSgdBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t count = period;
    if (count == 0) {
      FailureOr<int64_t> chosen = choosePeriod(module);
      if (failed(chosen))
        return signalPassFailure();
      count = *chosen;
    }
    if (failed(rewrite(module, count)))
      signalPassFailure();
  }

  /// period=auto: the fewest local steps whose compute covers the
  /// averaging's all-reduces on the cost model (a period takes
  /// max(K t_step, T_allreduce), so a longer one only lets the ranks drift
  /// further apart), at most 64.
  FailureOr<int64_t> choosePeriod(ModuleOp module) {
    OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
    if (failed(rewrite(*copy, 1)))
      return failure();
    // The averaging: the all-reduces of parameters as the period read them.
    FailureOr<ComputeAndCommunication> times =
        estimateComputeAndCommunication(*copy, hw, module, [](Operation *op) {
          auto reduce = dyn_cast<AllReduceOp>(op);
          if (!reduce)
            return CostPart::Compute;
          return reduce.getInput().getDefiningOp<GetWeightOp>()
                     ? CostPart::Communication
                     : CostPart::Neither; // the loss's mean
        });
    if (failed(times))
      return failure();
    double compute = times->compute, averaging = times->communication;
    int64_t chosen = times->coveringCount(64);
    char text[96];
    std::snprintf(text, sizeof(text),
                  "one local step %.3g ms of compute, the parameters' "
                  "average %.3g ms",
                  compute * 1e3, averaging * 1e3);
    mlir::emitRemark(module.getLoc())
        << "braid-cocod-sgd: period auto = " << chosen
        << " (local steps per averaging; hw "
        << hw << ": " << text << ")";
    return chosen;
  }

  LogicalResult rewrite(ModuleOp module, int64_t period) {
    auto fail = [&](Operation *at) {
      return at->emitError("braid-cocod-sgd: ");
    };
    if (period < 1 || ranks < 1)
      return fail(module) << "period and ranks must be positive (period="
                          << period << ", ranks=" << static_cast<int64_t>(ranks) << ")";
    FailureOr<OneRankStep> step =
        checkOneRankStep(module, "braid-cocod-sgd", "CoCoD-SGD");
    if (failed(step))
      return failure();
    func::FuncOp main = step->main;
    DictionaryAttr training = step->training;
    Block &body = main.getBody().front();
    func::ReturnOp ret = step->ret;
    RankedTensorType lossType = step->lossType;
    int64_t batch = step->batch;
    ArrayRef<bool> data = step->data;
    // The data inputs: the arguments named as the step's tokens and labels.
    if (llvm::count(data, true) != 2)
      return fail(main) << "@main has no arguments named '"
                        << training.getAs<StringAttr>("tokens").getValue()
                        << "' and '"
                        << training.getAs<StringAttr>("labels").getValue()
                        << "'";

    // The state weights the step sets, in the order it sets them.
    llvm::MapVector<StringAttr, WeightOp> state;
    SymbolTable symbols(module);
    for (Operation &op : body)
      if (auto set = dyn_cast<SetWeightOp>(op)) {
        if (set.getMesh())
          return fail(set) << "sets a sharded weight; the step must not be "
                              "partitioned";
        state[set.getNameAttr().getAttr()] =
            symbols.lookup<WeightOp>(set.getName());
      }
    if (state.empty())
      return fail(main) << "the step sets no state weight";
    for (Operation &op : body)
      if (auto get = dyn_cast<GetWeightOp>(op);
          get && state.count(get.getNameAttr().getAttr()) &&
          (get.getBlock() || get.getMesh()))
        return fail(get) << "reads a block or a shard of state weight @"
                         << get.getName()
                         << "; CoCoD-SGD needs whole reads of the state";

    OpBuilder b(module.getBodyRegion());
    Location loc = main.getLoc();
    auto mesh = MeshOp::create(b, loc, b.getStringAttr("world"),
                               b.getStrArrayAttr({"dp"}),
                               b.getDenseI64ArrayAttr({ranks}));
    auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
    ArrayAttr axes = b.getStrArrayAttr({"dp"});

    // The new entry block: the data inputs hold period * ranks batches.
    auto *entry = new Block();
    main.getBody().push_front(entry);
    SmallVector<Type> argTypes;
    for (auto [arg, isData] : llvm::zip(body.getArguments(), data)) {
      Type type = arg.getType();
      if (isData) {
        auto ranked = cast<RankedTensorType>(type);
        SmallVector<int64_t> shape(ranked.getShape());
        shape[0] *= period * ranks;
        type = ranked.clone(shape);
      }
      argTypes.push_back(type);
      entry->addArgument(type, arg.getLoc());
    }
    b.setInsertionPointToStart(entry);

    // The period's entry values of the state: the snapshot, and the first
    // local step's reads. The snapshot's average starts at once.
    DenseMap<StringAttr, Value> current, snapshot, average;
    for (auto [name, weight] : state) {
      Value read = GetWeightOp::create(b, loc, weight.getTensorType(),
                                       FlatSymbolRefAttr::get(name));
      current[name] = read;
      if (!weight.getZeros()) {
        snapshot[name] = read;
        average[name] = AllReduceOp::create(b, loc, read.getType(), meshRef,
                                            axes, read,
                                            ReductionKindAttr::get(b.getContext(), ReductionKind::Avg));
      }
    }

    // This rank's block of the data inputs.
    Value rank = RankOp::create(b, loc, meshRef, b.getStringAttr("dp"));
    Value blockRows = arith::ConstantIndexOp::create(b, loc, period * batch);
    Value base = arith::MulIOp::create(b, loc, rank, blockRows);

    SmallVector<Value> losses;
    for (int64_t k = 0; k < period; ++k) {
      IRMapping map;
      Value offset = arith::AddIOp::create(
          b, loc, base, arith::ConstantIndexOp::create(b, loc, k * batch));
      for (auto [old, now, isData] :
           llvm::zip(body.getArguments(), entry->getArguments(), data))
        map.map(old, isData ? sliceAlongAt(b, loc, now, 0, offset, batch)
                            : Value(now));
      SmallVector<std::pair<StringAttr, Value>> next;
      for (Operation &op : body.without_terminator()) {
        if (auto get = dyn_cast<GetWeightOp>(op)) {
          auto it = current.find(get.getNameAttr().getAttr());
          if (it != current.end()) {
            map.map(get.getResult(), it->second);
            continue;
          }
        }
        if (auto set = dyn_cast<SetWeightOp>(op)) {
          next.push_back({set.getNameAttr().getAttr(),
                          map.lookup(set.getValue())});
          continue;
        }
        b.clone(op, map);
      }
      for (auto [name, value] : next)
        current[name] = value;
      Value loss = map.lookup(ret.getOperand(0));
      losses.push_back(period == 1
                           ? loss
                           : ReshapeOp::create(
                                 b, loc,
                                 RankedTensorType::get(
                                     {1}, lossType.getElementType()),
                                 loss)
                                 .getResult());
    }

    // x <- mean(snapshot) + (x - own snapshot) for the parameters; the
    // optimizer's state keeps its local value.
    for (auto [name, weight] : state) {
      Value value = current[name];
      if (!weight.getZeros())
        value = AddOp::create(
            b, loc, average[name],
            SubOp::create(b, loc, value, snapshot[name]));
      SetWeightOp::create(b, loc, FlatSymbolRefAttr::get(name), value);
    }
    // One step per call keeps the scalar loss of a plain training step.
    auto lossesType =
        period == 1 ? lossType
                    : RankedTensorType::get({period}, lossType.getElementType());
    Value all = losses.size() == 1
                    ? losses.front()
                    : ConcatOp::create(b, loc, lossesType, losses, 0)
                          .getResult();
    Value mean = AllReduceOp::create(b, loc, lossesType, meshRef, axes, all,
                                     ReductionKindAttr::get(b.getContext(), ReductionKind::Avg));
    func::ReturnOp::create(b, ret.getLoc(), mean);
    body.dropAllDefinedValueUses();
    body.erase();

    main.setFunctionType(FunctionType::get(module.getContext(), argTypes,
                                           {lossesType}));
    NamedAttrList entries(training);
    entries.set("batch", b.getI64IntegerAttr(batch * ranks));
    entries.set("steps", b.getI64IntegerAttr(period));
    entries.set("algorithm", b.getStringAttr("cocod-sgd"));
    main->setAttr("braid.training", entries.getDictionary(module.getContext()));
    return success();
  }
};

} // namespace
