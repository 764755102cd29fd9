//===- ExecDialect.cpp - the exec dialect ---------------------------------===//

#include "dialects/exec/ExecDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

using namespace mlir;
using namespace mlir::exec;

#include "dialects/exec/ExecOpsDialect.cpp.inc"

void ExecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/exec/ExecOps.cpp.inc"
      >();
}

int64_t BufferOp::getNumBytes() {
  RankedTensorType type = getTensorType();
  int64_t bits = type.getElementTypeBitWidth();
  return type.getNumElements() * std::max<int64_t>(1, bits / 8);
}

LogicalResult PlanOp::verify() {
  if (getAxisNames().size() != getAxisSizes().size() || getAxisNames().empty())
    return emitOpError("needs one size per mesh axis, at least one axis");
  mlir::SymbolTable symbols(*this);
  auto lookupBuffer = [&](Operation *user,
                          FlatSymbolRefAttr ref) -> FailureOr<BufferOp> {
    auto buffer = symbols.lookup<BufferOp>(ref.getValue());
    if (!buffer)
      return user->emitOpError("refers to unknown buffer ") << ref;
    return buffer;
  };
  for (Operation &op : getBody().front()) {
    if (auto buffer = dyn_cast<BufferOp>(op)) {
      if (buffer.getOffset() < 0 ||
          buffer.getOffset() + buffer.getNumBytes() > getArenaBytes())
        return buffer.emitOpError("lies outside the arena of ")
               << getArenaBytes() << " bytes";
      continue;
    }
    FlatSymbolRefAttr ref;
    if (auto input = dyn_cast<InputOp>(op))
      ref = input.getBufferAttr();
    else if (auto output = dyn_cast<OutputOp>(op))
      ref = output.getBufferAttr();
    else if (auto weight = dyn_cast<WeightOp>(op))
      ref = weight.getBufferAttr();
    else if (auto constant = dyn_cast<ConstantOp>(op))
      ref = constant.getBufferAttr();
    if (ref && failed(lookupBuffer(&op, ref)))
      return failure();
    auto stream = dyn_cast<StreamOp>(op);
    if (!stream)
      continue;
    for (Operation &inst : stream.getBody().front()) {
      SmallVector<FlatSymbolRefAttr> refs;
      if (auto kernel = dyn_cast<KernelOp>(inst)) {
        for (Attribute a : kernel.getInputs())
          refs.push_back(cast<FlatSymbolRefAttr>(a));
        for (Attribute a : kernel.getOutputs())
          refs.push_back(cast<FlatSymbolRefAttr>(a));
      } else if (auto collective = dyn_cast<CollectiveOp>(inst)) {
        refs.push_back(collective.getInputAttr());
        refs.push_back(collective.getOutputAttr());
      } else if (auto record = dyn_cast<RecordOp>(inst)) {
        if (record.getEvent() < 0 || record.getEvent() >= getNumEvents())
          return record.emitOpError("event ")
                 << record.getEvent() << " is out of range";
      } else if (auto wait = dyn_cast<WaitOp>(inst)) {
        if (wait.getEvent() < 0 || wait.getEvent() >= getNumEvents())
          return wait.emitOpError("event ")
                 << wait.getEvent() << " is out of range";
      }
      for (FlatSymbolRefAttr r : refs)
        if (failed(lookupBuffer(&inst, r)))
          return failure();
    }
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/exec/ExecOps.cpp.inc"
