//===- Chunking.cpp - split runs of ops into independent chunks -----------===//

#include "passes/Chunking.h"
#include "passes/IRHelpers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace mlir::braid;

SmallVector<int64_t> mlir::braid::evenChunks(int64_t size, int64_t count) {
  SmallVector<int64_t> sizes;
  for (int64_t i = 0; i < count; ++i)
    sizes.push_back(size / count + (i < size % count ? 1 : 0));
  return sizes;
}

static SmallVector<int64_t> scaled(ArrayRef<int64_t> sizes, int64_t factor) {
  return llvm::map_to_vector(sizes, [&](int64_t s) { return s * factor; });
}

/// The product of the sizes of the factors below the leading one of a
/// dimension: a chunk of k units of the leading factor is k times this
/// many elements of the dimension.
static int64_t minorSize(const DimensionMapping &mapping,
                         const DimFactors &dimFactors) {
  int64_t product = 1;
  for (unsigned f : llvm::drop_begin(dimFactors))
    product *= mapping.getFactors()[f].size;
  return product;
}

std::optional<OpChunking> ChunkAnalysis::analyzeOp(Operation *op) {
  if (isa<GetWeightOp, ConstantOp, RankOp>(op) || op->getNumRegions() != 0)
    return std::nullopt;
  auto mappingOp = dyn_cast<DimensionMappingOpInterface>(op);
  if (!mappingOp)
    return std::nullopt;
  OpChunking chunking;
  chunking.mapping = mappingOp.getDimensionMapping();
  const DimensionMapping &mapping = chunking.mapping;
  auto layoutOf = [&](Value v) -> const ChunkLayout * {
    if (const ChunkLayout *layout = getLayout(v))
      return layout;
    auto it = seeds.find(v);
    return it == seeds.end() ? nullptr : &it->second;
  };

  // The factor: seeded, or the one leading a chunked operand's dimension.
  int factor = -1;
  SmallVector<int64_t> factorSizes;
  if (auto it = opSeeds.find(op); it != opSeeds.end()) {
    factor = it->second.first;
    factorSizes = it->second.second;
  } else {
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      const ChunkLayout *layout = layoutOf(operand);
      if (!layout)
        continue;
      const ValueFactors &dims = mapping.getOperands()[i];
      int f = leadingFactor(dims, layout->dim);
      if (f < 0 || mapping.getFactors()[f].kind != FactorKind::Parallel ||
          !mapping.leadsEveryDimension(f))
        continue;
      int64_t minor = minorSize(mapping, dims[layout->dim]);
      if (!llvm::all_of(layout->sizes,
                        [&](int64_t s) { return s % minor == 0; }))
        continue;
      factor = f;
      factorSizes = llvm::map_to_vector(
          layout->sizes, [&](int64_t s) { return s / minor; });
      break;
    }
  }
  if (factor < 0)
    return std::nullopt;
  chunking.factor = factor;
  chunking.factorSizes = factorSizes;

  // What each chunk needs of each operand.
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    OperandChunking use;
    if (!isa<RankedTensorType>(operand.getType())) {
      chunking.operands.push_back(use);
      continue;
    }
    const ValueFactors &dims = mapping.getOperands()[i];
    use.use = ChunkUse::Whole;
    if (int64_t d = dimLedBy(dims, factor); d >= 0) {
      use = {ChunkUse::Chunk, d,
             scaled(factorSizes, minorSize(mapping, dims[d]))};
    } else {
      for (auto [d, dimFactors] : llvm::enumerate(dims)) {
        if (dimFactors.empty())
          continue;
        const Factor &f = mapping.getFactors()[dimFactors.front()];
        if (f.kind != FactorKind::CausalPrefix || f.prefixOf != (unsigned)factor)
          continue;
        // Chunk i of the queries needs keys 0..end(i): only when keys and
        // queries have the same length (no offset between them).
        if (f.size != mapping.getFactors()[factor].size ||
            dimFactors.size() != 1)
          return std::nullopt;
        use = {ChunkUse::Prefix, (int64_t)d, factorSizes};
      }
    }
    chunking.operands.push_back(use);
  }
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    ChunkLayout layout;
    const ValueFactors &dims = mapping.getResults()[r];
    if (int64_t d = dimLedBy(dims, factor); d >= 0)
      layout = {d, scaled(factorSizes, minorSize(mapping, dims[d]))};
    else if (isa<RankedTensorType>(result.getType()))
      return std::nullopt; // every chunk would compute the whole result
    chunking.results.push_back(layout);
  }
  return chunking;
}

void ChunkAnalysis::run(Block &block) {
  int runs = 0;
  for (Operation &op : block) {
    std::optional<OpChunking> chunking = analyzeOp(&op);
    if (!chunking)
      continue;
    int run = -1;
    for (auto [operand, use] :
         llvm::zip(op.getOperands(), chunking->operands))
      if (use.use == ChunkUse::Chunk || use.use == ChunkUse::Prefix)
        if (Operation *producer = operand.getDefiningOp())
          if (int r = getRun(producer); r >= 0 && (run < 0 || r < run))
            run = r;
    runOf[&op] = run >= 0 ? run : runs++;
    for (auto [result, layout] : llvm::zip(op.getResults(), chunking->results))
      if (layout.dim >= 0)
        layouts[result] = layout;
    ops.insert({&op, std::move(*chunking)});
  }
}

