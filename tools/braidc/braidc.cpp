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

#include "passes/Passes.h"

#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/ADT/StringSet.h"
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
llvm::cl::opt<bool> allowReplicated(
    "allow-replicated",
    llvm::cl::desc("Accept a --parallel axis that partitions nothing (every "
                   "rank computes the whole model) with a warning instead of "
                   "an error"),
    llvm::cl::init(false));
llvm::cl::opt<std::string> overlap(
    "overlap",
    llvm::cl::desc(
        "Overlap communication with computation after partitioning: "
        "comma-separated domino[=K] (row chunks; K=0 or none: chosen by the "
        "cost model), domino-columns[=K], seq[=K] (ISO sequence chunks), "
        "comet[=K] (COMET, after ep=N), balance (zigzag sequence order "
        "for causal cp), "
        "ring (Ring Attention) or attention-2d[=RxC] (ATTENTION2D) after "
        "cp=N, schedule, or auto (the cost model picks); every choice ends with "
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
  request.pipeline = pipeline;
  if (!parallel.empty()) {
    // tp=N, dp=N, ep=N, cp=N, sp (sequence parallel on tp) or sp=N (tp=N
    // with sequence parallelism), comma-separated.
    llvm::SmallVector<llvm::StringRef> items;
    llvm::StringRef(parallel).split(items, ',');
    std::string options;
    llvm::StringSet<> seen;
    for (llvm::StringRef item : items) {
      auto [kind, count] = item.trim().split('=');
      int64_t ranks = 0;
      bool known = llvm::is_contained({"tp", "dp", "ep", "cp", "sp"}, kind);
      bool counted = !count.empty() && !count.getAsInteger(10, ranks) &&
                     ranks >= 1;
      if (!known || (kind != "sp" && !counted) ||
          (kind == "sp" && !count.empty() && !counted) ||
          !seen.insert(kind).second) {
        llvm::errs() << "error: --parallel '" << parallel << "': '" << item
                     << "' is not one of tp=N, dp=N, ep=N, cp=N, sp, sp=N "
                        "(each at most once)\n";
        return 1;
      }
      if (kind == "sp") {
        options += " sp=true";
        if (counted)
          options += " tp=" + count.str();
      } else {
        options += " " + kind.str() + "=" + count.str();
      }
    }
    if (allowReplicated)
      options += " allow-replicated=true";
    std::string partition = "braid-split-fused-projections,braid-partition{" +
                            options.substr(1) + "}";
    request.pipeline =
        pipeline.empty() ? partition : partition + "," + std::string(pipeline);
  }
  if (!overlap.empty()) {
    std::string passes;
    std::string hw = " hw=" + hardware;
    llvm::SmallVector<llvm::StringRef> items;
    llvm::StringRef(overlap).split(items, ',');
    for (llvm::StringRef item : items) {
      auto [kind, count] = item.trim().split('=');
      if (kind == "balance" && count.empty()) {
        // Before partitioning: the zigzag order for the cp ranks.
        std::optional<int64_t> cp;
        llvm::SmallVector<llvm::StringRef> axes;
        llvm::StringRef(parallel).split(axes, ',');
        for (llvm::StringRef axis : axes) {
          auto [name, size] = axis.trim().split('=');
          int64_t ranks;
          if (name == "cp" && !size.getAsInteger(10, ranks))
            cp = ranks;
        }
        if (!cp) {
          llvm::errs() << "error: --overlap balance reorders the sequence "
                          "for context parallelism; give --parallel cp=N\n";
          return 1;
        }
        request.pipeline = "braid-balance-sequence{parts=" +
                           std::to_string(*cp) + "}," + request.pipeline;
        continue;
      }
      if (kind == "ring" && count.empty()) {
        passes += ",braid-ring-attention";
        continue;
      }
      if (kind == "attention-2d") {
        passes += ",braid-attention-2d{grid=" +
                  (count.empty() ? std::string("auto") : count.str()) + hw +
                  "}";
        continue;
      }
      int64_t chunks = 0;
      if (!count.empty() && (count.getAsInteger(10, chunks) || chunks < 0)) {
        llvm::errs() << "error: --overlap '" << overlap << "': '" << item
                     << "' needs a chunk count >= 0\n";
        return 1;
      }
      std::string k = " chunks=" + std::to_string(chunks);
      if (kind == "domino")
        passes += ",braid-domino{split=rows" + k + hw + "}";
      else if (kind == "domino-columns")
        passes += ",braid-domino{split=columns" + k + hw + "}";
      else if (kind == "comet")
        passes += ",braid-comet{combine-" + k.substr(1) + hw + "}";
      else if (kind == "seq")
        passes += ",braid-seq-pipeline{" + k.substr(1) + hw + "}";
      else if (kind == "auto" && count.empty())
        passes += ",braid-overlap-auto{" + hw.substr(1) + "}";
      else if (kind != "schedule" || !count.empty()) {
        llvm::errs() << "error: --overlap '" << overlap << "': '" << item
                     << "' is not one of domino[=K], domino-columns[=K], "
                        "seq[=K], comet[=K], balance, ring, attention-2d[=RxC], "
                        "schedule, "
                        "auto\n";
        return 1;
      }
    }
    passes += ",braid-schedule{" + hw.substr(1) +
              "},braid-verify-collectives";
    request.pipeline = request.pipeline.empty()
                           ? passes.substr(1)
                           : request.pipeline + passes;
  }
  request.emit = emit;
  request.showProgress = showProgress;
  return mlir::braid::runImport(request);
}
