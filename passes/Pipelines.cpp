//===- Pipelines.cpp - what braidc runs, as named pass pipelines ----------===//

#include "passes/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::braid;

namespace {
/// How each step kind is spelled, and whether it takes a chunk count.
struct StepSpelling {
  OverlapStep::Kind kind;
  llvm::StringLiteral name;
  bool counted;
};
constexpr StepSpelling kStepSpellings[] = {
    {OverlapStep::Kind::Domino, "domino", true},
    {OverlapStep::Kind::DominoColumns, "domino-columns", true},
    {OverlapStep::Kind::DominoBoth, "domino-both", true},
    {OverlapStep::Kind::Seq, "seq", true},
    {OverlapStep::Kind::SeqAt, "seq-at", false},
    {OverlapStep::Kind::Comet, "comet", true},
    {OverlapStep::Kind::Ring, "ring", false},
    {OverlapStep::Kind::Attention2D, "attention-2d", false},
    {OverlapStep::Kind::Schedule, "schedule", false},
    {OverlapStep::Kind::Auto, "auto", false},
    {OverlapStep::Kind::Buckets, "buckets", true},
};

const StepSpelling &spellingOf(OverlapStep::Kind kind) {
  for (const StepSpelling &spelling : kStepSpellings)
    if (spelling.kind == kind)
      return spelling;
  llvm_unreachable("every step kind has a spelling");
}
} // namespace

std::optional<OverlapStep> OverlapStep::parse(llvm::StringRef text) {
  auto [name, value] = text.trim().split('=');
  bool hasValue = text.contains('=');
  for (const StepSpelling &spelling : kStepSpellings) {
    if (spelling.name != name)
      continue;
    OverlapStep step;
    step.kind = spelling.kind;
    if (!hasValue)
      return step;
    if (spelling.counted) {
      std::optional<AutoCount> chunks = AutoCount::parse(value);
      if (!chunks)
        return std::nullopt;
      step.chunks = *chunks;
      return step;
    }
    if (spelling.kind == Kind::SeqAt) {
      // Positions P[:P...], each positive.
      llvm::SmallVector<llvm::StringRef> points;
      value.split(points, ':');
      for (llvm::StringRef point : points) {
        int64_t p;
        if (point.getAsInteger(10, p) || p < 1)
          return std::nullopt;
        step.splitPoints.push_back(p);
      }
      return step;
    }
    if (spelling.kind != Kind::Attention2D)
      return std::nullopt;
    // RxC with positive R and C; whether R * C is the axis size is the
    // pass's to check.
    auto [rows, columns] = value.split('x');
    int64_t r, c;
    if (value != "auto" && (rows.getAsInteger(10, r) || r < 1 ||
                            columns.getAsInteger(10, c) || c < 1))
      return std::nullopt;
    step.grid = value.str();
    return step;
  }
  return std::nullopt;
}

llvm::raw_ostream &mlir::braid::operator<<(llvm::raw_ostream &os,
                                           const OverlapStep &step) {
  const StepSpelling &spelling = spellingOf(step.kind);
  os << spelling.name;
  if (spelling.counted)
    os << "=" << step.chunks;
  if (step.kind == OverlapStep::Kind::Attention2D)
    os << "=" << step.grid;
  if (step.kind == OverlapStep::Kind::SeqAt) {
    os << "=";
    llvm::interleave(step.splitPoints, os, ":");
  }
  return os;
}

bool llvm::cl::parser<OverlapStep>::parse(Option &option, StringRef argName,
                                          StringRef arg, OverlapStep &value) {
  std::optional<OverlapStep> step = OverlapStep::parse(arg);
  if (!step)
    return option.error("'" + arg +
                        "' is not one of domino[=K|auto], "
                        "domino-columns[=K|auto], domino-both[=K|auto], "
                        "seq[=K|auto], seq-at=P[:P...], "
                        "comet[=K|auto], ring, attention-2d[=RxC|auto], "
                        "buckets[=MiB|auto], schedule, auto");
  value = *step;
  return false;
}

