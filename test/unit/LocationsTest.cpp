//===- LocationsTest.cpp - describing ONNX locations ----------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Locations.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::braid;

namespace {

TEST(LocationsTest, NamesTheNodeTheGraphOrNothing) {
  MLIRContext context;
  Location graph = onnxGraphLocation(&context, "m.onnx", "main_graph");
  Location node = onnxNodeLocation(graph, "/h.0/MatMul");
  EXPECT_EQ(describeOnnxLocation(node), "m.onnx: node '/h.0/MatMul'");
  EXPECT_EQ(describeOnnxLocation(graph), "m.onnx: graph 'main_graph'");
  EXPECT_EQ(describeOnnxLocation(FileLineColLoc::get(&context, "m.onnx", 0, 0)),
            "m.onnx");
  // A text file's location (line and column) is not ONNX's.
  EXPECT_EQ(describeOnnxLocation(FileLineColLoc::get(&context, "a.mlir", 3, 1)),
            std::nullopt);
  EXPECT_EQ(describeOnnxLocation(UnknownLoc::get(&context)), std::nullopt);
}

TEST(LocationsTest, FusedLocationsCountTheirNodes) {
  MLIRContext context;
  Location graph = onnxGraphLocation(&context, "m.onnx", "g");
  Location a = onnxNodeLocation(graph, "a"), b = onnxNodeLocation(graph, "b");
  EXPECT_EQ(describeOnnxLocation(FusedLoc::get(&context, {a, b, a})),
            "m.onnx: node 'a' (and 1 more)");
  // Under a call site or another name, the node is still found.
  Location wrapped = NameLoc::get(StringAttr::get(&context, "outer"), b);
  EXPECT_EQ(describeOnnxLocation(wrapped), "m.onnx: node 'b'");
  EXPECT_EQ(describeOnnxLocation(CallSiteLoc::get(a, UnknownLoc::get(&context))),
            "m.onnx: node 'a'");
}

TEST(LocationsTest, HandlerTakesOnlyOnnxDiagnostics) {
  MLIRContext context;
  int others = 0;
  context.getDiagEngine().registerHandler([&](Diagnostic &) {
    ++others;
    return success();
  });
  {
    OnnxDiagnosticHandler handler(&context);
    testing::internal::CaptureStderr();
    Location graph = onnxGraphLocation(&context, "m.onnx", "g");
    emitWarning(onnxNodeLocation(graph, "n")) << "odd";
    emitError(FileLineColLoc::get(&context, "a.mlir", 2, 5)) << "bad";
    EXPECT_EQ(testing::internal::GetCapturedStderr(),
              "m.onnx: node 'n': warning: odd\n");
    EXPECT_EQ(others, 1);
  }
  // Gone with the handler object.
  emitWarning(onnxGraphLocation(&context, "m.onnx", "g")) << "later";
  EXPECT_EQ(others, 2);
}

} // namespace
