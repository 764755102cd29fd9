//===- TrainingStep.cpp - loss and optimizer step of a training program ---===//
//
// braid-next-token-loss: a language model's logits become the next-token
// cross-entropy loss against a labels argument.
// braid-training-step: after braid-autodiff, the gradients feed an
// optimizer (SGD with momentum, AdamW, optional global-norm clipping)
// whose parameters and moments are state weights updated with
// braid.set_weight. PyTorch's update formulas, in braid ops.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/braid/BraidDialect.h"
#include "dialects/braid/Builders.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include <numeric>

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDNEXTTOKENLOSS
#define GEN_PASS_DEF_BRAIDTRAININGSTEP
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

func::FuncOp lookupMain(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    module.emitError("no function @main");
  return main;
}

//===----------------------------------------------------------------------===//
// braid-next-token-loss
//===----------------------------------------------------------------------===//

/// The mean over positions of the next-token cross entropy of `logits`
/// [B, S, V] against `labels` [B, S], as elementwise ops and reductions
/// over V (braid-next-token-loss's vocab-parallel form).
Value vocabParallelLoss(OpBuilder &b, Location loc, Value logits,
                        Value labels) {
  auto type = cast<RankedTensorType>(logits.getType());
  int64_t vocab = type.getRank() - 1;
  auto overVocab = b.getDenseI64ArrayAttr({vocab});
  Value m = ReduceMaxOp::create(b, loc, logits, overVocab, b.getUnitAttr());
  m.getDefiningOp()->setAttr(kStopGradientAttrName, b.getUnitAttr());
  Value shifted = SubOp::create(b, loc, logits, m);
  Value e = ExpOp::create(b, loc, type, shifted);
  Value s = ReduceSumOp::create(b, loc, e, overVocab, b.getUnitAttr());
  Value lse = LogOp::create(b, loc, s.getType(), s);
  Value hit = oneHot(b, loc, labels, type.getDimSize(vocab),
                     type.getElementType());
  Value picked = ReduceSumOp::create(b, loc, MulOp::create(b, loc, shifted, hit),
                                     overVocab, b.getUnitAttr());
  Value perPosition = SubOp::create(b, loc, lse, picked);
  SmallVector<int64_t> all(type.getRank());
  std::iota(all.begin(), all.end(), 0);
  return ReduceMeanOp::create(b, loc, perPosition, b.getDenseI64ArrayAttr(all),
                              UnitAttr());
}

struct NextTokenLoss : public braid::impl::BraidNextTokenLossBase<NextTokenLoss> {
  using BraidNextTokenLossBase::BraidNextTokenLossBase;

  void runOnOperation() override {
    func::FuncOp main = lookupMain(getOperation());
    if (!main || failed(rewrite(main)))
      signalPassFailure();
  }

