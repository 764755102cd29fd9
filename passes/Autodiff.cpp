//===- Autodiff.cpp - reverse-mode differentiation of braid functions ------===//
//
// braid-autodiff: appends to a function computing a scalar loss the
// gradient of the loss with respect to its trained weights (or its float
// arguments). One backward sweep over the function's ops in reverse order;
// each op emits its vector-Jacobian product through GradientOpInterface.
// No op is named here.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/braid/BraidDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDAUTODIFF
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

bool isFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// Whether a use of a weight value contracts or normalizes it: some
/// dimension of the operand is made of a reduction or whole factor.
bool isParameterUse(OpOperand &use) {
  auto mapping = dyn_cast<DimensionMappingOpInterface>(use.getOwner());
  auto rule = dyn_cast<GradientOpInterface>(use.getOwner());
  if (!mapping || !rule || !rule.isDifferentiableIn(use.getOperandNumber()))
    return false;
  DimensionMapping m = mapping.getDimensionMapping();
  unsigned index = use.getOperandNumber();
  if (index >= m.getOperands().size())
    return false;
  for (const DimFactors &dim : m.getOperands()[index])
    for (unsigned f : dim) {
      FactorKind kind = m.getFactors()[f].kind;
      if (kind == FactorKind::Reduction || kind == FactorKind::Whole)
        return true;
    }
  return false;
}

/// Whether an op only moves or converts data (no arithmetic): uses through
/// it count as uses of its operand. A float-to-float cast converts (the
/// weight reads of braid-mixed-precision).
bool isLayoutOp(Operation *op) {
  if (auto convert = dyn_cast<CastOp>(op))
    return isFloatTensor(convert.getInput()) &&
           isFloatTensor(convert.getResult());
  auto cost = dyn_cast<CostOpInterface>(op);
  return cost && cost.getFlops() == 0 && isa<DimensionMappingOpInterface>(op);
}

/// Whether some use of `value`, through layout ops, contracts or
/// normalizes it.
bool hasParameterUse(Value value) {
  SmallVector<Value> work{value};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      if (isParameterUse(use))
        return true;
      if (isLayoutOp(use.getOwner()))
        for (Value r : use.getOwner()->getResults())
          work.push_back(r);
    }
  }
  return false;
}

struct Autodiff : public braid::impl::BraidAutodiffBase<Autodiff> {
  using BraidAutodiffBase::BraidAutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(functionName);
    if (!func) {
      module.emitError("braid-autodiff: no function @") << functionName;
      return signalPassFailure();
    }
    if (wrt != "weights" && wrt != "arguments") {
      module.emitError("braid-autodiff: wrt must be 'weights' or 'arguments', "
                       "not '")
          << wrt << "'";
      return signalPassFailure();
    }
    if (recompute != "none" && recompute != "elementwise") {
      module.emitError("braid-autodiff: recompute must be 'none' or "
                       "'elementwise', not '")
          << recompute << "'";
      return signalPassFailure();
    }
    if (trainable != "auto" && trainable != "all") {
      module.emitError("braid-autodiff: trainable must be 'auto' or 'all', "
                       "not '")
          << trainable << "'";
      return signalPassFailure();
    }
    if (failed(differentiate(module, func)))
      signalPassFailure();
  }

  LogicalResult differentiate(ModuleOp module, func::FuncOp func);
  void recomputeCheapValues(ArrayRef<Operation *> forward, Operation *end);
};

/// Whether recomputing `op` in the backward pass is cheaper than keeping
/// its result: only parallel factors (no reduction, no whole dimension), at
/// most 8 operations per result element, one result.
bool isCheapToRecompute(Operation *op) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0 ||
      isa<GetWeightOp, ConstantOp>(op))
    return false;
  auto mapping = dyn_cast<DimensionMappingOpInterface>(op);
  auto cost = dyn_cast<CostOpInterface>(op);
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!mapping || !cost || !type || !isMemoryEffectFree(op))
    return false;
  DimensionMapping m = mapping.getDimensionMapping();
  if (llvm::any_of(m.getFactors(), [](const Factor &f) {
        return f.kind != FactorKind::Parallel;
      }))
    return false;
  return cost.getFlops() <= 8 * std::max<int64_t>(1, type.getNumElements());
}