void llvm::cl::parser<OverlapStep>::anchor() {}

void mlir::braid::buildImportPipeline(OpPassManager &pm, bool raiseNorms) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createBraidRaiseAttention());
  BraidRaiseFusedOpsOptions raise;
  raise.norms = raiseNorms;
  pm.addPass(createBraidRaiseFusedOps(raise));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

LogicalResult mlir::braid::buildParallelPipeline(
    OpPassManager &pm, const ParallelPipelineOptions &options,
    llvm::function_ref<LogicalResult(const llvm::Twine &)> emitError) {
  if (options.balance) {
    // The zigzag order is for the blocks the partitioner cuts along cp, so
    // it runs on the single-device program.
    if (options.cp < 2)
      return emitError("balance reorders the sequence for context "
                       "parallelism and needs cp=N with N >= 2");
    BraidBalanceSequenceOptions balance;
    balance.parts = options.cp;
    pm.addPass(createBraidBalanceSequence(balance));
  }
  pm.addPass(createBraidSplitFusedProjections());
  BraidPartitionOptions partition;
  partition.tpSize = options.tp;
  partition.sequenceParallel = options.sp;
  partition.dpSize = options.dp;
  partition.epSize = options.ep;
  partition.cpSize = options.cp;
  partition.zero = options.zero;
  partition.allowReplicated = options.allowReplicated;
  pm.addPass(createBraidPartition(partition));
  return success();
}

/// Adds the pass `create` makes from `options`, timed on hardware profile
/// `hw` like every pass of braid-overlap-pipeline.
template <typename OptionsT>
static void addTimedPass(OpPassManager &pm,
                         std::unique_ptr<Pass> (*create)(OptionsT),
                         OptionsT options, StringRef hw) {
  options.hw = hw.str();
  pm.addPass(create(std::move(options)));
}

void mlir::braid::buildOverlapPipeline(OpPassManager &pm,
                                       const OverlapPipelineOptions &options) {
  for (const OverlapStep &step : options.steps) {
    switch (step.kind) {
    case OverlapStep::Kind::Domino:
    case OverlapStep::Kind::DominoColumns:
    case OverlapStep::Kind::DominoBoth: {
      BraidDominoOptions domino;
      domino.chunks = step.chunks;
      domino.split = step.kind == OverlapStep::Kind::Domino ? "rows"
                     : step.kind == OverlapStep::Kind::DominoColumns
                         ? "columns"
                         : "both";
      domino.force = options.force;
      addTimedPass(pm, createBraidDomino, domino, options.hw);
      break;
    }
    case OverlapStep::Kind::Seq: {
      BraidSeqPipelineOptions seq;
      seq.chunks = step.chunks;
      seq.force = options.force;
      addTimedPass(pm, createBraidSeqPipeline, seq, options.hw);
      break;
    }
    case OverlapStep::Kind::SeqAt: {
      BraidSeqPipelineOptions seq;
      seq.splitPoints = step.splitPoints;
      seq.force = options.force;
      addTimedPass(pm, createBraidSeqPipeline, seq, options.hw);
      break;
    }
    case OverlapStep::Kind::Comet: {
      BraidCometOptions comet;
      comet.combineChunks = step.chunks;
      addTimedPass(pm, createBraidComet, comet, options.hw);
      break;
    }
    case OverlapStep::Kind::Ring:
      pm.addPass(createBraidRingAttention());
      break;
    case OverlapStep::Kind::Attention2D: {
      BraidAttention2DOptions attention;
      attention.grid = step.grid;
      addTimedPass(pm, createBraidAttention2D, attention, options.hw);
      break;
    }
    case OverlapStep::Kind::Schedule:
      break;
    case OverlapStep::Kind::Auto:
      addTimedPass(pm, createBraidOverlapAuto, BraidOverlapAutoOptions(),
                   options.hw);
      break;
    case OverlapStep::Kind::Buckets: {
      BraidBucketsOptions buckets;
      buckets.mib = step.chunks;
      buckets.force = options.force;
      addTimedPass(pm, createBraidBuckets, buckets, options.hw);
      break;
    }
    }
  }
  BraidScheduleOptions schedule;
  schedule.memoryLimit = options.memoryLimit;
  schedule.prefetch = options.prefetch;
  schedule.gatherStream = options.gatherStream;
  addTimedPass(pm, createBraidSchedule, schedule, options.hw);
  pm.addPass(createBraidVerifyCollectives());
}

