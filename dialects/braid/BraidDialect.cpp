//===- BraidDialect.cpp - braid dialect registration ----------------------===//

#include "dialects/braid/BraidDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
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