  LogicalResult rewrite(func::FuncOp main) {
    if (main.getNumResults() == 0)
      return main.emitError("braid-next-token-loss: @main returns nothing: "
                            "training needs [batch, sequence, vocabulary] "
                            "logits");
    auto logits = dyn_cast<RankedTensorType>(main.getResultTypes()[0]);
    if (!logits || logits.getRank() != 3 ||
        !isa<FloatType>(logits.getElementType()))
      return main.emitError("braid-next-token-loss: the first result of "
                            "@main is ")
             << main.getResultTypes()[0]
             << ", not [batch, sequence, vocabulary] float logits";
    if (main.getNumArguments() != 1)
      return main.emitError("braid-next-token-loss: @main takes ")
             << main.getNumArguments()
             << " inputs; training feeds only the token ids [batch, "
                "sequence]";
    auto tokens = dyn_cast<RankedTensorType>(main.getArgument(0).getType());
    if (!tokens || !isa<IntegerType>(tokens.getElementType()) ||
        tokens.getShape() != logits.getShape().drop_back())
      return main.emitError("braid-next-token-loss: the input of @main is ")
             << main.getArgument(0).getType()
             << ", not integer token ids of the logits' [batch, sequence] "
             << "shape";
    Block &body = main.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder b(ret);
    if (failed(main.insertArgument(
            1, tokens,
            b.getDictionaryAttr(
                b.getNamedAttr("braid.name", b.getStringAttr("labels"))),
            main.getLoc())))
      return failure();
    Value labels = main.getArgument(1);
    auto scalarType = RankedTensorType::get({}, logits.getElementType());
    Value loss =
        vocabParallel
            ? vocabParallelLoss(b, ret.getLoc(), ret.getOperand(0), labels)
            : CrossEntropyOp::create(
                  b, ret.getLoc(), scalarType, ret.getOperand(0), labels,
                  LossReductionAttr::get(b.getContext(), LossReduction::Mean))
                  .getResult();
    ret->setOperands(loss);
    main.setFunctionType(FunctionType::get(
        &getContext(), {tokens, tokens}, {scalarType}));
    main.setAllResultAttrs(ArrayRef<DictionaryAttr>{b.getDictionaryAttr(
        b.getNamedAttr("braid.name", b.getStringAttr("loss")))});
    // The data contract of the step, for the plan (braid-run --data).
    auto tokensName = main.getArgAttrOfType<StringAttr>(0, "braid.name");
    main->setAttr(
        "braid.training",
        b.getDictionaryAttr(
            {b.getNamedAttr("tokens", tokensName ? tokensName
                                                 : b.getStringAttr("input_0")),
             b.getNamedAttr("labels", b.getStringAttr("labels")),
             b.getNamedAttr("loss", b.getStringAttr("loss")),
             b.getNamedAttr("batch", b.getI64IntegerAttr(tokens.getDimSize(0))),
             b.getNamedAttr("sequence",
                            b.getI64IntegerAttr(tokens.getDimSize(1)))}));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// braid-training-step
//===----------------------------------------------------------------------===//

struct TrainingStep : public braid::impl::BraidTrainingStepBase<TrainingStep> {
  using BraidTrainingStepBase::BraidTrainingStepBase;

  void runOnOperation() override {
    func::FuncOp main = lookupMain(getOperation());
    if (!main || failed(rewrite(getOperation(), main)))
      signalPassFailure();
  }

  LogicalResult rewrite(ModuleOp module, func::FuncOp main);
};

/// A new `zeros state` weight next to `after`, named `name`.
WeightOp declareZeros(OpBuilder &b, WeightOp after, StringRef name,
                      RankedTensorType type) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(after);
  return WeightOp::create(b, after.getLoc(), b.getStringAttr(name),
                          TypeAttr::get(type), b.getUnitAttr(),
                          b.getUnitAttr());
}

/// The optimizer state `param` + `suffix` (a momentum buffer, a moment),
/// declared after `after`. A part of a stored tensor has its state as the
/// same part of the stored tensor's state, so checkpoints hold one moment
/// per stored parameter, as without the parts.
WeightOp declareState(OpBuilder &b, WeightOp after, WeightOp param,
                      StringRef suffix) {
  WeightOp state = declareZeros(b, after, (param.getSymName() + suffix).str(),
                                param.getTensorType());
  if (std::optional<StringRef> stored = param.getPartOf()) {
    state.setPartOf((*stored + suffix).str());
    state.setPartShapeAttr(param.getPartShapeAttr());
    state.setPartOffsetsAttr(param.getPartOffsetsAttr());
  }
  return state;
}

LogicalResult TrainingStep::rewrite(ModuleOp module, func::FuncOp main) {
  if (optimizer != "sgd" && optimizer != "adamw")
    return module.emitError("braid-training-step: optimizer must be sgd or "
                            "adamw, not '")
           << optimizer << "'";
  Block &body = main.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // The loss (result 0) and the gradients.
  struct Param {
    WeightOp weight;
    Value grad;
  };
  SmallVector<Param> params;
  for (unsigned r = 0; r < main.getNumResults(); ++r) {
    auto of = main.getResultAttrOfType<FlatSymbolRefAttr>(r, "braid.gradient_of");
    if (!of)
      continue;
    auto weight = module.lookupSymbol<WeightOp>(of.getAttr());
    if (!weight)
      return main.emitError("braid-training-step: result #")
             << r << " is the gradient of " << of << ", which is no weight";
    params.push_back({weight, ret.getOperand(r)});
  }
  if (params.empty())
    return main.emitError("braid-training-step: @main returns no gradients "
                          "(run braid-autodiff first)");
  Value loss = ret.getOperand(0);
  // braid-acco splits the step at the gradients.
  if (markGradients)
    for (Param &p : params) {
      Operation *def = p.grad.getDefiningOp();
      if (!def || def->getNumResults() != 1 || def->hasAttr("braid.gradient_of"))
        return main.emitError("braid-training-step: the gradient of @")
               << p.weight.getSymName()
               << " cannot be marked (it is no single result of its own op)";
      def->setAttr("braid.gradient_of",
                   FlatSymbolRefAttr::get(p.weight.getSymNameAttr()));
    }
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || lossType.getRank() != 0)
    return main.emitError("braid-training-step: result #0 of @main must be "
                          "the scalar loss");
  for (Param &p : params)
    for (StringRef suffix : {".momentum_buffer", ".exp_avg", ".exp_avg_sq"})
      if (module.lookupSymbol((p.weight.getSymName() + suffix).str()))
        return p.weight.emitOpError("already has optimizer state '")
               << p.weight.getSymName() << suffix << "'";

