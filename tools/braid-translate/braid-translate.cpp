//===- braid-translate.cpp - translations into and out of braid -----------===//
//
//   braid-translate --import-onnx model.onnx -o model.mlir
//       writes model.mlir and its weights, model.safetensors, beside it.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImporter.h"
#include "frontend/onnx/Safetensors.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Diagnostics.h"
#include "passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::braid::onnx_import;

namespace {
enum class Translation { ImportOnnx };

llvm::cl::opt<Translation> translation(
    llvm::cl::desc("Translation:"),
    llvm::cl::values(clEnumValN(Translation::ImportOnnx, "import-onnx",
                                "ONNX model (binary or text) to braid IR")),
    llvm::cl::Required);

llvm::cl::opt<std::string> inputPath(llvm::cl::Positional,
                                     llvm::cl::desc("<input file>"),
                                     llvm::cl::Required);

llvm::cl::opt<std::string> outputPath("o", llvm::cl::desc("Output file"),
                                      llvm::cl::value_desc("file"),
                                      llvm::cl::init("-"));

llvm::cl::opt<std::string> weightsPath(
    "weights",
    llvm::cl::desc("Weights file to write (default: the output file with "
                   "the extension .safetensors)"),
    llvm::cl::value_desc("file"));

llvm::cl::list<std::string> inputShapes(
    "input-shape",
    llvm::cl::desc("Static shape of a graph input with dynamic dimensions, "
                   "as name=2x16 (repeatable)"),
    llvm::cl::value_desc("name=AxB"));

llvm::cl::opt<bool> raw(
    "raw",
    llvm::cl::desc("Emit the imported IR as is: no canonicalization and no "
                   "raising of attention and MoE patterns"),
    llvm::cl::init(false));

llvm::cl::opt<bool> showProgress(
    "progress",
    llvm::cl::desc("Show progress (default: when stderr is a terminal)"),
    llvm::cl::init(llvm::sys::Process::StandardErrIsDisplayed()));
} // namespace

/// Parses `name=2x16` into the options; false with a message on error.
static bool parseInputShapes(ImportOptions &options) {
  for (const std::string &spec : inputShapes) {
    auto [name, dims] = llvm::StringRef(spec).rsplit('=');
    if (name.empty() || dims.empty()) {
      llvm::errs() << "error: --input-shape '" << spec
                   << "' is not name=AxB...\n";
      return false;
    }
    llvm::SmallVector<int64_t, 4> shape;
    llvm::SmallVector<llvm::StringRef> parts;
    dims.split(parts, 'x');
    for (llvm::StringRef part : parts) {
      int64_t size;
      if (part.getAsInteger(10, size) || size < 0) {
        llvm::errs() << "error: --input-shape '" << spec << "': '" << part
                     << "' is not a size\n";
        return false;
      }
      shape.push_back(size);
    }
    if (dims == "scalar")
      shape.clear();
    options.inputShapes[name] = shape;
  }
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "Braid translations (ONNX import)\n");
  ImportOptions options;
  options.showProgress = showProgress;
  if (!parseInputShapes(options))
    return 1;

  MLIRContext context;
  registerImportDialects(context);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  llvm::Expected<std::unique_ptr<onnx::ModelProto>> model =
      loadModel(inputPath);
  if (!model) {
    llvm::errs() << "error: " << llvm::toString(model.takeError()) << "\n";
    return 1;
  }
  FailureOr<ImportedModel> imported =
      importModel(**model, inputPath, &context, options);
  if (failed(imported))
    return 1;
  if (!raw) {
    PassManager pm(&context);
    pm.addPass(createCanonicalizerPass());
    pm.addPass(braid::createBraidRaiseAttention());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    if (failed(pm.run(*imported->module)))
      return 1;
  }

  std::string weights = weightsPath;
  if (weights.empty() && !imported->weights.empty()) {
    if (outputPath == "-") {
      llvm::errs() << "error: the model has " << imported->weights.size()
                   << " weights; name their file with --weights or the "
                      "output with -o\n";
      return 1;
    }
    llvm::SmallString<256> path(outputPath);
    llvm::sys::path::replace_extension(path, "safetensors");
    weights = path.str().str();
  }

  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputPath, &error);
  if (!output) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  if (!weights.empty()) {
    if (llvm::Error err = writeSafetensors(weights, imported->weights)) {
      llvm::errs() << "error: " << llvm::toString(std::move(err)) << "\n";
      return 1;
    }
  }
  imported->module->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}
