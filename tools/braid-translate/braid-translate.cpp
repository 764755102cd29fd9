//===- braid-translate.cpp - translations into and out of braid -----------===//
//
//   braid-translate --import-onnx model.onnx -o model.mlir
//       writes model.mlir and its weights, model.safetensors, beside it.
//
//===----------------------------------------------------------------------===//

#include "tools/common/ImportDriver.h"
#include "tools/common/ToolOptions.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"

namespace {
enum class Translation { ImportOnnx, ExecToPlan };

llvm::cl::OptionCategory &category = mlir::braid::getBraidToolCategory();

llvm::cl::opt<Translation> translation(
    llvm::cl::desc("Translation:"),
    llvm::cl::values(
        clEnumValN(Translation::ImportOnnx, "import-onnx",
                   "ONNX model (binary or text) to braid IR"),
        clEnumValN(Translation::ExecToPlan, "exec-to-plan",
                   "exec dialect (after braid-to-exec) to a .bplan file")),
    llvm::cl::Required, llvm::cl::cat(category));

llvm::cl::opt<std::string> inputPath(llvm::cl::Positional,
                                     llvm::cl::desc("<input file>"),
                                     llvm::cl::Required,
                                     llvm::cl::cat(category));

llvm::cl::opt<std::string> outputPath("o", llvm::cl::desc("Output file"),
                                      llvm::cl::value_desc("file"),
                                      llvm::cl::init("-"),
                                      llvm::cl::cat(category));

llvm::cl::opt<std::string> weightsPath(
    "weights",
    llvm::cl::desc("Weights file to write (default: the output file with "
                   "the extension .safetensors)"),
    llvm::cl::value_desc("file"), llvm::cl::cat(category));

llvm::cl::list<std::string> inputShapes(
    "input-shape",
    llvm::cl::desc("Static shape of a graph input with dynamic dimensions, "
                   "as name=2x16 (repeatable)"),
    llvm::cl::value_desc("name=AxB"), llvm::cl::cat(category));

llvm::cl::opt<bool>
    raw("raw",
        llvm::cl::desc("Emit the imported IR as is, without "
                       "braid-import-pipeline (canonicalization, raising of "
                       "attention patterns)"),
        llvm::cl::init(false), llvm::cl::cat(category));

llvm::cl::opt<bool> showProgress(
    "progress",
    llvm::cl::desc("Show progress (default: when stderr is a terminal)"),
    llvm::cl::init(llvm::sys::Process::StandardErrIsDisplayed()),
    llvm::cl::cat(category));
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::braid::hideRegisteredOptions();
  mlir::braid::registerMlirToolOptions();
  mlir::braid::setBraidVersionPrinter("braid-translate");
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "Braid translations (ONNX import)\n");
  if (translation == Translation::ExecToPlan)
    return mlir::braid::runExecToPlan(inputPath, outputPath, weightsPath);
  mlir::braid::ImportRequest request;
  request.inputPath = inputPath;
  request.outputPath = outputPath;
  request.weightsPath = weightsPath;
  request.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  request.raw = raw;
  request.showProgress = showProgress;
  return mlir::braid::runImport(request);
}
