//===- CostReport.cpp - FLOPs and bytes per op and function ---------------===//

#include "dialects/braid/BraidDialect.h"
#include "passes/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/Format.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDCOSTREPORT
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {
struct CostReportPass
    : public braid::impl::BraidCostReportBase<CostReportPass> {
  using BraidCostReportBase::BraidCostReportBase;

  void runOnOperation() override {
    getOperation().walk([&](FunctionOpInterface function) {
      int64_t flops = 0, bytes = 0;
      function.walk([&](CostOpInterface op) {
        int64_t opFlops = op.getFlops(), opBytes = op.getMinBytes();
        flops += opFlops;
        bytes += opBytes;
        if (perOp)
          op->emitRemark() << "flops = " << opFlops << ", bytes = " << opBytes;
      });
      InFlightDiagnostic remark = function->emitRemark()
                                  << "total: flops = " << flops
                                  << ", bytes = " << bytes;
      if (bytes > 0) {
        std::string intensity;
        llvm::raw_string_ostream(intensity)
            << llvm::format("%.3f", (double)flops / (double)bytes);
        remark << ", flops/byte = " << intensity;
      }
    });
  }
};
} // namespace
