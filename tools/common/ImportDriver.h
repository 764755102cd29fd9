//===- ImportDriver.h - ONNX import shared by braidc and braid-translate --===//

#ifndef BRAID_TOOLS_COMMON_IMPORTDRIVER_H
#define BRAID_TOOLS_COMMON_IMPORTDRIVER_H

#include "frontend/onnx/OnnxImporter.h"

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
  /// Skip canonicalization and raising.
  bool raw = false;
  /// A textual pass pipeline to run after import (and raising), or empty.
  std::string pipeline;
  bool showProgress = false;
};

/// Imports an ONNX model to braid IR, canonicalizes it and raises attention
/// patterns (unless raw), runs the extra pipeline, and writes the IR and its
/// weights. Prints one clear message per problem to stderr; returns the exit
/// code. Nothing is written unless everything succeeded.
int runImport(const ImportRequest &request);

/// Translates a module holding one exec.plan to a plan file; returns the
/// exit code.
int runExecToPlan(const std::string &inputPath, const std::string &outputPath,
                  const std::string &weightsFile);

} // namespace braid
} // namespace mlir

#endif // BRAID_TOOLS_COMMON_IMPORTDRIVER_H
