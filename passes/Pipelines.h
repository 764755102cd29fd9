//===- Pipelines.h - what braidc runs, as named pass pipelines --*- C++ -*-===//
//
// braidc builds its pass manager from these functions, and braid-opt and the
// pass plugin of mlir-opt-22 run the same functions by name:
//
//   braid-import-pipeline
//       canonicalize, braid-raise-attention, canonicalize, cse (after import)
//   braid-parallel-pipeline{tp=2 sp=true dp=2 ep=2 cp=2 balance=true
//                           allow-replicated=false}
//       [braid-balance-sequence,] braid-split-fused-projections,
//       braid-partition (braidc --parallel)
//   braid-overlap-pipeline{overlap=domino=2,seq=auto hw=dgx-h100}
//       the overlap passes in the order given, then braid-schedule and
//       braid-verify-collectives (braidc --overlap)
//
// braid-lower-pipeline (braid-to-exec) is in lowering/Pipelines.h.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_PASSES_PIPELINES_H
#define BRAID_PASSES_PIPELINES_H

#include "passes/AutoCount.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <optional>
#include <string>

namespace mlir {
namespace braid {

/// Options of braid-parallel-pipeline: the mesh of braid-partition's presets.
struct ParallelPipelineOptions
    : public PassPipelineOptions<ParallelPipelineOptions> {
  Option<int64_t> tp{*this, "tp",
                     llvm::cl::desc("Ranks along the tensor-parallel axis "
                                    "(Megatron)"),
                     llvm::cl::init(0)};
  Option<bool> sp{*this, "sp",
                  llvm::cl::desc("Sequence parallelism on the tp axis"),
                  llvm::cl::init(false)};
  Option<int64_t> dp{*this, "dp",
                     llvm::cl::desc("Ranks along the data-parallel axis "
                                    "(batch split)"),
                     llvm::cl::init(0)};
  Option<int64_t> ep{*this, "ep",
                     llvm::cl::desc("Ranks along the expert-parallel axis"),
                     llvm::cl::init(0)};
  Option<int64_t> zero{*this, "zero",
                       llvm::cl::desc("ZeRO stage on the dp axis of a "
                                      "training step (braid-partition)"),
                       llvm::cl::init(0)};
  Option<int64_t> cp{*this, "cp",
                     llvm::cl::desc("Ranks along the context-parallel axis "
                                    "(sequence split)"),
                     llvm::cl::init(0)};
  Option<bool> balance{
      *this, "balance",
      llvm::cl::desc("Zigzag the sequence over the cp ranks before "
                     "partitioning (braid-balance-sequence), so that causal "
                     "attention costs every rank about the same"),
      llvm::cl::init(false)};
  Option<bool> allowReplicated{
      *this, "allow-replicated",
      llvm::cl::desc("Accept an axis that partitions nothing (every rank "
                     "computes the whole program) with a warning"),
      llvm::cl::init(false)};
};

/// One step of braid-overlap-pipeline's `overlap` list, spelled as braidc's
/// --overlap spells it: `domino[=K|auto]`, `domino-columns[=K|auto]`,
/// `seq[=K|auto]`, `comet[=K|auto]` (no count: auto), `ring`,
/// `attention-2d[=RxC|auto]`, `schedule` (nothing before braid-schedule) or
/// `auto` (braid-overlap-auto).
struct OverlapStep {
  enum class Kind {
    Domino,
    DominoColumns,
    DominoBoth,
    Seq,
    SeqAt,
    Comet,
    Ring,
    Attention2D,
    Schedule,
    Auto,
    Buckets
  };
  Kind kind = Kind::Schedule;
  /// The chunks of Domino, ISO and COMET; the bucket size in MiB.
  AutoCount chunks;
  /// `RxC` or `auto`, for ATTENTION2D.
  std::string grid = "auto";
  /// ISO's split points (`seq-at=P[:P...]`), sequence positions.
  SmallVector<int64_t> splitPoints;

  /// Parses one step; nothing when `text` is not one.
  static std::optional<OverlapStep> parse(llvm::StringRef text);
};

/// Prints a step as OverlapStep::parse reads it.
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const OverlapStep &step);

} // namespace braid
} // namespace mlir

namespace llvm {
namespace cl {
/// Parses a step of braid-overlap-pipeline's `overlap` list.
template <>
class parser<mlir::braid::OverlapStep>
    : public basic_parser<mlir::braid::OverlapStep> {
public:
  parser(Option &option) : basic_parser(option) {}

  /// Returns true (after reporting it) when `arg` is not a step.
  bool parse(Option &option, StringRef argName, StringRef arg,
             mlir::braid::OverlapStep &value);

  StringRef getValueName() const override { return "step"; }

  void anchor() override;
};
} // namespace cl
} // namespace llvm