  OpBuilder b(ret);
  Location loc = ret.getLoc();
  Type f32 = b.getF32Type();
  auto constant = [&](Type elt, double v) {
    return scalarConstant(b, loc, elt, v);
  };
  auto read = [&](WeightOp weight) -> Value {
    return GetWeightOp::create(b, loc, weight.getTensorType(),
                               FlatSymbolRefAttr::get(weight.getSymNameAttr()));
  };
  auto mul = [&](Value x, Value y) -> Value {
    return MulOp::create(b, loc, x, y);
  };
  auto add = [&](Value x, Value y) -> Value {
    return AddOp::create(b, loc, x, y);
  };
  auto sub = [&](Value x, Value y) -> Value {
    return SubOp::create(b, loc, x, y);
  };
  auto elementOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  // A scalar f32 value as the element type of `like`.
  auto as = [&](Value scalar, Value like) -> Value {
    Type elt = elementOf(like);
    if (elt == f32)
      return scalar;
    return CastOp::create(b, loc, RankedTensorType::get({}, elt), scalar);
  };

  // Global-norm clipping: g *= min(1, C / (norm + 1e-6)).
  if (clipNorm > 0) {
    // Every parameter's sum of squares first, then their sum (in the same
    // order): under tensor parallelism a sharded parameter's sum is a
    // partial sum, and its all-reduce can then join the others' in one
    // bucket (braid-buckets) instead of each being read by the next add.
    SmallVector<Value> sums;
    for (Param &p : params) {
      auto type = cast<RankedTensorType>(p.grad.getType());
      SmallVector<int64_t> dims(type.getRank());
      for (int64_t d = 0; d < type.getRank(); ++d)
        dims[d] = d;
      Value g32 = p.grad;
      if (type.getElementType() != f32)
        g32 = CastOp::create(b, loc, RankedTensorType::get(type.getShape(), f32),
                             p.grad);
      Value squares = mul(g32, g32);
      Value sum = type.getRank() == 0
                      ? squares
                      : ReduceSumOp::create(b, loc, squares,
                                            b.getDenseI64ArrayAttr(dims),
                                            UnitAttr())
                            .getResult();
      sums.push_back(sum);
    }
    Value total;
    for (Value sum : sums)
      total = total ? add(total, sum) : sum;
    Value norm = SqrtOp::create(b, loc, total.getType(), total);
    Value coef = DivOp::create(b, loc, constant(f32, clipNorm),
                               add(norm, constant(f32, 1e-6)));
    coef = MinOp::create(b, loc, coef, constant(f32, 1.0));
    for (Param &p : params)
      p.grad = mul(p.grad, as(coef, p.grad));
  }

