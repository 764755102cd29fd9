//===- Overlap.cpp - Domino, ISO sequence pipelining, overlap report ------===//
//
// The chunking passes seed passes/Chunking.h's analysis (the batch, the
// output columns of row-parallel matmuls, or the sequence) and rewrite the
// runs it finds; braid-schedule then places every chunk's collective. With
// chunks=auto they try candidates on a copy of the module, schedule each, and
// keep the one the cost model times fastest.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Builders.h"
#include "passes/Chunking.h"
#include "passes/Overlap.h"
#include "passes/Passes.h"
#include "passes/Schedule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <functional>
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InterleavedRange.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDPRINTCHUNKRUNS
#define GEN_PASS_DEF_BRAIDDOMINO
#define GEN_PASS_DEF_BRAIDSEQPIPELINE
#define GEN_PASS_DEF_BRAIDOVERLAPREPORT
#define GEN_PASS_DEF_BRAIDOVERLAPAUTO
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

namespace {

/// Whether `slice` is this rank's block of its input along `dim` only (the
/// partitioner's slice of an input split over an outer mesh axis).
bool isRankBlock(SliceOp slice, int64_t dim) {
  auto in = cast<RankedTensorType>(slice.getInput().getType());
  auto out = cast<RankedTensorType>(slice.getType());
  ArrayRef<int64_t> offsets = slice.getStaticOffsets();
  for (int64_t d = 0; d < in.getRank(); ++d) {
    bool cut = d == dim;
    if (slice.getStaticStrides()[d] != 1 ||
        (cut ? !ShapedType::isDynamic(offsets[d])
             : offsets[d] != 0 || out.getDimSize(d) != in.getDimSize(d)))
      return false;
  }
  return true;
}

/// The values that hold `function`'s inputs along `dim` as it computes
/// them: each tensor input with `dim` larger than 1 or, where the
/// partitioner split an input over an outer axis (dp before Domino's
/// rows), the slices of it this rank computes with.
SmallVector<std::pair<Value, unsigned>> inputValues(func::FuncOp function,
                                                    int64_t dim) {
  SmallVector<std::pair<Value, unsigned>> values;
  for (BlockArgument arg : function.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() <= dim || type.getDimSize(dim) == 1)
      continue;
    bool sliced = !arg.use_empty() && llvm::all_of(arg.getUsers(), [&](
                                                       Operation *user) {
      auto slice = dyn_cast<SliceOp>(user);
      return slice && isRankBlock(slice, dim);
    });
    if (!sliced) {
      values.push_back({arg, arg.getArgNumber()});
      continue;
    }
    for (Operation *user : arg.getUsers())
      values.push_back({user->getResult(0), arg.getArgNumber()});
  }
  return values;
}

/// Seeds every tensor input of `function` (or this rank's block of it, see
/// inputValues) with at least `dim + 1` dimensions split along `dim` into
/// chunks of `sizes` (which must add up to the dimension); fails naming the
/// first input they do not fit.
LogicalResult seedInputs(ChunkAnalysis &analysis, func::FuncOp function,
                         int64_t dim, ArrayRef<int64_t> sizes,
                         StringRef pass) {
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  for (auto [value, argument] : inputValues(function, dim)) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getDimSize(dim) == 1)
      continue;
    if (type.getDimSize(dim) != total || llvm::any_of(sizes, [](int64_t s) {
          return s <= 0;
        }))
      return function.emitError(pass)
             << ": dimension " << dim << " (size " << type.getDimSize(dim)
             << (isa<BlockArgument>(value) ? "" : " on this rank")
             << ") of argument " << argument << " of @"
             << function.getSymName() << " cannot be split into chunks of "
             << llvm::interleaved_array(sizes);
    analysis.seedValue(value, {dim, SmallVector<int64_t>(sizes)});
  }
  return success();
}

/// Seeds every matmul whose result is all-reduced (row parallel) along its
/// output columns; returns how many it seeded.
int64_t seedRowParallelColumns(ChunkAnalysis &analysis, func::FuncOp function,
                               int64_t chunks) {
  int64_t seeded = 0;
  function.walk([&](AllReduceOp reduce) {
    auto matmul = reduce.getInput().getDefiningOp<MatmulOp>();
    if (!matmul || !matmul->hasOneUse())
      return;
    DimensionMapping mapping = matmul.getDimensionMapping();
    const ValueFactors &out = mapping.getResults()[0];
    int n = leadingFactor(out, out.size() - 1);
    if (n < 0 || mapping.getFactors()[n].size < chunks)
      return;
    analysis.seedOp(matmul, n, evenChunks(mapping.getFactors()[n].size, chunks));
    ++seeded;
  });
  return seeded;
}

