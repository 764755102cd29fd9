//===- braidc.cpp - the Braid compiler driver -----------------------------===//
//
//   braidc model.onnx -o model.bplan --emit=plan [--pipeline='...']
//
// Chains import, raising, passes, lowering (--emit=exec) and plan writing
// (--emit=plan, with model.safetensors beside it), with tensor parallelism
// from --parallel tp=N. Overlap (--overlap) joins as it lands.
//
//===----------------------------------------------------------------------===//

#include "tools/common/ImportDriver.h"
#include "tools/common/ParallelPipeline.h"

#include "passes/Passes.h"

#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"

namespace {
using mlir::braid::EmitKind;

llvm::cl::opt<std::string> inputPath(llvm::cl::Positional,
                                     llvm::cl::desc("<model.onnx>"),
                                     llvm::cl::Required);
llvm::cl::opt<std::string> outputPath("o", llvm::cl::desc("Output file"),
                                      llvm::cl::value_desc("file"),
                                      llvm::cl::init("-"));
llvm::cl::opt<EmitKind> emit(
    "emit", llvm::cl::desc("What to produce"),
    llvm::cl::values(
        clEnumValN(EmitKind::Braid, "braid", "braid dialect IR"),
        clEnumValN(EmitKind::Exec, "exec", "exec dialect (buffers, streams)"),
        clEnumValN(EmitKind::Plan, "plan", "a .bplan file for braid-run")),
    llvm::cl::init(EmitKind::Braid));
llvm::cl::opt<std::string> weightsPath(
    "weights",
    llvm::cl::desc("Weights file (default: the output with .safetensors)"),
    llvm::cl::value_desc("file"));
llvm::cl::list<std::string> inputShapes(
    "input-shape",
    llvm::cl::desc("Static shape of a dynamic graph input, as name=2x16"),
    llvm::cl::value_desc("name=AxB"));
llvm::cl::opt<std::string> parallel(
    "parallel",
    llvm::cl::desc(
        "Partition over ranks: tp=N (Megatron tensor parallel), sp or sp=N "
        "(sequence parallel on tp), dp=N (batch split), ep=N (experts), "
        "cp=N (sequence split), comma-separated for a multi-axis mesh, "
        "e.g. dp=2,tp=2; runs braid-partition before any --pipeline"),
    llvm::cl::value_desc("dp=2,tp=2"));
llvm::cl::opt<std::string> overlap(
    "overlap",
    llvm::cl::desc(
        "Overlap communication with computation after partitioning: "
        "comma-separated domino[=K] (row chunks; K=0 or none: chosen by the "
        "cost model), domino-columns[=K], domino-both[=K] (rows, then "
        "columns), seq[=K] (ISO sequence chunks), seq-at=P[:P...] (ISO "
        "chunks starting at these positions), "
        "comet[=K] (COMET, after ep=N), balance (zigzag sequence order "
        "for causal cp), "
        "ring (Ring Attention) or attention-2d[=RxC] (ATTENTION2D) after "
        "cp=N, schedule, or auto (the cost model picks); every choice ends "
        "with "
        "braid-schedule and braid-verify-collectives"),
    llvm::cl::value_desc("domino,schedule"));
llvm::cl::opt<std::string>
    hardware("hw",
             llvm::cl::desc("Hardware profile the overlap passes time "
                            "schedules on (runtime/profiles)"),
             llvm::cl::init("dgx-h100"), llvm::cl::value_desc("profile"));
llvm::cl::opt<std::string>
    pipeline("pipeline",
             llvm::cl::desc("Pass pipeline to run after import, in braid-opt's "
                            "syntax, e.g. 'builtin.module(braid-cost-report)'"),
             llvm::cl::value_desc("pipeline"));
llvm::cl::opt<bool>
    showProgress("progress",
                 llvm::cl::desc("Show progress (default: on a terminal)"),
                 llvm::cl::init(llvm::sys::Process::StandardErrIsDisplayed()));
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::braid::registerBraidPasses();
  llvm::cl::ParseCommandLineOptions(argc, argv, "Braid compiler driver\n");
  mlir::braid::ImportRequest request;
  request.inputPath = inputPath;
  request.outputPath = outputPath;
  request.weightsPath = weightsPath;
  request.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  mlir::braid::ParallelOptions parallelOptions;
  parallelOptions.parallel = parallel;
  parallelOptions.overlap = overlap;
  parallelOptions.hardware = hardware;
  parallelOptions.pipeline = pipeline;
  llvm::Expected<std::string> passes =
      mlir::braid::buildParallelPipeline(parallelOptions);
  if (!passes) {
    llvm::errs() << "error: " << llvm::toString(passes.takeError()) << "\n";
    return 1;
  }
  request.pipeline = *passes;
  request.emit = emit;
  request.showProgress = showProgress;
  return mlir::braid::runImport(request);
}
