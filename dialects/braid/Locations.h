//===- Locations.h - where an imported op came from -------------*- C++ -*-===//
//
// Part of the Braid project.
//
// Imported ops are located at their ONNX node:
//   loc("node name"("graph name"("model.onnx":0:0)))
// (the function, weights and the return at the graph: loc("graph
// name"("model.onnx":0:0))). Passes keep these locations (fused where they
// merge ops), so a diagnostic from any pass can name the node; the tools
// print them as "model.onnx: node '/h.0/attn/MatMul': warning: ...".
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECTS_BRAID_LOCATIONS_H
#define BRAID_DIALECTS_BRAID_LOCATIONS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"

#include <optional>
#include <string>

namespace mlir {
namespace braid {

/// The location of graph `graph` of the model at `modelPath`.
Location onnxGraphLocation(MLIRContext *context, StringRef modelPath,
                           StringRef graph);
/// The location of node `node` of the graph located at `graphLocation`.
Location onnxNodeLocation(Location graphLocation, StringRef node);

/// "model.onnx: node 'name'" (with "(and N more)" when passes fused several
/// nodes' ops), "model.onnx: graph 'name'", or nothing when `location` holds
/// no ONNX location.
std::optional<std::string> describeOnnxLocation(Location location);

/// While alive, prints the diagnostics of `context` located in an ONNX model
/// as "<describeOnnxLocation>: <severity>: <message>" (notes likewise) on
/// stderr, and leaves every other one to the handlers registered before it.
class OnnxDiagnosticHandler {
public:
  explicit OnnxDiagnosticHandler(MLIRContext *context);
  ~OnnxDiagnosticHandler();

private:
  MLIRContext *context;
  DiagnosticEngine::HandlerID id;
};

} // namespace braid
} // namespace mlir

#endif // BRAID_DIALECTS_BRAID_LOCATIONS_H