struct PrintChunkRunsPass
    : public mlir::braid::impl::BraidPrintChunkRunsBase<PrintChunkRunsPass> {
  using BraidPrintChunkRunsBase::BraidPrintChunkRunsBase;
  void runOnOperation() override {
    FailureOr<SmallVector<func::FuncOp>> functions = selectUnscheduledFunctions(
        getOperation(), functionName, "braid-print-chunk-runs");
    if (failed(functions))
      return signalPassFailure();
    for (func::FuncOp function : *functions)
      if (failed(print(function)))
        return signalPassFailure();
  }

  LogicalResult print(func::FuncOp function) {
    ChunkAnalysis analysis;
    int64_t size = inputDimSize(function, dim);
    if (failed(seedInputs(analysis, function, dim, evenChunks(size, chunks),
                          "braid-print-chunk-runs")))
      return failure();
    analysis.run(function.getBody().front());
    for (auto &[op, chunking] : analysis.getOps()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "run " << analysis.getRun(op) << ", factor f" << chunking.factor
         << " in chunks " << llvm::interleaved_array(chunking.factorSizes)
         << ":";
      for (auto [i, use] : llvm::enumerate(chunking.operands)) {
        switch (use.use) {
        case ChunkUse::None:
          continue;
        case ChunkUse::Whole:
          os << " #" << i << " whole";
          break;
        case ChunkUse::Chunk:
          os << " #" << i << " chunk(dim " << use.dim << ")";
          break;
        case ChunkUse::Prefix:
          os << " #" << i << " prefix(dim " << use.dim << ")";
          break;
        }
      }
      op->emitRemark(text);
    }
    return success();
  }
};

} // namespace

int64_t mlir::braid::inputDimSize(func::FuncOp function, int64_t dim) {
  int64_t size = 0;
  for (auto [value, argument] : inputValues(function, dim))
    if (int64_t s = cast<RankedTensorType>(value.getType()).getDimSize(dim);
        s > 1)
      size = s;
  return size;
}

FailureOr<double> mlir::braid::estimateScheduled(ModuleOp module,
                                                 const CostModel &model,
                                                 StringRef function) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  double time = 0;
  for (auto f : copy->getOps<func::FuncOp>()) {
    if (f.isExternal() || (!function.empty() && f.getSymName() != function))
      continue;
    if (failed(scheduleFunction(f, model, 0, "comm", /*boundPrefetch=*/false,
                                "comm_gather")))
      return failure();
    time += estimateTimeline(f, model).makespan;
  }
  return time;
}

/// Records `seconds` as `function`'s un-overlapped estimate on `hw` unless
/// an earlier overlap pass recorded one.
static void setBaseline(func::FuncOp function, StringRef hw, double seconds) {
  if (function->hasAttr(kBaselineAttr))
    return;
  Builder b(function.getContext());
  function->setAttr(
      kBaselineAttr,
      b.getDictionaryAttr(
          {b.getNamedAttr("hw", b.getStringAttr(hw)),
           b.getNamedAttr("makespan_us",
                          b.getF64FloatAttr(roundedMicroseconds(seconds)))}));
}

void mlir::braid::recordBaseline(ModuleOp module, StringRef function,
                                 StringRef hw) {
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  FailureOr<CostModel> model = CostModel::load(hw, module);
  if (failed(model))
    return;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isExternal() || f->hasAttr(kBaselineAttr) ||
        (!function.empty() && f.getSymName() != function))
      continue;
    if (FailureOr<double> time = estimateScheduled(module, *model,
                                                   f.getSymName());
        succeeded(time))
      setBaseline(f, hw, *time);
  }
}

