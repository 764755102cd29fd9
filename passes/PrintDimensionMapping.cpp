//===- PrintDimensionMapping.cpp - show and check factor mappings ---------===//

#include "dialects/braid/BraidDialect.h"
#include "passes/Passes.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDPRINTDIMENSIONMAPPING
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {
struct PrintDimensionMappingPass
    : public braid::impl::BraidPrintDimensionMappingBase<
          PrintDimensionMappingPass> {
  void runOnOperation() override {
    bool consistent = true;
    getOperation().walk([&](DimensionMappingOpInterface op) {
      DimensionMapping mapping = op.getDimensionMapping();
      if (std::optional<std::string> problem = mapping.check(op)) {
        op->emitError() << "inconsistent dimension mapping: " << *problem;
        consistent = false;
        return;
      }
      op->emitRemark() << mapping.toString();
    });
    if (!consistent)
      signalPassFailure();
  }
};
} // namespace
