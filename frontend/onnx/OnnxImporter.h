//===- OnnxImporter.h - ONNX models to braid IR ------------------*- C++
//-*-===//
//
// Builds a `func.func @main` in the braid dialect from an ONNX model, with
// static shapes inferred by Braid itself, shape-computing subgraphs folded to
// constants, and initializers turned into braid.weight symbols whose bytes are
// returned for the weights file.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_FRONTEND_ONNX_ONNXIMPORTER_H
#define BRAID_FRONTEND_ONNX_ONNXIMPORTER_H

#include "frontend/onnx/OnnxModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
namespace braid {
namespace onnx_import {

/// Choices the caller makes about an import.
struct ImportOptions {
  /// Sizes for graph inputs with dynamic dimensions: input name -> shape.
  llvm::StringMap<llvm::SmallVector<int64_t, 4>> inputShapes;
  /// The most elements one tensor evaluated on the host at import (a folded
  /// result, an initializer read as a constant) may have; a node that needs
  /// more is an error naming it. 0 (the default) derives it from the
  /// machine's memory: a quarter of it, at the 8 bytes an element takes on
  /// the host. The fuzzer sets a small bound.
  int64_t maxHostElements = 0;
  /// Prints a progress line on stderr while importing (for terminals).
  bool showProgress = false;
  /// Every weight is one initializer: a weight in another layout
  /// (Transpose, Reshape, Cast of an initializer) is the initializer read
  /// and changed by an op, not a second, precomputed weight. Gradients are
  /// then per initializer (what differentiating the .onnx gives).
  bool layoutsOnReads = false;
  /// One weight per parameter, as in the model that was exported (implies
  /// layoutsOnReads): an initializer that holds the same matrix as an
  /// earlier weight, or its transpose (a tied embedding and LM head that an
  /// exporter stored twice), is read as that weight (transposed). Training
  /// needs it: one parameter, one update.
  bool tieWeights = false;
};

/// A weight of the imported model: a braid.weight symbol and its bytes.
struct ImportedWeight {
  std::string name;
  RawTensor data;
};

/// The result of an import.
struct ImportedModel {
  OwningOpRef<ModuleOp> module;
  std::vector<ImportedWeight> weights;
};

/// Imports `model`, read from `modelPath` (external data is found relative to
/// it). Problems are emitted as MLIR diagnostics on `context`, each naming the
/// node, its op type, domain and opset; then returns failure.
FailureOr<ImportedModel> importModel(const onnx::ModelProto &model,
                                     llvm::StringRef modelPath,
                                     MLIRContext *context,
                                     const ImportOptions &options);

/// Registers the dialects an imported module uses.
void registerImportDialects(MLIRContext &context);

} // namespace onnx_import
} // namespace braid
} // namespace mlir

#endif // BRAID_FRONTEND_ONNX_ONNXIMPORTER_H