LogicalResult mlir::braid::applyUnlessSlower(
    ModuleOp module, StringRef hw, StringRef function, StringRef pass,
    StringRef what, bool force,
    function_ref<LogicalResult(ModuleOp)> transform) {
  FailureOr<CostModel> model = CostModel::load(hw, module);
  if (failed(model))
    return failure();
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  if (failed(transform(*copy)))
    return failure();
  FailureOr<double> before, after;
  {
    // A program the scheduler cannot place is estimated as unknown; the
    // transformation is then applied as asked.
    ScopedDiagnosticHandler quiet(module.getContext(),
                                  [](Diagnostic &) { return success(); });
    before = estimateScheduled(module, *model, function);
    after = estimateScheduled(*copy, *model, function);
  }
  bool known = succeeded(before) && succeeded(after);
  auto original = dyn_cast_or_null<func::FuncOp>(module.lookupSymbol(function));
  assert(original && "applyUnlessSlower transforms one function");
  bool slower = known && *after > *before * (1 + 1e-9);
  bool keep = slower && !force;
  if (slower) {
    std::string estimates =
        llvm::formatv("{0}: {1} is estimated slower than its input on {2} "
                      "({3:F1} us against {4:F1} us, {5:F2}x); ",
                      pass, what, hw, *after * 1e6, *before * 1e6,
                      *after / *before);
    if (keep)
      original.emitWarning(estimates +
                           "keeping the input (force=true, or braidc "
                           "--force-overlap, applies it anyway)");
    else
      original.emitRemark(estimates + "applied because it was forced");
  }
  if (!keep) {
    // Take the transformed function's body (the function op itself stays,
    // so callers' handles to it stay valid) and the attributes the
    // transformation set on it and on the module.
    auto transformed = copy->lookupSymbol<func::FuncOp>(function);
    original.getBody().takeBody(transformed.getBody());
    original->setAttrs(transformed->getAttrDictionary());
    module->setAttrs((*copy)->getAttrDictionary());
  }
  if (known) {
    setBaseline(original, hw, *before);
    SmallVector<CandidateEstimate> table(2);
    table[0].name = "input";
    table[0].seconds = *before;
    table[1].name = what.str();
    table[1].seconds = *after;
    recordChoice(module, pass, function, hw, table, keep ? 0 : 1);
  }
  return success();
}

namespace {
/// The pieces of `value` when it is a concatenation along `dim`.
SmallVector<Value> concatPieces(Value value, int64_t dim) {
  auto concat = value.getDefiningOp<ConcatOp>();
  if (!concat || concat.getDim() != dim)
    return {};
  return SmallVector<Value>(concat.getInputs());
}

/// Whether two piece lists cut their dimensions `da` and `db` alike.
bool sameCuts(ArrayRef<Value> a, int64_t da, ArrayRef<Value> b, int64_t db) {
  if (a.size() < 2 || a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (cast<RankedTensorType>(x.getType()).getDimSize(da) !=
        cast<RankedTensorType>(y.getType()).getDimSize(db))
      return false;
  return true;
}

/// The sum of `parts`, left to right.
Value sumOf(PatternRewriter &rewriter, Location loc, ArrayRef<Value> parts) {
  Value sum = parts.front();
  for (Value part : parts.drop_front())
    sum = AddOp::create(rewriter, loc, sum, part);
  return sum;
}

/// A product contracting two concatenations of the chunks (a weight
/// gradient X^T dY over the row chunks) is the sum of the chunks' products:
/// each chunk's product can run as soon as its own chunk exists (while the
/// other chunk's all-reduce is in flight, Domino's backward overlap), and
/// neither operand is copied whole again.
struct ContractionOverChunks : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp matmul,
                                PatternRewriter &rewriter) const override {
    auto lhsType = cast<RankedTensorType>(matmul.getLhs().getType());
    auto rhsType = cast<RankedTensorType>(matmul.getRhs().getType());
    if (lhsType.getRank() < 2 || rhsType.getRank() < 2)
      return failure();
    int64_t lk = lhsType.getRank() - (matmul.getTransposeLhs() ? 2 : 1);
    int64_t rk = rhsType.getRank() - (matmul.getTransposeRhs() ? 1 : 2);
    SmallVector<Value> lhs = concatPieces(matmul.getLhs(), lk);
    SmallVector<Value> rhs = concatPieces(matmul.getRhs(), rk);
    if (!sameCuts(lhs, lk, rhs, rk))
      return failure();
    SmallVector<Value> parts;
    for (auto [a, b] : llvm::zip(lhs, rhs))
      parts.push_back(MatmulOp::create(
          rewriter, matmul.getLoc(), matmul.getType(), a, b,
          matmul.getTransposeLhsAttr(), matmul.getTransposeRhsAttr()));
    rewriter.replaceOp(matmul, sumOf(rewriter, matmul.getLoc(), parts));
    return success();
  }
};