namespace {
/// Builds the pieces of the rewrite: chunk values, prefixes, slices and
/// concatenations, each made once.
class ChunkRewriter {
public:
  explicit ChunkRewriter(MLIRContext *context) : builder(context) {}

  /// The whole of `v` before `before`: `v` itself, or the concatenation of
  /// its chunks.
  Value whole(Value v, Operation *before) {
    auto it = pieces.find(v);
    if (it == pieces.end())
      return v;
    if (Value w = wholes.lookup(v))
      return w;
    builder.setInsertionPoint(before);
    Value w = concat(it->second, layouts[v].dim, before->getLoc());
    wholes[v] = w;
    return w;
  }

  /// What chunk `i` of an op needs of `v`.
  Value operandFor(Value v, const OperandChunking &use, unsigned i,
                   Operation *before) {
    if (use.use == ChunkUse::None)
      return v;
    if (use.use == ChunkUse::Whole)
      return whole(v, before);
    auto it = pieces.find(v);
    bool sameSplit = it != pieces.end() && layouts[v].dim == use.dim &&
                     layouts[v].sizes == use.sizes;
    auto key = std::make_tuple(v, use.dim, i, (int)use.use);
    if (Value cached = made.lookup(key))
      return cached;
    builder.setInsertionPoint(before);
    Location loc = before->getLoc();
    Value result;
    int64_t start = 0;
    for (unsigned j = 0; j < i; ++j)
      start += use.sizes[j];
    if (sameSplit && use.use == ChunkUse::Chunk) {
      result = it->second[i];
    } else if (sameSplit) {
      result = i == 0 ? it->second[0]
                      : concat(ArrayRef<Value>(it->second).take_front(i + 1),
                               use.dim, loc);
    } else {
      // Slice the whole value: chunk i, or the prefix up to its end.
      bool prefix = use.use == ChunkUse::Prefix;
      result = sliceAlong(builder, loc, whole(v, before), use.dim,
                          prefix ? 0 : start,
                          prefix ? start + use.sizes[i] : use.sizes[i]);
    }
    made[key] = result;
    return result;
  }

  Value concat(ArrayRef<Value> values, int64_t dim, Location loc) {
    if (values.size() == 1)
      return values.front();
    auto first = cast<RankedTensorType>(values.front().getType());
    SmallVector<int64_t> shape(first.getShape());
    shape[dim] = 0;
    for (Value v : values)
      shape[dim] += cast<RankedTensorType>(v.getType()).getDimSize(dim);
    return ConcatOp::create(builder, loc,
                            RankedTensorType::get(shape, first.getElementType()),
                            values, builder.getI64IntegerAttr(dim));
  }

  OpBuilder builder;
  llvm::DenseMap<Value, SmallVector<Value>> pieces;
  llvm::DenseMap<Value, ChunkLayout> layouts;
  llvm::DenseMap<Value, Value> wholes;
  llvm::DenseMap<std::tuple<Value, int64_t, unsigned, int>, Value> made;
};
} // namespace

LogicalResult ChunkAnalysis::rewrite(Block &block) {
  if (ops.empty())
    return success();
  ChunkRewriter rw(block.getParentOp()->getContext());
  for (auto &[value, pieces] : presetPieces) {
    rw.pieces[value] = pieces;
    rw.layouts[value] = seeds[value];
  }
  SmallVector<Operation *> order;
  for (Operation &op : block)
    order.push_back(&op);
  for (Operation *op : order) {
    auto it = ops.find(op);
    if (it == ops.end()) {
      for (OpOperand &operand : op->getOpOperands())
        operand.set(rw.whole(operand.get(), op));
      continue;
    }
    const OpChunking &chunking = it->second;
    SmallVector<SmallVector<Value>> resultPieces(op->getNumResults());
    int64_t start = 0;
    for (auto [i, size] : llvm::enumerate(chunking.factorSizes)) {
      SmallVector<Value> operands;
      for (auto [operand, use] :
           llvm::zip(op->getOperands(), chunking.operands))
        operands.push_back(rw.operandFor(operand, use, i, op));
      rw.builder.setInsertionPoint(op);
      Value offset =
          arith::ConstantIndexOp::create(rw.builder, op->getLoc(), start);
      Operation *clone = rw.builder.clone(*op);
      clone->setOperands(operands);
      // Ops that depend on absolute positions learn where the chunk starts.
      FactorBlock block{chunking.factor, /*within=*/1, size, offset};
      if (failed(computeOnBlock(rw.builder, clone, chunking.mapping, block)))
        return failure();
      if (offset.use_empty())
        offset.getDefiningOp()->erase();
      for (auto [r, result] : llvm::enumerate(clone->getResults()))
        resultPieces[r].push_back(result);
      start += size;
    }
    for (auto [r, result] : llvm::enumerate(op->getResults())) {
      rw.pieces[result] = resultPieces[r];
      rw.layouts[result] = chunking.results[r];
    }
  }
  // The originals: every user now reads chunks or a concatenation.
  for (auto &entry : llvm::reverse(ops)) {
    Operation *op = entry.first;
    assert(op->use_empty() && "chunked op still used");
    op->erase();
  }
  ops.clear();
  return success();
}