void mlir::braid::registerBraidPipelines() {
  registerCanonicalizerPass();
  registerCSEPass();
  PassPipelineRegistration<>(
      "braid-import-pipeline",
      "What braidc runs after ONNX import: canonicalize, "
      "braid-raise-attention, braid-raise-fused-ops, canonicalize, cse",
      [](OpPassManager &pm) { buildImportPipeline(pm); });
  // PassPipelineRegistration's builder cannot fail, and `balance` without
  // `cp` must: this is the same registration with the builder's error
  // reported at the pipeline's name.
  registerPassPipeline(
      "braid-parallel-pipeline",
      "What braidc --parallel runs: [braid-balance-sequence,] "
      "braid-split-fused-projections, braid-partition",
      [](OpPassManager &pm, StringRef text,
         llvm::function_ref<LogicalResult(const Twine &)> emitError) {
        std::unique_ptr<ParallelPipelineOptions> options =
            ParallelPipelineOptions::createFromString(text);
        if (!options)
          return failure();
        return buildParallelPipeline(pm, *options, emitError);
      },
      [](llvm::function_ref<void(const detail::PassOptions &)> handler) {
        handler(ParallelPipelineOptions());
      });
  PassPipelineRegistration<OverlapPipelineOptions>(
      "braid-overlap-pipeline",
      "What braidc --overlap runs: the overlap passes in the order given, "
      "then braid-schedule and braid-verify-collectives",
      buildOverlapPipeline);
}

/// Fills braid-parallel-pipeline's options from braidc's --parallel.
static LogicalResult
parseParallel(StringRef parallel, ParallelPipelineOptions &options,
              llvm::function_ref<LogicalResult(const Twine &)> emitError) {
  // tp=N, dp=N, ep=N, cp=N, sp (sequence parallel on tp) or sp=N (tp=N
  // with sequence parallelism), comma-separated.
  if (parallel.empty())
    return success();
  SmallVector<StringRef> items;
  parallel.split(items, ',');
  llvm::StringSet<> seen;
  for (StringRef item : items) {
    auto [kind, count] = item.trim().split('=');
    int64_t ranks = 0;
    bool known = llvm::is_contained({"tp", "dp", "ep", "cp", "sp"}, kind);
    bool counted =
        !count.empty() && !count.getAsInteger(10, ranks) && ranks >= 1;
    if (!known || (kind != "sp" && !counted) ||
        (kind == "sp" && !count.empty() && !counted) ||
        !seen.insert(kind).second)
      return emitError("--parallel '" + parallel + "': '" + item +
                       "' is not one of tp=N, dp=N, ep=N, cp=N, sp, sp=N "
                       "(each at most once)");
    if (kind == "sp") {
      options.sp = true;
      if (counted)
        options.tp = ranks;
    } else if (kind == "tp") {
      options.tp = ranks;
    } else if (kind == "dp") {
      options.dp = ranks;
    } else if (kind == "ep") {
      options.ep = ranks;
    } else {
      options.cp = ranks;
    }
  }
  return success();
}