/// A sum over the dimension a concatenation joins (a bias gradient over the
/// row chunks) is the sum of the chunks' sums.
struct SumOverChunks : OpRewritePattern<ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceSumOp reduce,
                                PatternRewriter &rewriter) const override {
    auto concat = reduce.getInput().getDefiningOp<ConcatOp>();
    if (!concat || concat.getInputs().size() < 2 ||
        !llvm::is_contained(reduce.getDims(), concat.getDim()))
      return failure();
    SmallVector<Value> parts;
    for (Value piece : concat.getInputs())
      parts.push_back(ReduceSumOp::create(
          rewriter, reduce.getLoc(), reduce.getType(), piece,
          reduce.getDimsAttr(), reduce.getKeepDimsAttr()));
    rewriter.replaceOp(reduce, sumOf(rewriter, reduce.getLoc(), parts));
    return success();
  }
};

/// Contractions and sums over the row chunks, per chunk (see above); the
/// concatenations nothing reads any more are erased.
void contractPerChunk(func::FuncOp function) {
  RewritePatternSet patterns(function.getContext());
  patterns.add<ContractionOverChunks, SumOverChunks>(function.getContext());
  walkAndApplyPatterns(function, std::move(patterns));
  SmallVector<ConcatOp> dead;
  function.walk([&](ConcatOp concat) {
    if (concat->use_empty())
      dead.push_back(concat);
  });
  for (ConcatOp concat : llvm::reverse(dead))
    concat->erase();
}
} // namespace

LogicalResult mlir::braid::applyDomino(ModuleOp module, StringRef name,
                                       int64_t count, StringRef split) {
  auto function = module.lookupSymbol<func::FuncOp>(name);
  if (!function || function.isExternal())
    return module.emitError("braid-domino: no function @") << name;
  if (failed(requireUnscheduled(function, "braid-domino")))
    return failure();
  if (split != "rows" && split != "columns" && split != "both")
    return module.emitError("braid-domino: split must be rows, columns or "
                            "both, not '")
           << split << "'";
  Block &body = function.getBody().front();
  if (split != "columns") {
    ChunkAnalysis rows;
    SmallVector<std::pair<Value, unsigned>> inputs = inputValues(function, 0);
    int64_t batch = inputDimSize(function, 0);
    if (batch == 0)
      return function.emitError("braid-domino: no input of @")
             << name
             << " has a batch (dimension 0) larger than 1 to split on this "
                "rank";
    bool local = llvm::any_of(inputs, [](auto &entry) {
      return !isa<BlockArgument>(entry.first);
    });
    if (batch < count)
      return function.emitError("braid-domino: the batch")
             << (local ? " on this rank" : "") << " (" << batch
             << ") cannot be split into " << count << " chunks";
    if (failed(seedInputs(rows, function, 0, evenChunks(batch, count),
                          "braid-domino")))
      return failure();
    rows.run(body);
    // Domino hides a chunk's collectives behind another chunk's compute:
    // chunks that split none hide nothing (a data-parallel step, whose
    // gradients are summed over the chunks before their all-reduce).
    if (llvm::none_of(rows.getOps(), [](auto &entry) {
          return isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(entry.first);
        }))
      return function.emitError("braid-domino: the ")
             << count << " row chunks of @" << name
             << " split no collective (Domino hides tensor-parallel "
                "all-reduces, all-gathers and reduce-scatters; give tp)";
    if (failed(rows.rewrite(body)))
      return failure();
    contractPerChunk(function);
  }
  if (split != "rows") {
    ChunkAnalysis columns;
    if (seedRowParallelColumns(columns, function, count) == 0 &&
        split == "columns")
      return function.emitError("braid-domino: @")
             << name << " has no all-reduced matmul with " << count
             << " or more output columns to split";
    columns.run(body);
    if (failed(columns.rewrite(body)))
      return failure();
    // The column chunks of row-parallel weights are blocks read at load,
    // not slices copied every run.
    readWeightSlicesAsBlocks(function);
  }
  return success();
}