namespace mlir {
namespace braid {

/// Options of braid-overlap-pipeline.
struct OverlapPipelineOptions
    : public PassPipelineOptions<OverlapPipelineOptions> {
  ListOption<OverlapStep> steps{
      *this, "overlap",
      llvm::cl::desc("Overlap passes in order: domino[=K|auto], "
                     "domino-columns[=K|auto], domino-both[=K|auto], "
                     "seq[=K|auto], seq-at=P[:P...], comet[=K|auto], "
                     "ring, attention-2d[=RxC|auto], schedule or auto (the "
                     "cost model picks)")};
  Option<std::string> hw{*this, "hw",
                         llvm::cl::desc("Hardware profile (runtime/profiles) "
                                        "every pass and braid-schedule time "
                                        "with"),
                         llvm::cl::init("dgx-h100")};
  Option<bool> force{*this, "force",
                     llvm::cl::desc("Apply domino and seq even where the "
                                    "cost model estimates the result slower "
                                    "than the input"),
                     llvm::cl::init(false)};
  Option<int64_t> memoryLimit{
      *this, "memory-limit",
      llvm::cl::desc("braid-schedule's memory-limit: the plan's peak bytes "
                     "per rank (0: no limit)"),
      llvm::cl::init(0)};
  Option<std::string> prefetch{
      *this, "prefetch",
      llvm::cl::desc("braid-schedule's prefetch: auto or all"),
      llvm::cl::init("auto")};
  Option<std::string> gatherStream{
      *this, "gather-stream",
      llvm::cl::desc("braid-schedule's gather-stream (empty: one "
                     "communication stream)"),
      llvm::cl::init("")};
};

/// Adds braid-import-pipeline: the cleanup and raising of imported IR.
/// Without `raiseNorms` the norms stay decomposed, for a training driver
/// that raises them after partitioning (braid-raise-fused-ops).
void buildImportPipeline(OpPassManager &pm, bool raiseNorms = true);

/// Adds braid-parallel-pipeline. Fails, with a message to `emitError`, for
/// options that contradict each other.
LogicalResult buildParallelPipeline(
    OpPassManager &pm, const ParallelPipelineOptions &options,
    llvm::function_ref<LogicalResult(const llvm::Twine &)> emitError);

/// Adds braid-overlap-pipeline.
void buildOverlapPipeline(OpPassManager &pm,
                          const OverlapPipelineOptions &options);

/// Registers the pipelines above by name (and the upstream passes they use).
void registerBraidPipelines();

/// braidc's --parallel, --overlap, --hw and --pipeline, as given on its
/// command line.
/// braidc --train: the program becomes one training step (PyTorch's
/// defaults for the optimizers).
struct TrainOptions {
  bool enabled = false;
  std::string optimizer = "sgd";
  double lr = 1e-3;
  double momentum = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  /// Negative: the optimizer's default (0 for SGD, 0.01 for AdamW).
  double weightDecay = -1.0;
  double clipNorm = 0.0;
  /// ZeRO stage on the dp axis (0: none; 1: optimizer state sharded).
  int64_t zero = 0;
  /// braid-autodiff's recompute option: "none" or "elementwise".
  std::string recompute = "none";
  /// A training algorithm other than synchronous data parallelism:
  /// "cocod-sgd=K" (K local steps per averaging, or auto); empty: none.
  std::string algorithm;
};

struct DriverPipelineOptions {
  /// Training: next-token loss, braid-autodiff, braid-training-step first.
  TrainOptions train;
  /// The element type computed in: f32 (the model's), bf16 or f16
  /// (braid-mixed-precision; weights stay f32).
  std::string precision = "f32";
  /// Comma-separated tp=N, dp=N, ep=N, cp=N, sp or sp=N.
  std::string parallel;
  /// Comma-separated overlap steps (OverlapStep) and `balance`.
  std::string overlap;
  std::string hw = "dgx-h100";
  /// Apply domino and seq even where the cost model estimates them slower.
  bool forceOverlap = false;
  /// Passes to run after partitioning and before the overlap passes, with or
  /// without the `builtin.module(...)` anchor.
  std::string pipeline;
  bool allowReplicated = false;
  /// braid-schedule's memory-limit (bytes; 0: none) and prefetch.
  int64_t memoryLimit = 0;
  std::string prefetch = "auto";
  /// braid-schedule's gather-stream (empty: one communication stream).
  std::string gatherStream;
};

/// Adds what braidc runs between import and lowering for `options`:
/// braid-parallel-pipeline, the extra pipeline, braid-overlap-pipeline.
/// Errors name the option and the item that is wrong.
LogicalResult
buildDriverPipeline(OpPassManager &pm, const DriverPipelineOptions &options,
                    llvm::function_ref<LogicalResult(const llvm::Twine &)>
                        emitError);

} // namespace braid
} // namespace mlir

#endif // BRAID_PASSES_PIPELINES_H
