//===- ImportDriver.cpp - ONNX import shared by braidc and braid-translate ===//

#include "tools/common/ImportDriver.h"

#include "dialects/braid/BraidDialect.h"
#include "dialects/braid/Locations.h"
#include "frontend/onnx/Safetensors.h"
#include "lowering/ExecToPlan.h"
#include "lowering/Passes.h"
#include "lowering/Pipelines.h"
#include "passes/Explain.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::onnx_import;

/// Parses `name=2x16` specs; false with a message on error.
static bool parseInputShapes(ArrayRef<std::string> specs,
                             ImportOptions &options) {
  for (const std::string &spec : specs) {
    auto [name, dims] = StringRef(spec).rsplit('=');
    if (name.empty() || dims.empty() || name == spec) {
      llvm::errs() << "error: --input-shape '" << spec
                   << "' is not name=AxB... (e.g. input_ids=2x16)\n";
      return false;
    }
    SmallVector<int64_t, 4> shape;
    if (dims != "scalar") {
      SmallVector<StringRef> parts;
      dims.split(parts, 'x');
      for (StringRef part : parts) {
        int64_t size;
        if (part.getAsInteger(10, size) || size < 0) {
          llvm::errs() << "error: --input-shape '" << spec << "': '" << part
                       << "' is not a size\n";
          return false;
        }
        shape.push_back(size);
      }
    }
    options.inputShapes[name] = shape;
  }
  return true;
}

int mlir::braid::runImport(const ImportRequest &request) {
  if (request.emit == EmitKind::Plan && request.outputPath == "-") {
    llvm::errs() << "error: a plan is binary; name its file with -o\n";
    return 1;
  }
  ImportOptions options;
  options.showProgress = request.showProgress;
  options.tieWeights = request.tieWeights;
  options.layoutsOnReads = request.layoutsOnReads;
  if (!parseInputShapes(request.inputShapes, options))
    return 1;

  // The context reads --mlir-* context flags (threading, op on diagnostic);
  // without --mlir-print-op-on-diagnostic, a diagnostic is its one line.
  MLIRContext context;
  llvm::cl::Option *printOp =
      llvm::cl::getRegisteredOptions().lookup("mlir-print-op-on-diagnostic");
  if (!printOp || !printOp->getNumOccurrences())
    context.printOpOnDiagnostic(false);
  registerImportDialects(context);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // Diagnostics at imported ops name their ONNX node (Locations.h).
  OnnxDiagnosticHandler onnxDiagnostics(&context);

  // --mlir-timing: reading and importing the model, each pass, the output.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();
  TimingScope importTiming = timing.nest("Import ONNX");
  llvm::Expected<std::unique_ptr<onnx::ModelProto>> model =
      loadModel(request.inputPath);
  if (!model) {
    llvm::errs() << "error: " << llvm::toString(model.takeError()) << "\n";
    return 1;
  }
  FailureOr<ImportedModel> imported =
      importModel(**model, request.inputPath, &context, options);
  if (failed(imported))
    return 1;
  importTiming.stop();

  PassManager pm(&context);
  // --mlir-print-ir-after-all, --mlir-pass-statistics, ...
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  pm.enableTiming(timing);
  if (!request.raw)
    buildImportPipeline(pm, request.raiseNorms);
  if (request.addPasses && failed(request.addPasses(pm)))
    return 1;
  if (request.emit != EmitKind::Braid)
    buildLowerPipeline(pm);
  if (failed(pm.run(*imported->module)))
    return 1;
  if (request.explain) {
    std::string choices = formatChoices(*imported->module);
    llvm::errs() << (choices.empty()
                         ? "braidc: no choice to explain: no overlap pass "
                           "decided anything by its cost model (give a "
                           "count as auto, or --overlap auto)\n"
                         : choices);
  }

  TimingScope outputTiming = timing.nest("Output");
  std::string weights = request.weightsPath;
  // The weights go beside the output only when it is a regular file: -o
  // /dev/null (or a pipe) discards the output, and /dev/null.safetensors
  // must not appear.
  llvm::sys::fs::file_status outputStatus;
  bool outputIsSpecial =
      request.outputPath != "-" &&
      !llvm::sys::fs::status(request.outputPath, outputStatus) &&
      llvm::sys::fs::exists(outputStatus) &&
      outputStatus.type() != llvm::sys::fs::file_type::regular_file;
  if (weights.empty() && !imported->weights.empty() && !outputIsSpecial) {
    if (request.outputPath == "-") {
      llvm::errs() << "error: the model has " << imported->weights.size()
                   << " weights; name their file with --weights or the "
                      "output with -o\n";
      return 1;
    }
    SmallString<256> path(request.outputPath);
    llvm::sys::path::replace_extension(path, "safetensors");
    weights = path.str().str();
  }

  if (request.emit == EmitKind::Plan) {
    if (!weights.empty())
      if (llvm::Error err = writeSafetensors(weights, imported->weights)) {
        llvm::errs() << "error: " << llvm::toString(std::move(err)) << "\n";
        return 1;
      }
    return failed(writePlanFile(*imported->module, request.outputPath,
                                llvm::sys::path::filename(weights).str()))
               ? 1
               : 0;
  }
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(request.outputPath, &error);
  if (!output) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  if (!weights.empty())
    if (llvm::Error err = writeSafetensors(weights, imported->weights)) {
      llvm::errs() << "error: " << llvm::toString(std::move(err)) << "\n";
      return 1;
    }
  imported->module->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}

int mlir::braid::runExecToPlan(const std::string &inputPath,
                               const std::string &outputPath,
                               const std::string &weightsFile) {
  MLIRContext context;
  context.loadDialect<exec::ExecDialect, BraidDialect, func::FuncDialect,
                      arith::ArithDialect>();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputPath, &context);
  if (!module)
    return 1;
  if (outputPath == "-") {
    llvm::errs() << "error: a plan is binary; name its file with -o\n";
    return 1;
  }
  return failed(writePlanFile(*module, outputPath, weightsFile)) ? 1 : 0;
}