namespace {
struct DominoPass : public mlir::braid::impl::BraidDominoBase<DominoPass> {
  using BraidDominoBase::BraidDominoBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(forEachUnscheduledFunction(
            module, functionName, "braid-domino",
            [&](func::FuncOp function) { return runOn(module, function.getSymName()); })))
      signalPassFailure();
  }

  LogicalResult runOn(ModuleOp module, StringRef name) {
    int64_t count;
    recordBaseline(module, name, hw);
    if (!chunks.isAuto()) {
      count = chunks.getCount();
    } else {
      // One chunk is the input; forced, only real splits compete.
      SmallVector<int64_t> candidates{1, 2, 4, 8};
      if (force)
        candidates.erase(candidates.begin());
      FailureOr<size_t> best = failure();
      {
        // Counts that do not apply (a batch of 2 in 4 chunks) are skipped
        // without an error each; one chunk always applies.
        ScopedDiagnosticHandler quiet(&getContext(),
                                      [](Diagnostic &) { return success(); });
        best = pickByCost(
            module, hw, candidates.size(),
            [&](ModuleOp m, size_t c) {
              return applyDomino(m, name, candidates[c], split);
            },
            name, "braid-domino",
            [&](size_t c) { return "chunks=" + std::to_string(candidates[c]); });
      }
      if (failed(best))
        return module.lookupSymbol(name)->emitError(
                   "braid-domino: no chunk count of @")
               << name << " could be scheduled";
      count = candidates[*best];
      module->setAttr("braid.domino_chunks",
                      IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                       count));
    }
    if (count <= 1)
      return success();
    auto apply = [&](ModuleOp m) { return applyDomino(m, name, count, split); };
    // An automatic count already weighed one chunk (the input) against the
    // others.
    if (chunks.isAuto())
      return apply(module);
    std::string what = "chunks=" + std::to_string(count);
    if (split != "rows")
      what += " split=" + split;
    return applyUnlessSlower(module, hw, name, "braid-domino", what, force,
                             apply);
  }
};

} // namespace

LogicalResult mlir::braid::applySeqPipeline(ModuleOp module, StringRef name,
                                            ArrayRef<int64_t> sizes) {
  auto function = module.lookupSymbol<func::FuncOp>(name);
  if (!function || function.isExternal())
    return module.emitError("braid-seq-pipeline: no function @") << name;
  if (failed(requireUnscheduled(function, "braid-seq-pipeline")))
    return failure();
  ChunkAnalysis analysis;
  if (failed(seedInputs(analysis, function, 1, sizes, "braid-seq-pipeline")))
    return failure();
  Block &body = function.getBody().front();
  analysis.run(body);
  return analysis.rewrite(body);
}


namespace {
struct SeqPipelinePass
    : public mlir::braid::impl::BraidSeqPipelineBase<SeqPipelinePass> {
  using BraidSeqPipelineBase::BraidSeqPipelineBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(forEachUnscheduledFunction(
            module, functionName, "braid-seq-pipeline",
            [&](func::FuncOp function) { return runOn(module, function); })))
      signalPassFailure();
  }

  LogicalResult runOn(ModuleOp module, func::FuncOp function) {
    StringRef name = function.getSymName();
    int64_t length = inputDimSize(function, 1);
    recordBaseline(module, name, hw);
    SmallVector<int64_t> sizes;
    if (!splitPoints.empty()) {
      int64_t previous = 0;
      for (int64_t point : splitPoints) {
        if (point <= previous || point >= length) {
          module.emitError("braid-seq-pipeline: split points must increase "
                           "strictly inside (0, ")
              << length << "), got " << llvm::interleaved_array(splitPoints);
          return failure();
        }
        sizes.push_back(point - previous);
        previous = point;
      }
      sizes.push_back(length - previous);
    } else if (!chunks.isAuto()) {
      if (length < chunks.getCount()) {
        module.emitError("braid-seq-pipeline: the sequence (")
            << length << ") cannot be split into " << chunks.getCount()
            << " chunks";
        return failure();
      }
      sizes = evenChunks(length, chunks.getCount());
    } else {
      // Two chunks, the split point chosen by the cost model; unless
      // forced, the input (no split) is a candidate too.
      SmallVector<int64_t> points;
      if (!force)
        points.push_back(0);
      int64_t step = std::max<int64_t>(1, length / 32);
      for (int64_t p = step; p < length; p += step)
        points.push_back(p);
      FailureOr<size_t> best = failure();
      {
        ScopedDiagnosticHandler quiet(&getContext(),
                                      [](Diagnostic &) { return success(); });
        best = pickByCost(
            module, hw, points.size(),
            [&](ModuleOp m, size_t c) {
              if (points[c] == 0)
                return success();
              return applySeqPipeline(m, name,
                                      {points[c], length - points[c]});
            },
            name, "braid-seq-pipeline", [&](size_t c) {
              return points[c] == 0 ? std::string("input")
                                    : "split at " + std::to_string(points[c]);
            });
      }
      if (failed(best))
        return function.emitError("braid-seq-pipeline: no split point of @")
               << name << " could be scheduled";
      module->setAttr("braid.seq_split_point",
                      IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                       points[*best]));
      if (points[*best] == 0)
        return success();
      // The choice already weighed the input against every split.
      return applySeqPipeline(module, name,
                              {points[*best], length - points[*best]});
    }
    if (sizes.size() <= 1)
      return success();
    std::string what = "chunks of " + llvm::join(llvm::map_range(sizes, [](
                                                     int64_t size) {
                                                   return std::to_string(size);
                                                 }),
                                                 "+");
    return applyUnlessSlower(
        module, hw, name, "braid-seq-pipeline", what, force,
        [&](ModuleOp m) { return applySeqPipeline(m, name, sizes); });
  }
};