void Autodiff::recomputeCheapValues(ArrayRef<Operation *> forward,
                                    Operation *end) {
  llvm::SmallPtrSet<Operation *, 32> forwardOps(forward.begin(), forward.end());
  llvm::DenseMap<Value, Value> recomputed;
  OpBuilder b(&getContext());
  // Clones `v`'s cheap producer chain before the builder's point, once.
  std::function<Value(Value)> remat = [&](Value v) -> Value {
    Operation *def = v.getDefiningOp();
    if (!def || !forwardOps.contains(def) || !isCheapToRecompute(def))
      return v;
    if (Value done = recomputed.lookup(v))
      return done;
    IRMapping map;
    for (Value operand : def->getOperands())
      map.map(operand, remat(operand));
    Operation *clone = b.clone(*def, map);
    // Marked, so that CSE does not fold it back into the forward op.
    clone->setAttr("braid.recomputed", b.getUnitAttr());
    recomputed[v] = clone->getResult(0);
    return clone->getResult(0);
  };
  // The backward ops, in order: everything after the last forward op.
  Operation *op = forward.empty() ? nullptr : forward.back()->getNextNode();
  for (; op && op != end; op = op->getNextNode()) {
    b.setInsertionPoint(op);
    for (OpOperand &use : op->getOpOperands())
      use.set(remat(use.get()));
  }
}