  // AdamW's step count, shared by every parameter.
  Value step;
  if (optimizer == "adamw") {
    if (module.lookupSymbol("braid.step"))
      return module.emitError("braid-training-step: the module already has "
                              "a weight @braid.step");
    auto stepType = RankedTensorType::get({}, f32);
    WeightOp last = params.back().weight;
    for (auto w : module.getOps<WeightOp>())
      last = w;
    WeightOp counter = declareZeros(b, last, "braid.step", stepType);
    step = add(read(counter), constant(f32, 1.0));
    SetWeightOp::create(b, loc, FlatSymbolRefAttr::get(counter.getSymNameAttr()),
                        step);
  }

  for (Param &p : params) {
    WeightOp weight = p.weight;
    weight.setState(true);
    RankedTensorType type = weight.getTensorType();
    Type elt = type.getElementType();
    auto set = [&](WeightOp target, Value value) {
      SetWeightOp::create(b, loc, FlatSymbolRefAttr::get(target.getSymNameAttr()),
                          value);
    };
    Value w = read(weight);
    Value g = p.grad;
    if (optimizer == "sgd") {
      if (weightDecay != 0)
        g = add(g, mul(w, constant(elt, weightDecay)));
      Value direction = g;
      if (momentum != 0) {
        WeightOp buffer = declareState(b, weight, weight, ".momentum_buffer");
        direction = add(mul(read(buffer), constant(elt, momentum)), g);
        set(buffer, direction);
      }
      set(weight, sub(w, mul(direction, constant(elt, lr))));
      continue;
    }
    // AdamW (torch.optim.AdamW, single-tensor path).
    WeightOp m = declareState(b, weight, weight, ".exp_avg");
    WeightOp v = declareState(b, m, weight, ".exp_avg_sq");
    Value decayed =
        weightDecay != 0 ? mul(w, constant(elt, 1.0 - lr * weightDecay)) : w;
    Value m1 = add(mul(read(m), constant(elt, beta1)),
                   mul(g, constant(elt, 1.0 - beta1)));
    Value v1 = add(mul(read(v), constant(elt, beta2)),
                   mul(mul(g, g), constant(elt, 1.0 - beta2)));
    // Bias corrections from the step count, in f32.
    Value one = constant(f32, 1.0);
    Value correction1 = sub(one, PowOp::create(b, loc, constant(f32, beta1), step));
    Value correction2 = sub(one, PowOp::create(b, loc, constant(f32, beta2), step));
    Value stepSize = DivOp::create(b, loc, constant(f32, lr), correction1);
    Value root2 = SqrtOp::create(b, loc, correction2.getType(), correction2);
    Value denom = add(DivOp::create(b, loc,
                                    SqrtOp::create(b, loc, v1.getType(), v1),
                                    as(root2, v1)),
                      constant(elt, eps));
    Value update = mul(DivOp::create(b, loc, m1, denom), as(stepSize, m1));
    set(m, m1);
    set(v, v1);
    set(weight, sub(decayed, update));
  }

  ret->setOperands(loss);
  main.setFunctionType(
      FunctionType::get(&getContext(), main.getArgumentTypes(), {lossType}));
  DictionaryAttr lossAttrs = main.getResultAttrDict(0);
  main.setAllResultAttrs(ArrayRef<DictionaryAttr>{lossAttrs});
  return success();
}

} // namespace