struct OverlapAutoPass
    : public mlir::braid::impl::BraidOverlapAutoBase<OverlapAutoPass> {
  using BraidOverlapAutoBase::BraidOverlapAutoBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(forEachUnscheduledFunction(
            module, functionName, "braid-overlap-auto",
            [&](func::FuncOp function) { return runOn(module, function); })))
      signalPassFailure();
  }

  LogicalResult runOn(ModuleOp module, func::FuncOp function) {
    std::string name = function.getSymName().str();
    recordBaseline(module, name, hw);
    struct Candidate {
      std::string name;
      std::function<LogicalResult(ModuleOp)> apply;
    };
    SmallVector<Candidate> candidates{
        {"schedule", [](ModuleOp) { return success(); }}};
    for (int64_t count : {2, 4, 8})
      candidates.push_back({"domino=" + std::to_string(count),
                            [count, name](ModuleOp m) {
                              return applyDomino(m, name, count, "rows");
                            }});
    // Domino's column split: each row-parallel matmul's all-reduce in pieces.
    for (int64_t count : {2, 4})
      candidates.push_back({"domino-columns=" + std::to_string(count),
                            [count, name](ModuleOp m) {
                              return applyDomino(m, name, count, "columns");
                            }});
    int64_t length = inputDimSize(function, 1);
    llvm::SmallSetVector<int64_t, 2> points;
    for (int64_t p : {length / 2, (int64_t)std::lround(length / std::sqrt(2.0))})
      if (p > 0 && p < length)
        points.insert(p);
    for (int64_t p : points)
      candidates.push_back(
          {"seq@" + std::to_string(p), [p, length, name](ModuleOp m) {
             return applySeqPipeline(m, name, {p, length - p});
           }});
    // Context-parallel attention: Ring Attention and every ATTENTION2D grid
    // (these rewrite every function's attention).
    bool gathered = false;
    function.walk([&](AttentionOp attention) {
      gathered |= attention.getKey().getDefiningOp<AllGatherOp>() != nullptr;
    });
    if (gathered) {
      candidates.push_back({"ring", [](ModuleOp m) {
                              return applyRingAttention(m);
                            }});
      for (MeshOp mesh : module.getOps<MeshOp>())
        if (std::optional<unsigned> cp = mesh.getAxisIndex("cp")) {
          int64_t size = mesh.getShape()[*cp];
          for (int64_t r = 1; r <= size; ++r)
            if (size % r == 0)
              candidates.push_back(
                  {"attention-2d=" + std::to_string(r) + "x" +
                       std::to_string(size / r),
                   [r, size](ModuleOp m) {
                     return applyAttention2D(m, "cp", r, size / r);
                   }});
        }
    }
    // Expert-parallel MoE layers: COMET.
    bool experts = false;
    function.walk([&](AllToAllOp a2a) {
      experts |= a2a.getInput().getDefiningOp<MoeDispatchOp>() != nullptr;
    });
    if (experts)
      candidates.push_back({"comet", [](ModuleOp m) {
                              return applyComet(m, 1);
                            }});
    FailureOr<size_t> best = failure();
    {
      // Candidates that do not apply (a batch of 1 in 2 chunks) are skipped
      // without an error each; plain scheduling always applies.
      ScopedDiagnosticHandler quiet(&getContext(),
                                    [](Diagnostic &) { return success(); });
      best = pickByCost(
          module, hw, candidates.size(),
          [&](ModuleOp m, size_t c) { return candidates[c].apply(m); }, name,
          "braid-overlap-auto", [&](size_t c) { return candidates[c].name; });
    }
    if (failed(best))
      return function.emitError("braid-overlap-auto: no candidate of @")
             << name << " could be scheduled";
    if (failed(candidates[*best].apply(module)))
      return failure();
    module->setAttr("braid.overlap_choice",
                    StringAttr::get(&getContext(), candidates[*best].name));
    return success();
  }
};

