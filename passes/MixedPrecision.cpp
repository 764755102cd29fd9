//===- MixedPrecision.cpp - compute in bf16/f16 with f32 weights ----------===//
//
// braid-mixed-precision: every f32 value of a function becomes bf16 (or
// f16). Weights stay f32: each read is cast where it enters, as are f32
// arguments, and each result is cast back where it leaves. Under training
// (the pass runs before braid-next-token-loss and braid-autodiff) the
// casts' gradients bring every weight gradient back to f32, so the
// optimizer and its state are untouched: Megatron-LM's bf16 scheme.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/braid/BraidDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDMIXEDPRECISION
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

/// `value` in `target`'s semantics, rounded to nearest even; a finite value
/// beyond the target's range becomes its largest finite value of that sign
/// (f32's -3.4e38 masks would otherwise turn into -inf, and 0 * -inf into
/// NaN).
APFloat narrowValue(APFloat value, const llvm::fltSemantics &target) {
  bool finite = value.isFinite();
  bool negative = value.isNegative();
  bool lostInfo = false;
  value.convert(target, APFloat::rmNearestTiesToEven, &lostInfo);
  if (finite && value.isInfinity())
    return APFloat::getLargest(target, negative);
  return value;
}

struct MixedPrecision
    : public braid::impl::BraidMixedPrecisionBase<MixedPrecision> {
  using BraidMixedPrecisionBase::BraidMixedPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    FloatType target;
    if (type == "bf16")
      target = BFloat16Type::get(context);
    else if (type == "f16")
      target = Float16Type::get(context);
    else {
      module.emitError("braid-mixed-precision: type must be 'bf16' or "
                       "'f16', not '")
          << type << "'";
      return signalPassFailure();
    }
    auto func = module.lookupSymbol<func::FuncOp>(functionName);
    if (!func) {
      module.emitError("braid-mixed-precision: no function @") << functionName;
      return signalPassFailure();
    }
    if (failed(convert(func, target)))
      signalPassFailure();
  }

  LogicalResult convert(func::FuncOp func, FloatType target);
};

LogicalResult MixedPrecision::convert(func::FuncOp func, FloatType target) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("braid-mixed-precision: @")
           << functionName << " must have one block";
  Block &body = func.getBody().front();
  auto narrowType = [&](Type type) -> Type {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor && tensor.getElementType().isF32())
      return tensor.clone(target);
    return type;
  };
  OpBuilder b(func.getContext());
  // A cast of `value` to the narrow type, replacing its other uses.
  auto castUses = [&](Value value) {
    Type narrow = narrowType(value.getType());
    if (narrow == value.getType() || value.use_empty())
      return;
    auto cast = CastOp::create(b, value.getLoc(), narrow, value);
    value.replaceAllUsesExcept(cast, cast);
  };

  // The ops of the function as it was (the casts inserted stay as they are).
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  b.setInsertionPointToStart(&body);
  for (BlockArgument argument : body.getArguments())
    castUses(argument);
  for (Operation *op : ops) {
    if (op->getNumRegions() > 0)
      return op->emitOpError("is a region: braid-mixed-precision runs "
                             "before the overlap passes");
    if (auto read = dyn_cast<GetWeightOp>(op)) {
      b.setInsertionPointAfter(read);
      castUses(read.getResult());
      continue;
    }
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      Type narrow = narrowType(constant.getResult().getType());
      if (narrow == constant.getResult().getType())
        continue;
      if (!dense) {
        // A constant held as a resource: kept, and cast where it is read.
        b.setInsertionPointAfter(constant);
        castUses(constant.getResult());
        continue;
      }
      const llvm::fltSemantics &semantics = target.getFloatSemantics();
      DenseElementsAttr converted = dense.mapValues(
          target, [&](const APFloat &value) {
            return narrowValue(value, semantics).bitcastToAPInt();
          });
      constant.setValueAttr(converted);
      constant.getResult().setType(cast<RankedTensorType>(narrow));
      continue;
    }
    for (OpResult result : op->getResults())
      result.setType(narrowType(result.getType()));
  }

  // The results leave as the signature says.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  for (OpOperand &operand : ret->getOpOperands()) {
    Type declared = func.getResultTypes()[operand.getOperandNumber()];
    if (operand.get().getType() != declared)
      operand.set(CastOp::create(b, ret.getLoc(), declared, operand.get()));
  }
  return success();
}

} // namespace
