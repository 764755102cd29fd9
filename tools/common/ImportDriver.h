//===- ImportDriver.h - ONNX import shared by braidc and braid-translate --===//

#ifndef BRAID_TOOLS_COMMON_IMPORTDRIVER_H
#define BRAID_TOOLS_COMMON_IMPORTDRIVER_H

#include "frontend/onnx/OnnxImporter.h"

#include "mlir/Pass/PassManager.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir {
namespace braid {

/// What the driver produces.
enum class EmitKind { Braid, Exec, Plan };

/// What to import and where to write it.
struct ImportRequest {
  EmitKind emit = EmitKind::Braid;
  std::string inputPath;
  /// "-" for stdout.
  std::string outputPath = "-";
  /// Empty: the output path with the extension .safetensors.
  std::string weightsPath;
  /// `name=2x16` specs for graph inputs with dynamic dimensions.
  std::vector<std::string> inputShapes;
  /// Skip braid-import-pipeline (canonicalization and raising).
  bool raw = false;
  /// Raise norms on import (braidc --train leaves them to its driver,
  /// which raises them after partitioning).
  bool raiseNorms = true;
  /// Adds the passes that run between braid-import-pipeline and lowering;
  /// fails after printing why. None: no passes.
  std::function<LogicalResult(OpPassManager &)> addPasses;
  bool showProgress = false;
  /// ImportOptions::tieWeights (braidc --train, --tie-weights) and
  /// layoutsOnReads (--weights-as-initializers).
  bool tieWeights = false;
  bool layoutsOnReads = false;
  /// Print the overlap passes' decisions (passes/Explain.h) on stderr.
  bool explain = false;
};

/// Imports an ONNX model to braid IR, runs braid-import-pipeline (unless
/// raw), the passes of `addPasses` and, for exec and plans,
/// braid-lower-pipeline, and writes the result and its weights. Prints one
/// clear message per problem to stderr; returns the exit code. Nothing is
/// written unless everything succeeded.
int runImport(const ImportRequest &request);

/// Translates a module holding one exec.plan to a plan file; returns the
/// exit code.
int runExecToPlan(const std::string &inputPath, const std::string &outputPath,
                  const std::string &weightsFile);

} // namespace braid
} // namespace mlir

#endif // BRAID_TOOLS_COMMON_IMPORTDRIVER_H
