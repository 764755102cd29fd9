//===- BraidDialect.cpp - braid dialect registration ----------------------===//

#include "dialects/braid/BraidDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::braid;

#include "dialects/braid/BraidInterfaces.cpp.inc"
#include "dialects/braid/BraidOpsDialect.cpp.inc"
#include "dialects/braid/BraidOpsEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/braid/BraidOpsAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "dialects/braid/BraidOpsTypes.cpp.inc"

void BraidDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/braid/BraidOps.cpp.inc"
      >();
}

void BraidDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/braid/BraidOpsTypes.cpp.inc"
      >();
}

void BraidDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/braid/BraidOpsAttrs.cpp.inc"
      >();
}

Operation *BraidDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     FlatSymbolRefAttr mesh, ArrayAttr dims,
                     ArrayAttr partial) {
  llvm::StringSet<> seen;
  auto checkAxis = [&](Attribute a, StringRef where) -> LogicalResult {
    auto name = dyn_cast<StringAttr>(a);
    if (!name)
      return emitError() << "sharding " << where
                         << " must list mesh axis names, got " << a;
    if (!seen.insert(name.getValue()).second)
      return emitError() << "sharding uses mesh axis '" << name.getValue()
                         << "' twice";
    return success();
  };
  for (auto [d, entry] : llvm::enumerate(dims)) {
    auto axes = dyn_cast<ArrayAttr>(entry);
    if (!axes)
      return emitError() << "sharding entry " << d
                         << " must be a list of mesh axes, got " << entry;
    for (Attribute a : axes)
      if (failed(checkAxis(a, "entry " + std::to_string(d))))
        return failure();
  }
  if (partial)
    for (Attribute a : partial)
      if (failed(checkAxis(a, "partial")))
        return failure();
  return success();
}

SmallVector<StringRef> ShardingAttr::getAxes(unsigned dim) const {
  SmallVector<StringRef> axes;
  for (Attribute a : cast<ArrayAttr>(getDims()[dim]))
    axes.push_back(cast<StringAttr>(a).getValue());
  return axes;
}
