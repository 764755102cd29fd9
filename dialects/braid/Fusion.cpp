//===- Fusion.cpp - which braid ops braid-to-exec fuses into one kernel ---===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Fusion.h"

#include <functional>

using namespace mlir;
using namespace mlir::braid;

int64_t mlir::braid::optionalGroupOf(Operation *op) {
  auto group = op ? op->getAttrOfType<IntegerAttr>(kOptionalAttrName)
                  : IntegerAttr();
  return group ? group.getInt() : -1;
}

Value mlir::braid::viewedValue(Value value) {
  while (auto reshape = value.getDefiningOp<ReshapeOp>())
    value = reshape.getInput();
  return value;
}

/// Whether `next`, reading `value` (the product so far), joins `epilogue`
/// (updated when it does).
static bool joinEpilogue(Operation *next, Value value, Epilogue &epilogue) {
  auto type = cast<RankedTensorType>(value.getType());
  if (auto add = dyn_cast<AddOp>(next)) {
    if (add.getType() != type || add.getLhs() == add.getRhs())
      return false;
    Value other = add.getLhs() == value ? add.getRhs() : add.getLhs();
    auto otherType = cast<RankedTensorType>(other.getType());
    if (otherType.getElementType() != type.getElementType())
      return false;
    if (otherType == type) {
      if (epilogue.addend)
        return false;
      epilogue.addend = other;
      return true;
    }
    // A bias: the product's columns, broadcast over every row.
    int64_t columns = type.getShape().back();
    bool row = otherType.getRank() >= 1 &&
               otherType.getShape().back() == columns &&
               otherType.getNumElements() == columns;
    if (!row || epilogue.bias || !epilogue.activation.empty() ||
        epilogue.addend)
      return false;
    epilogue.bias = other;
    return true;
  }
  if (!epilogue.activation.empty() || epilogue.addend)
    return false;
  if (auto gelu = dyn_cast<GeluOp>(next))
    epilogue.activation = gelu.getTanh() ? "gelu_tanh" : "gelu";
  else if (isa<SiluOp>(next))
    epilogue.activation = "silu";
  else if (isa<ReluOp>(next))
    epilogue.activation = "relu";
  return !epilogue.activation.empty();
}

Epilogue
mlir::braid::collectEpilogue(MatmulOp matmul,
                             llvm::function_ref<bool(Operation *)> mayMoveUp,
                             llvm::function_ref<bool(Value)> existsAtMatmul) {
  Epilogue epilogue;
  epilogue.result = matmul.getResult();
  int64_t columns = matmul.getType().getShape().back();
  while (true) {
    // Through reshapes that keep the rows (they only alias).
    SmallVector<Value> chain{epilogue.result};
    while (chain.back().hasOneUse())
      if (auto reshape =
              dyn_cast<ReshapeOp>(*chain.back().getUsers().begin());
          reshape && reshape.getType().getShape().back() == columns)
        chain.push_back(reshape.getResult());
      else
        break;
    Value value = chain.back();
    if (!value.hasOneUse())
      break;
    Operation *user = *value.getUsers().begin();
    if (optionalGroupOf(user) != optionalGroupOf(matmul) || !mayMoveUp(user))
      break;
    Epilogue joined = epilogue;
    if (!joinEpilogue(user, value, joined))
      break;
    Value other = joined.addend != epilogue.addend ? joined.addend
                  : joined.bias != epilogue.bias   ? joined.bias
                                                   : Value();
    if (other && !existsAtMatmul(other))
      break;
    epilogue = joined;
    epilogue.ops.push_back(user);
    epilogue.internal.append(chain.begin(), chain.end());
    epilogue.flops += cast<CostOpInterface>(user).getFlops();
    epilogue.result = user->getResult(0);
  }
  return epilogue;
}

int64_t Epilogue::extraBytes() const {
  int64_t bytes = 0;
  for (Value extra : {bias, addend})
    if (extra)
      bytes += getNumBytes(extra);
  return bytes;
}

int64_t ElementwiseGroup::bytes() const {
  int64_t bytes = getNumBytes(ops.back()->getResult(0));
  for (Value leaf : leaves)
    bytes += getNumBytes(leaf);
  return bytes;
}

StringRef mlir::braid::elementwiseKernelName(Operation *op) {
  if (op->getNumResults() != 1)
    return "";
  // One float type throughout (f32, bf16 or f16: the kernels compute in
  // f32 and round each step to it).
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return "";
  for (Value operand : op->getOperands()) {
    auto operandType = dyn_cast<RankedTensorType>(operand.getType());
    if (!operandType || operandType.getElementType() != type.getElementType())
      return "";
  }
  if (auto gelu = dyn_cast<GeluOp>(op))
    return gelu.getTanh() ? "gelu_tanh" : "gelu";
  if (isa<NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, ErfOp, SigmoidOp,
          SiluOp, ReluOp, AddOp, SubOp, MulOp, DivOp>(op))
    return op->getName().stripDialect();
  return "";
}

ElementwiseGroup mlir::braid::collectElementwiseTree(
    Operation *root, llvm::function_ref<bool(Operation *)> mayMoveDown) {
  ElementwiseGroup group;
  Type type = root->getResult(0).getType();
  size_t taken = 0; // producers joined so far
  // Each operand of each op: a tree op (by index, encoded as -1 - index)
  // or a leaf (by index), resolved to registers at the end.
  SmallVector<std::pair<int64_t, int64_t>> refs;
  std::function<void(Operation *)> collect = [&](Operation *op) {
    SmallVector<int64_t> mine;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      bool joins = def && operand.hasOneUse() &&
                   def->getResult(0).getType() == type &&
                   !elementwiseKernelName(def).empty() &&
                   taken + 1 < kMaxChainSteps &&
                   optionalGroupOf(def) == optionalGroupOf(root) &&
                   mayMoveDown(def);
      if (joins) {
        ++taken;
        collect(def);
        mine.push_back(-1 - static_cast<int64_t>(group.ops.size() - 1));
        continue;
      }
      auto found = llvm::find(group.leaves, operand);
      if (found == group.leaves.end()) {
        group.leaves.push_back(operand);
        found = group.leaves.end() - 1;
      }
      mine.push_back(found - group.leaves.begin());
    }
    group.ops.push_back(op);
    refs.push_back({mine[0], mine.size() > 1 ? mine[1] : INT64_MAX});
  };
  collect(root);
  int64_t numLeaves = static_cast<int64_t>(group.leaves.size());
  auto reg = [&](int64_t ref) {
    return ref == INT64_MAX ? int64_t{-1}
           : ref < 0        ? numLeaves + (-1 - ref)
                            : ref;
  };
  for (auto [op, ref] : llvm::zip(group.ops, refs)) {
    group.names +=
        (group.names.empty() ? "" : ",") + elementwiseKernelName(op).str();
    group.operands.push_back(reg(ref.first));
    group.operands.push_back(reg(ref.second));
    group.flops += cast<CostOpInterface>(op).getFlops();
  }
  return group;
}