LogicalResult Autodiff::differentiate(ModuleOp module, func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("braid-autodiff: @")
           << functionName << " must have one block";
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (lossIndex >= ret.getNumOperands())
    return func.emitError("braid-autodiff: @")
           << functionName << " has no result #"
           << static_cast<unsigned>(lossIndex);
  Value loss = ret.getOperand(lossIndex);
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType()))
    return func.emitError("braid-autodiff: result #")
           << static_cast<unsigned>(lossIndex) << " of @" << functionName
           << " must be a scalar float loss, not " << loss.getType();
  WalkResult regions = func.walk([&](Operation *op) {
    if (op->getNumRegions() > 0 && op != func.getOperation()) {
      op->emitOpError("is a region: differentiate before the overlap passes");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (regions.wasInterrupted())
    return failure();

  // --- sources: trained weights or float arguments ---------------------------
  // The values whose gradients are results, grouped by what they read.
  llvm::MapVector<Attribute, SmallVector<Value, 1>> sources;
  SmallVector<Type> sourceTypes;
  llvm::StringSet<> frozenNames, trainNames;
  for (const std::string &name : frozen)
    frozenNames.insert(name);
  for (const std::string &name : train)
    trainNames.insert(name);
  if (wrt == "arguments") {
    for (BlockArgument arg : func.getArguments())
      if (isFloatTensor(arg)) {
        sources[IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                 arg.getArgNumber())]
            .push_back(arg);
      }
  } else {
    llvm::MapVector<StringRef, SmallVector<GetWeightOp, 1>> reads;
    func.walk([&](GetWeightOp read) { reads[read.getName()].push_back(read); });
    for (auto weight : module.getOps<WeightOp>()) {
      StringRef name = weight.getSymName();
      if (!isa<FloatType>(weight.getTensorType().getElementType()))
        continue;
      // A copy: lookup returns the vector by value.
      SmallVector<GetWeightOp, 1> uses = reads.lookup(name);
      bool trained;
      if (trainNames.contains(name))
        trained = true;
      else if (frozenNames.contains(name))
        trained = false;
      else if (trainable == "all" || weight.getTensorType().getRank() <= 1)
        trained = true;
      else
        trained = llvm::any_of(uses, [](GetWeightOp read) {
          return hasParameterUse(read.getResult());
        });
      // A trained weight nothing reads still gets a (zero) gradient below.
      if (!trained)
        continue;
      for (GetWeightOp read : uses)
        if (read.getBlockAttr() || read.getSharding())
          return read.emitOpError("reads a block or a shard of a trained "
                                  "weight: differentiate before partitioning "
                                  "and braid-split-fused-projections (or "
                                  "split with parts=true, which makes each "
                                  "block a weight of its own)");
      auto &values = sources[FlatSymbolRefAttr::get(weight.getSymNameAttr())];
      for (GetWeightOp read : uses)
        values.push_back(read.getResult());
    }
    for (StringRef name : frozenNames.keys())
      if (!module.lookupSymbol<WeightOp>(name))
        return module.emitError("braid-autodiff: frozen names no weight @")
               << name;
    for (StringRef name : trainNames.keys())
      if (!module.lookupSymbol<WeightOp>(name))
        return module.emitError("braid-autodiff: train names no weight @")
               << name;
  }

  // --- activity: values that depend on a source ------------------------------
  llvm::DenseSet<Value> active;
  for (auto &[key, values] : sources)
    for (Value v : values)
      active.insert(v);
  // A weight read only where the op is not differentiable (rotary tables,
  // masks) makes nothing active; one the user asked to train is an error
  // there (below).
  // An op marked braid.stop_gradient passes none back (the max that
  // braid-next-token-loss's vocabulary-parallel loss subtracts for
  // stability, on which the loss does not depend).
  for (Operation &op : body.without_terminator()) {
    if (op.hasAttr(kStopGradientAttrName) ||
        !llvm::any_of(op.getOpOperands(), [&](OpOperand &use) {
          return active.contains(use.get());
        }))
      continue;
    for (Value r : op.getResults())
      if (isFloatTensor(r))
        active.insert(r);
  }

  // --- the backward sweep ------------------------------------------------------
  OpBuilder b(ret);
  Location loc = ret.getLoc();
  llvm::DenseMap<Value, Value> adjoint;
  auto accumulate = [&](Value v, Value grad) {
    Value &slot = adjoint[v];
    slot = slot ? AddOp::create(b, loc, slot, grad).getResult() : grad;
  };
  adjoint[loss] = ConstantOp::create(
      b, loc, lossType,
      DenseElementsAttr::get(
          lossType, b.getFloatAttr(lossType.getElementType(), 1.0)));
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  for (Operation *op : llvm::reverse(forward)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(adjoint.lookup(r));
      any |= static_cast<bool>(resultGrads.back());
    }
    if (!any || !llvm::any_of(op->getOperands(),
                              [&](Value v) { return active.contains(v); }))
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitOpError("has no gradient rule (it does not implement "
                             "GradientOpInterface)");
    SmallVector<Value> operandGrads;
    if (failed(rule.emitGradients(b, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("gradient rule returned ")
             << operandGrads.size() << " adjoints for "
             << op->getNumOperands() << " operands";
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      if (!active.contains(operand))
        continue;
      if (!operandGrads[i])
        return op->emitOpError("is not differentiable in operand #")
               << i << ", which depends on a trained weight";
      if (operandGrads[i].getType() != operand.getType())
        return op->emitOpError("gradient rule gave operand #")
               << i << " an adjoint of type " << operandGrads[i].getType()
               << ", not " << operand.getType();
      accumulate(operand, operandGrads[i]);
    }
  }

  if (recompute == "elementwise")
    recomputeCheapValues(forward, ret);

  // --- results -----------------------------------------------------------------
  SmallVector<Value> results(ret.getOperands());
  SmallVector<Attribute> marks;
  for (auto &[key, values] : sources) {
    Value sum;
    for (Value v : values)
      if (Value g = adjoint.lookup(v))
        sum = sum ? AddOp::create(b, loc, sum, g).getResult() : g;
    Type type;
    if (auto ref = dyn_cast<FlatSymbolRefAttr>(key))
      type = module.lookupSymbol<WeightOp>(ref.getAttr()).getTensorType();
    else
      type = func.getArgument(cast<IntegerAttr>(key).getInt()).getType();
    if (!sum) {
      auto tensorType = cast<RankedTensorType>(type);
      Value zero = ConstantOp::create(
          b, loc, RankedTensorType::get({}, tensorType.getElementType()),
          DenseElementsAttr::get(
              RankedTensorType::get({}, tensorType.getElementType()),
              b.getFloatAttr(tensorType.getElementType(), 0.0)));
      sum = tensorType.getRank() == 0
                ? zero
                : BroadcastToOp::create(b, loc, tensorType, zero).getResult();
    }
    results.push_back(sum);
    marks.push_back(key);
  }
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned r = 0; r < func.getNumResults(); ++r)
    resultAttrs.push_back(func.getResultAttrDict(r));
  for (Attribute mark : marks)
    resultAttrs.push_back(DictionaryAttr::get(
        &getContext(),
        {NamedAttribute(StringAttr::get(&getContext(), "braid.gradient_of"),
                        mark)}));
  ret->setOperands(results);
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func.setFunctionType(
      FunctionType::get(&getContext(), func.getArgumentTypes(), resultTypes));
  func.setAllResultAttrs(resultAttrs);

  // Rules emit every operand's adjoint; drop those nothing needed.
  SmallVector<Operation *> all;
  for (Operation &op : body.without_terminator())
    all.push_back(&op);
  for (Operation *op : llvm::reverse(all))
    if (isOpTriviallyDead(op))
      op->erase();
  return success();
}

} // namespace