LogicalResult mlir::braid::buildDriverPipeline(
    OpPassManager &pm, const DriverPipelineOptions &options,
    llvm::function_ref<LogicalResult(const Twine &)> emitError) {
  ParallelPipelineOptions parallel;
  if (failed(parseParallel(options.parallel, parallel, emitError)))
    return failure();
  // A data-parallel training step buckets its gradient all-reduces by
  // default (DDP); `none` asks for the synchronous program.
  std::string overlapText = options.overlap;
  bool byAlgorithm = options.train.enabled && !options.train.algorithm.empty();
  if (overlapText.empty() && options.train.enabled && parallel.dp > 0)
    overlapText = byAlgorithm ? "schedule" : "buckets=auto";
  if (StringRef(overlapText).trim() == "none")
    overlapText.clear();
  // `balance` is spelled with the overlap choices but reorders the
  // single-device program: braid-parallel-pipeline runs it.
  SmallVector<StringRef> steps;
  bool balance = false;
  if (!overlapText.empty()) {
    SmallVector<StringRef> items;
    StringRef(overlapText).split(items, ',');
    for (StringRef item : items) {
      if (item.trim() == "balance")
        balance = true;
      else
        steps.push_back(item.trim());
    }
  }
  StringRef precision = options.precision;
  if (precision != "f32" && precision != "bf16" && precision != "f16")
    return emitError("--precision '" + precision +
                     "' is not one of f32, bf16, f16");
  if (precision == "f16" && options.train.enabled)
    return emitError("--precision f16 with --train: f16 gradients underflow "
                     "without loss scaling, which braidc does not do; use "
                     "--precision bf16 (the same tensor-core rate)");
  BraidMixedPrecisionOptions mixed;
  mixed.type = precision.str();
  if (precision != "f32" && !options.train.enabled)
    pm.addPass(createBraidMixedPrecision(mixed));
  if (options.train.enabled) {
    const TrainOptions &train = options.train;
    if (train.optimizer != "sgd" && train.optimizer != "adamw")
      return emitError("--optimizer must be sgd or adamw, not '" +
                       train.optimizer + "'");
    // Buckets, Domino's chunks and scheduling are exact rewrites of the
    // step, checked against one rank's losses (test/models/train-parallel);
    // the other chunking passes are not checked on training steps yet.
    for (StringRef step : steps) {
      StringRef name = step.split('=').first;
      // The attention gradient is differentiated before partitioning: its
      // backward reads the keys and values whole, so under cp they stay
      // all-gathered and a ring in the forward pass would add its shifts to
      // the gathers rather than replace them.
      if (name == "ring" || name == "attention-2d")
        return emitError("--train keeps context parallelism's all-gather "
                         "of keys and values (the attention's backward "
                         "pass reads them whole): --overlap '" +
                         step + "' does not apply to training steps");
      if (!llvm::is_contained({"buckets", "schedule", "domino",
                               "domino-columns", "domino-both"},
                              name))
        return emitError("--train supports --overlap buckets[=MiB|auto], "
                         "domino[=K], domino-columns[=K], domino-both[=K] "
                         "and schedule for now: '" + step +
                         "' is not checked on training steps yet");
    }
    if (train.zero < 0 || train.zero > 3)
      return emitError("--zero " + Twine(train.zero) +
                       ": ZeRO stages are 1 (optimizer state split over the "
                       "dp ranks), 2 (gradients too) and 3 (parameters too)");
    if (train.zero > 0 && parallel.dp == 0)
      return emitError("--zero " + Twine(train.zero) +
                       " splits the optimizer state over the data-parallel "
                       "ranks and needs --parallel dp=N");
    if (train.zero > 0 && (parallel.ep > 0 || parallel.cp > 0))
      return emitError("--zero " + Twine(train.zero) +
                       " with ep or cp is not supported yet (dp and tp are)");
    // Under tp a fused projection (GPT-2's c_attn, Phi-3's qkv and
    // gate_up) is trained as one parameter per piece, so that the
    // partitioner can split each piece by its own columns (Megatron's
    // layout); the pieces still load from and save to the stored tensor.
    // Differentiated first, the fused weight's several readers keep it
    // whole.
    if (parallel.tp > 0) {
      BraidSplitFusedProjectionsOptions split;
      split.parts = true;
      pm.addPass(createBraidSplitFusedProjections(split));
    }
    // After the split: it reads the fused weights' uses, which the casts
    // would hide.
    if (precision != "f32")
      pm.addPass(createBraidMixedPrecision(mixed));
    // Under tensor parallelism the loss splits with the LM head's
    // vocabulary columns (Megatron's vocab-parallel cross entropy).
    BraidNextTokenLossOptions loss;
    loss.vocabParallel = parallel.tp > 1;
    pm.addPass(createBraidNextTokenLoss(loss));
    BraidAutodiffOptions autodiff;
    autodiff.recompute = train.recompute;
    pm.addPass(createBraidAutodiff(autodiff));
    BraidTrainingStepOptions step;
    step.optimizer = train.optimizer;
    step.lr = train.lr;
    step.momentum = train.momentum;
    step.beta1 = train.beta1;
    step.beta2 = train.beta2;
    step.eps = train.eps;
    step.weightDecay = train.weightDecay >= 0
                           ? train.weightDecay
                           : (train.optimizer == "adamw" ? 0.01 : 0.0);
    step.clipNorm = train.clipNorm;
    step.markGradients =
        byAlgorithm && StringRef(train.algorithm).starts_with("acc");
    pm.addPass(createBraidTrainingStep(step));
    pm.addPass(createCSEPass());
    if (byAlgorithm) {
      StringRef text = train.algorithm;
      auto [name, count] = text.split('=');
      if (name != "cocod-sgd" && name != "acco" && name != "accumulate")
        return emitError("--algorithm '" + text +
                         "' is not cocod-sgd=K, acco[=M] or accumulate=N "
                         "(the training algorithms so far)");
      int64_t number = 0, most = 0;
      // acco=M:N: M micro-batches a round at least, up to N while the
      // round's communication is in flight (a run-time count).
      if (name == "acco" && count.contains(':')) {
        auto [low, high] = count.split(':');
        if (high.getAsInteger(10, most) || most < 2)
          return emitError("--algorithm '" + text +
                           "': acco=M:N needs N >= 2 and N > M (room for N "
                           "micro-batches per round, the ones past M run "
                           "while the round's communication is in flight)");
        count = low;
      }
      if (name == "acco" && count.empty())
        number = 1;
      else if (count == "auto" && name != "accumulate")
        number = 0;
      else if (count.empty() || count.getAsInteger(10, number) || number < 1)
        return emitError(
            "--algorithm '" + text + "' needs " +
            (name == "acco" ? "a micro-batch count: acco=M with M >= 1 "
                              "micro-batches per round, or acco=auto"
             : name == "accumulate"
                 ? "a micro-batch count: accumulate=N with N >= 1 "
                   "micro-batches per step"
                 : "a period: cocod-sgd=K with K >= 1 local steps per "
                   "averaging, or cocod-sgd=auto"));
      if (parallel.dp == 0 || parallel.tp > 0 || parallel.sp ||
          parallel.ep > 0 || parallel.cp > 0)
        return emitError("--algorithm " + text +
                         " runs on data-parallel ranks only: it needs "
                         "--parallel dp=N and no other axis");
      bool acco = name == "acco" || name == "accumulate";
      if (acco && parallel.dp < 2)
        return emitError("--algorithm " + text +
                         " overlaps the optimizer step's collectives with "
                         "the next gradients and needs --parallel dp=N with "
                         "N >= 2");
      if (acco && train.zero == 3)
        return emitError("--algorithm " + text +
                         " splits the optimizer state over the ranks as "
                         "--zero 1 does, and keeps the parameters whole: "
                         "--zero 3 does not apply");
      if (name == "cocod-sgd" && train.zero > 0)
        return emitError("--algorithm " + text +
                         " keeps each rank's optimizer state local; "
                         "--zero does not apply");
      for (StringRef item : steps)
        if (item != "schedule")
          return emitError("--algorithm " + text +
                           (acco ? " places its collectives itself"
                                 : " has no gradient all-reduces to overlap") +
                           ": --overlap '" + item +
                           "' does not apply (schedule does, the default)");
      if (acco) {
        BraidAccoOptions rounds;
        rounds.ranks = parallel.dp;
        rounds.micro = number;
        rounds.maxMicro = most;
        if (most > 0 && number >= most)
          return emitError("--algorithm '" + text + "': acco=M:N needs M < N");
        if (most > 0 && number == 0)
          return emitError("--algorithm '" + text +
                           "': acco=auto:N is not supported; give M");
        rounds.synchronous = name == "accumulate";
        rounds.hw = options.hw;
        pm.addPass(createBraidAcco(rounds));
      } else {
        BraidCocodSgdOptions local;
        local.ranks = parallel.dp;
        local.period = number;
        local.hw = options.hw;
        pm.addPass(createBraidCocodSgd(local));
      }
      pm.addPass(createCSEPass());
    }
  }
  // The training algorithms' passes make the data-parallel program
  // themselves.
  if ((!options.parallel.empty() || balance) && !byAlgorithm) {
    parallel.balance = balance;
    parallel.allowReplicated = options.allowReplicated;
    parallel.zero = options.train.zero;
    if (failed(buildParallelPipeline(pm, parallel, emitError)))
      return failure();
  }
  // A training step's norms are raised once the partitioner has decided
  // whether their dimension stays whole (braidc imports it without them;
  // see braid-raise-fused-ops).
  if (options.train.enabled) {
    BraidRaiseFusedOpsOptions norms;
    norms.activations = false;
    pm.addPass(createBraidRaiseFusedOps(norms));
  }

  StringRef extra = StringRef(options.pipeline).trim();
  // The pipeline runs on the module: accept it with or without the
  // builtin.module(...) anchor that braid-opt's --pass-pipeline wants.
  if (extra.consume_front("builtin.module(") && !extra.consume_back(")"))
    return emitError("unbalanced parentheses in --pipeline");
  if (!extra.empty()) {
    std::string error;
    llvm::raw_string_ostream os(error);
    if (failed(parsePassPipeline(extra, pm, os)))
      return emitError("--pipeline '" + extra + "': " + StringRef(error).trim());
  }

  if (overlapText.empty()) {
    if (options.memoryLimit > 0)
      return emitError("--memory-limit is kept by braid-schedule, which "
                       "orders the plan; it needs --overlap (schedule, or a "
                       "pass that ends with it)");
    return success();
  }
  OverlapPipelineOptions overlap;
  overlap.memoryLimit = options.memoryLimit;
  overlap.prefetch = options.prefetch;
  overlap.gatherStream = options.gatherStream;
  for (StringRef step : steps) {
    std::optional<OverlapStep> parsed = OverlapStep::parse(step);
    StringRef name = step.split('=').first;
    if (!parsed && name == "seq-at")
      return emitError("--overlap '" + overlapText + "': '" + step +
                       "' needs split points P:P:... (positions >= 1)");
    if (!parsed && step.contains('=') && name == "buckets")
      return emitError("--overlap '" + overlapText + "': '" + step +
                       "' needs a bucket size in whole MiB (>= 0) or auto");
    if (!parsed && step.contains('=') &&
        llvm::is_contained({"domino", "domino-columns", "domino-both", "seq",
                            "comet"},
                           name))
      return emitError("--overlap '" + overlapText + "': '" + step +
                       "' needs a chunk count >= 0 or auto");
    if (!parsed)
      return emitError("--overlap '" + overlapText + "': '" + step +
                       "' is not one of domino[=K], domino-columns[=K], "
                       "domino-both[=K], seq[=K], seq-at=P[:P...], "
                       "comet[=K], balance, ring, attention-2d[=RxC], "
                       "buckets[=MiB], schedule, auto (K, MiB: a count or "
                       "auto)");
    overlap.steps.push_back(*parsed);
  }
  overlap.hw = options.hw;
  overlap.force = options.forceOverlap;
  buildOverlapPipeline(pm, overlap);
  return success();
}
