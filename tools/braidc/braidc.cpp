//===- braidc.cpp - the Braid compiler driver -----------------------------===//
//
//   braidc model.onnx --parallel tp=2 --overlap domino -o model.bplan
//
// Chains import, the named pipelines of passes/Pipelines.h (import cleanup,
// --parallel, --pipeline, --overlap), lowering and plan writing; -o's
// extension says what to write (.bplan: a plan, with model.safetensors
// beside it) unless --emit does.
//
//===----------------------------------------------------------------------===//

#include "tools/common/ImportDriver.h"
#include "tools/common/ToolOptions.h"

#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/StringSwitch.h"

#include <optional>
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

using namespace mlir;
using namespace mlir::braid;

namespace {
llvm::cl::OptionCategory &category = getBraidToolCategory();

llvm::cl::opt<std::string> inputPath(llvm::cl::Positional,
                                     llvm::cl::desc("<model.onnx>"),
                                     llvm::cl::Required,
                                     llvm::cl::cat(category));
llvm::cl::opt<std::string> outputPath(
    "o",
    llvm::cl::desc("Output file; its extension says what to write unless "
                   "--emit does: .bplan a plan, anything else (and - for "
                   "stdout, the default) braid IR"),
    llvm::cl::value_desc("file"), llvm::cl::init("-"), llvm::cl::cat(category));
llvm::cl::opt<EmitKind> emit(
    "emit",
    llvm::cl::desc("What to write (default: from -o's extension); must agree "
                   "with it: a plan into .bplan, IR into .mlir"),
    llvm::cl::values(
        clEnumValN(EmitKind::Braid, "braid", "braid dialect IR"),
        clEnumValN(EmitKind::Exec, "exec", "exec dialect (buffers, streams)"),
        clEnumValN(EmitKind::Plan, "plan", "a .bplan file for braid-run")),
    llvm::cl::cat(category));
llvm::cl::opt<std::string> weightsPath(
    "weights",
    llvm::cl::desc("Weights file (default: the output with .safetensors, when the output is a regular file; none for -o /dev/null)"),
    llvm::cl::value_desc("file"), llvm::cl::cat(category));
llvm::cl::list<std::string> inputShapes(
    "input-shape",
    llvm::cl::desc("Static shape of a dynamic graph input, as name=2x16"),
    llvm::cl::value_desc("name=AxB"), llvm::cl::cat(category));
llvm::cl::opt<std::string> parallel(
    "parallel",
    llvm::cl::desc(
        "Partition over ranks: tp=N (Megatron tensor parallel), sp or sp=N "
        "(sequence parallel on tp), dp=N (batch split), ep=N (experts), "
        "cp=N (sequence split), comma-separated for a multi-axis mesh, "
        "e.g. dp=2,tp=2; runs braid-parallel-pipeline before any --pipeline"),
    llvm::cl::value_desc("dp=2,tp=2"), llvm::cl::cat(category));
llvm::cl::opt<bool> allowReplicated(
    "allow-replicated",
    llvm::cl::desc("Accept a --parallel axis that partitions nothing (every "
                   "rank computes the whole model) with a warning instead of "
                   "an error"),
    llvm::cl::init(false), llvm::cl::cat(category));
llvm::cl::opt<std::string> overlap(
    "overlap",
    llvm::cl::desc(
        "Overlap communication with computation after partitioning: "
        "comma-separated domino[=K] (row chunks; K=auto, 0 or none: chosen "
        "by the cost model), domino-columns[=K], seq[=K] (ISO sequence "
        "chunks), comet[=K] (COMET, after ep=N), balance (zigzag sequence "
        "order for causal cp), ring (Ring Attention) or attention-2d[=RxC] "
        "(ATTENTION2D) after cp=N, buckets[=MiB] (gradient all-reduces "
        "fused in backward order, DDP; the default with --train and dp), "
        "schedule, auto (the cost model picks), or none; runs "
        "braid-overlap-pipeline, which ends with braid-schedule and "
        "braid-verify-collectives"),
    llvm::cl::value_desc("domino,schedule"), llvm::cl::cat(category));
llvm::cl::opt<std::string>
    hardware("hw",
             llvm::cl::desc("Hardware profile the overlap passes time "
                            "schedules on (runtime/profiles)"),
             llvm::cl::init("dgx-h100"), llvm::cl::value_desc("profile"),
             llvm::cl::cat(category));
llvm::cl::opt<bool> forceOverlap(
    "force-overlap",
    llvm::cl::desc("Apply --overlap's domino and seq chunking even where the "
                   "cost model (--hw) estimates the result slower than the "
                   "un-chunked program (by default that program is kept, "
                   "with a warning)"),
    llvm::cl::cat(category));
llvm::cl::opt<std::string>
    pipeline("pipeline",
             llvm::cl::desc("Passes to run after --parallel's partitioning and "
                            "before --overlap's passes and lowering, in "
                            "braid-opt's syntax, with or without the "
                            "builtin.module(...) anchor, e.g. "
                            "'braid-cost-report{per-op=false}'"),
             llvm::cl::value_desc("pipeline"), llvm::cl::cat(category));
llvm::cl::opt<bool>
    explain("explain",
            llvm::cl::desc("Print every choice the overlap passes' cost model "
                           "made (an `auto` count, --overlap auto): each "
                           "candidate with its estimated makespan or why it "
                           "does not apply, and the one chosen"),
            llvm::cl::cat(category));
llvm::cl::opt<bool>
    showProgress("progress",
                 llvm::cl::desc("Show progress (default: on a terminal)"),
                 llvm::cl::init(llvm::sys::Process::StandardErrIsDisplayed()),
                 llvm::cl::cat(category));

llvm::cl::opt<bool>
    train("train",
          llvm::cl::desc("Compile one training step: next-token cross "
                         "entropy of the logits, gradients, optimizer update "
                         "(docs/training.md)"),
          llvm::cl::cat(category));
llvm::cl::opt<std::string> precision(
    "precision",
    llvm::cl::desc("The element type the model computes in: f32 (default), "
                   "bf16 or f16 (f16 not with --train). Weights stay f32, "
                   "cast to it where read; results are returned as f32; "
                   "with --train the gradients, optimizer state and update "
                   "are f32 (mixed precision, docs/training.md)"),
    llvm::cl::init("f32"), llvm::cl::cat(category));
llvm::cl::opt<bool> tieWeights(
    "tie-weights",
    llvm::cl::desc("One weight per parameter: an initializer repeating "
                   "another (or its transpose) reads that one; implies "
                   "--weights-as-initializers (implied by --train)"),
    llvm::cl::cat(category));
llvm::cl::opt<bool> weightsAsInitializers(
    "weights-as-initializers",
    llvm::cl::desc("One weight per initializer: a Transpose/Reshape/Cast of "
                   "an initializer is an op on its read, not a precomputed "
                   "weight (gradients per initializer)"),
    llvm::cl::cat(category));
llvm::cl::opt<std::string>
    optimizer("optimizer", llvm::cl::desc("With --train: sgd or adamw"),
              llvm::cl::init("sgd"), llvm::cl::cat(category));
llvm::cl::opt<double> learningRate("lr",
                                   llvm::cl::desc("With --train: learning rate"),
                                   llvm::cl::init(1e-3),
                                   llvm::cl::cat(category));
llvm::cl::opt<double>
    momentum("momentum", llvm::cl::desc("With --train: SGD momentum"),
             llvm::cl::init(0.0), llvm::cl::cat(category));
llvm::cl::opt<std::string>
    betas("betas", llvm::cl::desc("With --train: AdamW betas B1,B2"),
          llvm::cl::init("0.9,0.999"), llvm::cl::cat(category));
llvm::cl::opt<double> adamEps("eps", llvm::cl::desc("With --train: AdamW eps"),
                              llvm::cl::init(1e-8), llvm::cl::cat(category));
llvm::cl::opt<double> weightDecay(
    "weight-decay",
    llvm::cl::desc("With --train: weight decay (default 0 for SGD, 0.01 for "
                   "AdamW, decoupled)"),
    llvm::cl::init(-1.0), llvm::cl::cat(category));
llvm::cl::opt<double>
    clipNorm("clip-norm",
             llvm::cl::desc("With --train: clip the gradients' global norm "
                            "(0: off)"),
             llvm::cl::init(0.0), llvm::cl::cat(category));

llvm::cl::opt<int64_t> zero(
    "zero",
    llvm::cl::desc("With --train and --parallel dp=N: ZeRO stage. 1: the "
                   "optimizer state is split over the dp ranks, gradients "
                   "are reduce-scattered into the update of this rank's "
                   "slice, parameters all-gathered; 2: the same plan "
                   "(gradients are kept only as shards already); 3 (FSDP): "
                   "parameters stored split too, gathered before their "
                   "forward and again before their backward use (0: off)"),
    llvm::cl::init(0), llvm::cl::cat(category));

llvm::cl::opt<std::string> algorithm(
    "algorithm",
    llvm::cl::desc("With --train and --parallel dp=N: a training algorithm "
                   "that is not synchronous SGD. cocod-sgd=K: K local steps "
                   "on each rank while the average of the parameters the "
                   "period started from is all-reduced in the background "
                   "(CoCoD-SGD; K a count or auto). acco[=M]: each call "
                   "one optimizer step of ACCO, its sharded update and "
                   "collectives beside two rounds of M micro-batches (M a "
                   "count, default 1, or auto); acco=M:N: room for N a "
                   "round, the ones past M run while the round's "
                   "communication is in flight (a run-time count, as the "
                   "authors' code). accumulate=N: synchronous, "
                   "ZeRO-1's split optimizer, N micro-batches per step "
                   "(ACCO's baseline)"),
    llvm::cl::cat(category));

llvm::cl::opt<std::string> memoryLimit(
    "memory-limit",
    llvm::cl::desc("The plan's peak memory per rank (its arena: weights, "
                   "optimizer state, inputs, outputs and intermediates), in "
                   "bytes or K, M, G with an optional iB (binary units): "
                   "braid-schedule issues gathers (ZeRO-3's parameter "
                   "prefetch) only as far ahead as fits, and fails naming "
                   "the bytes needed when nothing does"),
    llvm::cl::cat(category));

llvm::cl::opt<std::string> prefetch(
    "prefetch",
    llvm::cl::desc("How far ahead braid-schedule issues gathers (ZeRO-3's "
                   "parameter gathers): auto (no further than hiding them "
                   "needs, by the cost model) or all (as soon as their "
                   "shards exist)"),
    llvm::cl::init("auto"), llvm::cl::cat(category));

llvm::cl::opt<int> commStreams(
    "comm-streams",
    llvm::cl::desc("Communication streams braid-schedule uses: 1, or 2 "
                   "(gathers on a stream of their own when a step also has "
                   "other collectives, with their own communicators)"),
    llvm::cl::init(1), llvm::cl::cat(category));

llvm::cl::opt<std::string> recompute(
    "recompute",
    llvm::cl::desc("With --train: forward values the backward pass "
                   "recomputes instead of keeping (none, elementwise)"),
    llvm::cl::init("none"), llvm::cl::cat(category));

/// A positive byte count: digits, then nothing or K, M, G (binary units,
/// with or without iB).
std::optional<int64_t> parseByteSize(llvm::StringRef text) {
  text = text.trim();
  size_t digits = text.find_first_not_of("0123456789");
  uint64_t scale = llvm::StringSwitch<uint64_t>(text.drop_front(
                                                    std::min(digits, text.size())))
                       .Case("", 1)
                       .Cases({"K", "KiB"}, 1ull << 10)
                       .Cases({"M", "MiB"}, 1ull << 20)
                       .Cases({"G", "GiB"}, 1ull << 30)
                       .Default(0);
  uint64_t value = 0;
  if (text.take_front(digits).getAsInteger(10, value) || value == 0 ||
      scale == 0 || value > uint64_t(INT64_MAX) / scale)
    return std::nullopt;
  return static_cast<int64_t>(value * scale);
}

/// Prints `message` as braidc's error; returns failure.
LogicalResult printError(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return failure();
}

/// What to write: --emit, or what -o's extension says. Fails when they
/// disagree: a plan is binary, and IR text in a .bplan file is what
/// braid-run would call a corrupt plan.
FailureOr<EmitKind> chooseEmitKind() {
  llvm::StringRef extension = llvm::sys::path::extension(outputPath);
  if (emit.getNumOccurrences() == 0)
    return extension == ".bplan" ? EmitKind::Plan : EmitKind::Braid;
  if (extension == ".bplan" && emit != EmitKind::Plan)
    return printError(llvm::Twine("--emit=") +
                      (emit == EmitKind::Braid ? "braid" : "exec") +
                      " writes IR text, but -o '" + outputPath +
                      "' names a plan file (.bplan: --emit=plan)");
  if (extension == ".mlir" && emit == EmitKind::Plan)
    return printError("--emit=plan writes a binary plan, but -o '" +
                      outputPath +
                      "' names an IR file (.mlir: --emit=braid or exec)");
  return emit.getValue();
}

/// The passes between import and lowering: braid-parallel-pipeline,
/// --pipeline, braid-overlap-pipeline.
LogicalResult addPasses(OpPassManager &pm) {
  DriverPipelineOptions options;
  options.parallel = parallel;
  options.precision = precision;
  options.overlap = overlap;
  options.hw = hardware;
  options.forceOverlap = forceOverlap;
  options.pipeline = pipeline;
  options.allowReplicated = allowReplicated;
  if (memoryLimit.getNumOccurrences()) {
    std::optional<int64_t> bytes = parseByteSize(memoryLimit);
    if (!bytes)
      return printError("--memory-limit needs a positive size in bytes, "
                        "e.g. 1048576, 64M or 2GiB, not '" + memoryLimit +
                        "'");
    options.memoryLimit = *bytes;
  }
  if (prefetch != "auto" && prefetch != "all")
    return printError("--prefetch takes auto or all, not '" + prefetch + "'");
  options.prefetch = prefetch;
  if (commStreams != 1 && commStreams != 2)
    return printError("--comm-streams takes 1 or 2, not " +
                      std::to_string(commStreams));
  options.gatherStream = commStreams == 2 ? "comm_gather" : "";
  for (const auto *option :
       std::initializer_list<const llvm::cl::Option *>{
           &optimizer, &learningRate, &momentum, &betas, &adamEps,
           &weightDecay, &clipNorm, &recompute, &zero, &algorithm})
    if (option->getNumOccurrences() && !train)
      return printError("--" + option->ArgStr + " needs --train");
  options.train.enabled = train;
  options.train.optimizer = optimizer;
  options.train.lr = learningRate;
  options.train.momentum = momentum;
  options.train.eps = adamEps;
  options.train.weightDecay = weightDecay;
  options.train.clipNorm = clipNorm;
  options.train.recompute = recompute;
  options.train.zero = zero;
  options.train.algorithm = algorithm;
  llvm::StringRef first, second;
  std::tie(first, second) = llvm::StringRef(betas).split(',');
  if (first.trim().getAsDouble(options.train.beta1) ||
      second.trim().getAsDouble(options.train.beta2))
    return printError("--betas needs two numbers B1,B2, not '" + betas + "'");
  return buildDriverPipeline(pm, options, printError);
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerBraidPasses();
  registerBraidPipelines();
  hideRegisteredOptions();
  registerMlirToolOptions();
  setBraidVersionPrinter("braidc");
  llvm::cl::ParseCommandLineOptions(argc, argv, "Braid compiler driver\n");
  FailureOr<EmitKind> emitKind = chooseEmitKind();
  if (failed(emitKind))
    return 1;
  ImportRequest request;
  request.inputPath = inputPath;
  request.outputPath = outputPath;
  request.weightsPath = weightsPath;
  request.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  request.addPasses = addPasses;
  request.emit = *emitKind;
  request.showProgress = showProgress;
  request.tieWeights = train || tieWeights;
  request.raiseNorms = !train;
  request.layoutsOnReads = weightsAsInitializers;
  request.explain = explain;
  return runImport(request);
}