struct OverlapReportPass
    : public mlir::braid::impl::BraidOverlapReportBase<OverlapReportPass> {
  using BraidOverlapReportBase::BraidOverlapReportBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<CostModel> model = CostModel::load(hw, module);
    if (failed(model))
      return signalPassFailure();
    auto us = [](double seconds) {
      return llvm::formatv("{0:F1} us", seconds * 1e6).str();
    };
    for (auto function : module.getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      Timeline timeline = estimateTimeline(function, *model);
      double exposed = 0;
      for (const CollectiveTiming &c : timeline.collectives) {
        double time = c.end - c.start;
        double hidden = std::min(c.hidden, time);
        exposed += time - hidden;
        std::string text = llvm::formatv("{0} of {1} hidden", us(hidden),
                                         us(time))
                               .str();
        if (time - hidden > 1e-12 * std::max(1.0, time)) {
          text += "; not hidden: ";
          if (!c.async)
            text += "synchronous (nothing runs while it does; run "
                    "braid-schedule)";
          else if (c.collective->hasAttr(kHeldByMemoryAttr))
            text += "prefetch window (braid-schedule issued it only so far "
                    "ahead of its reader: prefetch=auto or memory-limit)";
          else if (!c.workBeforeAwait)
            text += "no independent work (its result is awaited before any "
                    "other op runs)";
          else
            text += "dependency (the independent work between its issue and "
                    "its await is shorter than it)";
        }
        c.collective->emitRemark(text);
      }
      double bound = std::max(timeline.computeBusy, timeline.commBusy);
      // The speed-up against the program before any overlap: the estimate
      // the first chunking pass recorded of its input, on this profile; else
      // this program with every collective synchronous (compute and
      // communication one after the other), which is that input when no
      // pass chunked anything.
      double baseline = timeline.computeBusy + timeline.commBusy;
      std::string against = "this program with every collective synchronous";
      if (auto recorded = function->getAttrOfType<DictionaryAttr>(kBaselineAttr)) {
        auto recordedHw = recorded.getAs<StringAttr>("hw");
        auto makespan = recorded.getAs<FloatAttr>("makespan_us");
        if (recordedHw && makespan && recordedHw.getValue() == hw) {
          baseline = makespan.getValueAsDouble() * 1e-6;
          against = "the program before the overlap passes";
        } else if (recordedHw) {
          against += " (the program before the overlap passes was estimated "
                     "on " +
                     recordedHw.getValue().str() + ", not " + hw + ")";
        }
      }
      function.emitRemark(llvm::formatv(
          "makespan {0}, speed-up {6:F2}x against {7} ({8}); compute {1}, "
          "communication {2}, exposed communication {3}, overlap efficiency "
          "{4:F2} (bound max(compute, communication) = {5})",
          us(timeline.makespan), us(timeline.computeBusy),
          us(timeline.commBusy), us(exposed),
          timeline.makespan > 0 ? bound / timeline.makespan : 1.0, us(bound),
          timeline.makespan > 0 ? baseline / timeline.makespan : 1.0, against,
          us(baseline)));
    }
    // The choices the overlap passes made on the way here, with every
    // candidate's estimate.
    std::string choices = formatChoices(module);
    if (!choices.empty())
      module.emitRemark("choices of the overlap passes:\n" +
                        StringRef(choices).rtrim().str());
  }
};

} // namespace
