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

LogicalResult WeightOp::verify() {
  std::optional<StringRef> init = getInit();
  if (init && *init != "zeros")
    return emitOpError("init must be \"zeros\" (absent: read from the "
                       "weights file), got \"")
           << *init << "\"";
  return success();
}

/// Checks a training plan's `training` dictionary: its entries, and that
/// the named bindings exist with the shapes braid-run fills and reads.
static LogicalResult verifyTraining(PlanOp plan,
                                    mlir::SymbolTable &symbols) {
  DictionaryAttr training = plan.getTrainingAttr();
  if (!training)
    return success();
  for (NamedAttribute entry : training) {
    StringRef key = entry.getName().getValue();
    if (!llvm::is_contained({"tokens", "labels", "loss", "batch", "sequence",
                             "steps", "algorithm", "ran"},
                            key))
      return plan.emitOpError("training has an unknown entry '")
             << key
             << "' (it has tokens, labels, loss, batch, sequence, steps, "
                "algorithm, ran)";
  }
  int64_t steps = 1;
  if (Attribute value = training.get("steps")) {
    auto integer = dyn_cast<IntegerAttr>(value);
    if (!integer || integer.getInt() <= 0)
      return plan.emitOpError("training 'steps' must be a positive integer");
    steps = integer.getInt();
  }
  if (Attribute value = training.get("algorithm")) {
    auto name = dyn_cast<StringAttr>(value);
    if (!name || (name.getValue() != "cocod-sgd" && name.getValue() != "acco"))
      return plan.emitOpError(
          "training 'algorithm' must be \"cocod-sgd\" or \"acco\"");
  }
  for (StringRef key : {"tokens", "labels", "loss"})
    if (!training.getAs<StringAttr>(key))
      return plan.emitOpError("training needs the string '") << key << "'";
  SmallVector<int64_t, 2> batchShape;
  for (StringRef key : {"batch", "sequence"}) {
    auto value = training.getAs<IntegerAttr>(key);
    if (!value || value.getInt() <= 0)
      return plan.emitOpError("training needs a positive integer '")
             << key << "'";
    batchShape.push_back(value.getInt());
  }
  batchShape[0] *= steps;
  // The buffer bound to input (or output) `name`, or null.
  auto bound = [&](StringRef name, bool input) -> BufferOp {
    for (Operation &op : plan.getBody().front()) {
      FlatSymbolRefAttr ref;
      if (auto in = dyn_cast<InputOp>(op); in && input && in.getName() == name)
        ref = in.getBufferAttr();
      if (auto out = dyn_cast<OutputOp>(op);
          out && !input && out.getName() == name)
        ref = out.getBufferAttr();
      if (ref)
        return symbols.lookup<BufferOp>(ref.getValue());
    }
    return nullptr;
  };
  StringRef tokens = training.getAs<StringAttr>("tokens").getValue();
  StringRef labels = training.getAs<StringAttr>("labels").getValue();
  if (tokens == labels)
    return plan.emitOpError("training labels \"")
           << labels << "\" is also the tokens input; labels need their own";
  for (auto [key, name] : {std::pair<StringRef, StringRef>{"tokens", tokens},
                           {"labels", labels}}) {
    BufferOp buffer = bound(name, /*input=*/true);
    if (!buffer)
      return plan.emitOpError("training ")
             << key << " \"" << name << "\" is not an exec.input of the plan";
    RankedTensorType type = buffer.getTensorType();
    Type element = type.getElementType();
    if (type.getShape() != ArrayRef<int64_t>(batchShape) ||
        !(element.isInteger(64) || element.isInteger(32)))
      return plan.emitOpError("training ")
             << key << " input \"" << name << "\" is " << type
             << ", not [" << (steps > 1 ? "steps * batch" : "batch")
             << ", sequence] = [" << batchShape[0] << ", "
             << batchShape[1] << "] of i64 or i32";
  }
  StringRef loss = training.getAs<StringAttr>("loss").getValue();
  BufferOp buffer = bound(loss, /*input=*/false);
  if (!buffer)
    return plan.emitOpError("training loss \"")
           << loss << "\" is not an exec.output of the plan";
  RankedTensorType type = buffer.getTensorType();
  bool shaped = steps > 1 ? type.getShape() == ArrayRef<int64_t>{steps}
                          : type.getRank() == 0;
  if (!shaped || !type.getElementType().isF32())
    return plan.emitOpError("training loss output \"")
           << loss << "\" is " << type << ", not "
           << (steps > 1 ? "f32 [steps]" : "a scalar f32");
  if (Attribute value = training.get("ran")) {
    auto ran = dyn_cast<StringAttr>(value);
    BufferOp counts = ran ? bound(ran.getValue(), /*input=*/false) : BufferOp();
    if (!counts || counts.getTensorType() != type)
      return plan.emitOpError("training 'ran' must name an exec.output of "
                              "the loss's type ")
             << type << " (the ranks that ran each step)";
  }
  return success();
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
  return verifyTraining(*this, symbols);
}

#define GET_OP_CLASSES
#include "dialects/exec/ExecOps.cpp.inc"
