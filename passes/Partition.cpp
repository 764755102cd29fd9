//===- Partition.cpp - single-device programs to SPMD programs ------------===//
//
// Forward propagation of shardings through the dimension mapping of every
// op, one mesh axis at a time, with the cheapest correct resharding where an
// op cannot honour what it receives. See docs/partitioning.md and the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir {
namespace braid {
#define GEN_PASS_DEF_BRAIDPARTITION
#include "passes/Passes.h.inc"
} // namespace braid
} // namespace mlir

using namespace mlir;
using namespace mlir::braid;

static constexpr StringLiteral kShardingAttrName = "braid.sharding";

namespace {

/// How the partitioning along one mesh axis is seeded (the presets).
struct AxisStrategy {
  std::string axis;
  int64_t size = 1;
  /// Split dimension `inputDim` of every function input (dp: 0, cp: 1).
  int64_t inputDim = -1;
  /// Only where it divides (ep: the batch is split when it can be; the
  /// experts are split regardless).
  bool inputDimIfDivisible = false;
  /// Megatron: a matmul or grouped matmul of a weight read only there
  /// computes its output columns sharded unless its contraction already is.
  bool columnParallel = false;
  /// Megatron sequence parallelism: partial sums are reduce-scattered along
  /// the token dimension instead of all-reduced.
  bool sequenceParallel = false;
  /// Expert parallelism: grouped matmuls of expert weights are split by
  /// expert, and MoE dispatch splits its tokens.
  bool expertParallel = false;
};

class AxisPartitioner {
public:
  AxisPartitioner(func::FuncOp function, MeshOp mesh, AxisStrategy strategy)
      : function(function), mesh(mesh), strategy(std::move(strategy)),
        builder(function.getContext()) {}

  LogicalResult run();

private:
  int64_t size() const { return strategy.size; }
  /// Sharded dimension of a value on this axis, or -1 when it is whole.
  int64_t dimOf(Value v) const {
    auto it = sharded.find(v);
    return it == sharded.end() ? -1 : it->second;
  }
  RankedTensorType resize(RankedTensorType type, int64_t dim, bool split) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = split ? shape[dim] / size() : shape[dim] * size();
    return RankedTensorType::get(shape, type.getElementType());
  }
  ArrayAttr axes() { return builder.getStrArrayAttr({strategy.axis}); }
  FlatSymbolRefAttr meshRef() {
    return FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  }
  /// The value a local slice made by this pass was cut from (to compare the
  /// expert choices a dispatch and a combine route by).
  Value rootOf(Value v) const {
    auto it = sliceSource.find(v);
    return it == sliceSource.end() ? v : it->second;
  }

  /// Completes the partial sum `v` before its first user `user` and makes
  /// every user read the completed value: an all-reduce, or with sequence
  /// parallelism a reduce-scatter along the token dimension.
  Value complete(Value v, Operation *user);
  /// The whole tensor of the sharded value `v`, gathered before `user`.
  FailureOr<Value> gather(Value v, Operation *user);
  /// `v` sharded on `dim` for `user`: kept, exchanged from another sharded
  /// dimension (all_to_all), loaded sharded (a weight read only there), or
  /// sliced locally from this rank's index.
  FailureOr<Value> shardOn(Value v, int64_t dim, Operation *user);
  /// Makes `v` whole on this axis for `user` (completed and gathered).
  FailureOr<Value> replicate(Value v, Operation *user);
  /// This rank's index along the axis times `block`, before `user`.
  Value blockOffset(int64_t block, Operation *user);

  /// Whether factor `f` of `op` can be computed in blocks on this axis.
  bool usable(Operation *op, const DimensionMapping &mapping, int f);
  /// Why factor `f` cannot be, for diagnostics.
  std::string whyNotUsable(Operation *op, const DimensionMapping &mapping,
                           int f);
  /// The factor `op` is computed in blocks along: requested by an
  /// annotation, seeded by the strategy, or carried by a sharded operand.
  FailureOr<int> chooseFactor(Operation *op, const DimensionMapping &mapping);
  LogicalResult partition(Operation *op);
  LogicalResult seedArguments();
  /// Honours a `braid.sharding` annotation that leaves the result of `op`
  /// whole on this axis.
  LogicalResult honourReplicatedAnnotation(Operation *op);

  func::FuncOp function;
  MeshOp mesh;
  AxisStrategy strategy;
  OpBuilder builder;
  llvm::DenseMap<Value, int64_t> sharded;
  llvm::DenseSet<Value> partial;
  /// Values whose slot dimension holds the slots that this rank's block of
  /// tokens filled, in that block's order: the root of the expert choices
  /// that routed them. Only a combine of the same tokens may read them.
  llvm::DenseMap<Value, Value> routing;
  llvm::DenseMap<Value, Value> sliceSource;
  /// Reshardings already made: (value, dimension or -1 for whole).
  llvm::DenseMap<std::pair<Value, int64_t>, Value> resharded;
  /// Mappings computed before any rewrite on this axis.
  llvm::DenseMap<Operation *, DimensionMapping> mappings;
};

} // namespace

Value AxisPartitioner::blockOffset(int64_t block, Operation *user) {
  builder.setInsertionPoint(user);
  Location loc = user->getLoc();
  Value rank = RankOp::create(builder, loc, meshRef(),
                              builder.getStringAttr(strategy.axis));
  Value blockSize = arith::ConstantIndexOp::create(builder, loc, block);
  return arith::MulIOp::create(builder, loc, rank, blockSize);
}

Value AxisPartitioner::complete(Value v, Operation *user) {
  builder.setInsertionPoint(user);
  Location loc = user->getLoc();
  auto type = cast<RankedTensorType>(v.getType());
  auto sum = ReductionKindAttr::get(builder.getContext(), ReductionKind::Sum);
  Operation *collective;
  int64_t tokens = type.getRank() - 2;
  if (strategy.sequenceParallel && tokens >= 0 &&
      type.getDimSize(tokens) % size() == 0) {
    collective = ReduceScatterOp::create(
        builder, loc, resize(type, tokens, /*split=*/true), meshRef(), axes(),
        v, sum, builder.getI64IntegerAttr(tokens));
    sharded[collective->getResult(0)] = tokens;
  } else {
    collective =
        AllReduceOp::create(builder, loc, type, meshRef(), axes(), v, sum);
  }
  Value r = collective->getResult(0);
  v.replaceAllUsesExcept(r, collective);
  partial.erase(v);
  return r;
}

FailureOr<Value> AxisPartitioner::gather(Value v, Operation *user) {
  int64_t dim = dimOf(v);
  if (auto it = resharded.find({v, -1}); it != resharded.end())
    return it->second;
  if (routing.count(v))
    return user->emitOpError("braid-partition: this op needs whole the "
                             "expert slots that a block of tokens filled "
                             "on axis '")
           << strategy.axis << "'; only a braid.moe_combine of the same "
           << "tokens can read them";
  builder.setInsertionPoint(user);
  auto type = cast<RankedTensorType>(v.getType());
  Value g = AllGatherOp::create(builder, user->getLoc(),
                                resize(type, dim, /*split=*/false), meshRef(),
                                axes(), v, builder.getI64IntegerAttr(dim));
  resharded[{v, -1}] = g;
  return g;
}

FailureOr<Value> AxisPartitioner::replicate(Value v, Operation *user) {
  if (partial.contains(v))
    v = complete(v, user);
  if (dimOf(v) < 0)
    return v;
  return gather(v, user);
}

FailureOr<Value> AxisPartitioner::shardOn(Value v, int64_t dim,
                                          Operation *user) {
  int64_t current = dimOf(v);
  if (current == dim)
    return v;
  if (auto it = resharded.find({v, dim}); it != resharded.end())
    return it->second;
  auto type = cast<RankedTensorType>(v.getType());
  Location loc = user->getLoc();
  // Sharded on another dimension: one all-to-all moves the split.
  if (current >= 0) {
    builder.setInsertionPoint(user);
    Value exchanged = AllToAllOp::create(
        builder, loc,
        resize(resize(type, current, /*split=*/false), dim, /*split=*/true),
        meshRef(), axes(), v, builder.getI64IntegerAttr(dim),
        builder.getI64IntegerAttr(current));
    sharded[exchanged] = dim;
    if (auto it = routing.find(v); it != routing.end())
      routing[exchanged] = it->second;
    resharded[{v, dim}] = exchanged;
    return exchanged;
  }
  if (routing.count(v))
    return user->emitOpError("braid-partition: cannot slice expert slots "
                             "that a block of tokens filled");
  RankedTensorType local = resize(type, dim, /*split=*/true);
  // A weight read only here is loaded sharded.
  if (auto weight = v.getDefiningOp<GetWeightOp>(); weight && v.hasOneUse()) {
    SmallVector<Attribute> entries;
    if (ArrayAttr existing = weight.getShardingAttr())
      entries.assign(existing.begin(), existing.end());
    else
      entries.assign(type.getRank(), builder.getArrayAttr({}));
    SmallVector<Attribute> dimAxes(cast<ArrayAttr>(entries[dim]).getValue());
    dimAxes.push_back(builder.getStringAttr(strategy.axis));
    entries[dim] = builder.getArrayAttr(dimAxes);
    weight.setMeshAttr(meshRef());
    weight.setShardingAttr(builder.getArrayAttr(entries));
    v.setType(local);
    sharded[v] = dim;
    return v;
  }
  // Anything else: this rank's block, offset rank * block along `dim`.
  Value offset = blockOffset(local.getDimSize(dim), user);
  SmallVector<int64_t> offsets(type.getRank(), 0);
  offsets[dim] = ShapedType::kDynamic;
  SmallVector<int64_t> strides(type.getRank(), 1);
  Value slice = SliceOp::create(builder, loc, local, v, ValueRange{offset},
                                builder.getDenseI64ArrayAttr(offsets),
                                builder.getDenseI64ArrayAttr(local.getShape()),
                                builder.getDenseI64ArrayAttr(strides));
  sharded[slice] = dim;
  sliceSource[slice] = rootOf(v);
  resharded[{v, dim}] = slice;
  return slice;
}

bool AxisPartitioner::usable(Operation *op, const DimensionMapping &mapping,
                             int f) {
  return whyNotUsable(op, mapping, f).empty();
}

std::string AxisPartitioner::whyNotUsable(Operation *op,
                                          const DimensionMapping &mapping,
                                          int f) {
  if (f < 0)
    return "the dimension is a broadcast of size 1";
  const Factor &factor = mapping.getFactors()[f];
  switch (factor.kind) {
  case FactorKind::Whole:
    return "the op needs that dimension whole";
  case FactorKind::CausalPrefix:
    return "causal attention needs all earlier keys of a query block";
  case FactorKind::Parallel:
  case FactorKind::Reduction:
  case FactorKind::Routed:
    break;
  }
  if (factor.size % size() != 0)
    return ("its factor of size " + Twine(factor.size) +
            " does not divide over " + Twine(size()) + " ranks")
        .str();
  if (!mapping.leadsEveryDimension(f))
    return "the dimension is merged below another one in some operand or "
           "result, so a block of it is not contiguous";
  if (factor.kind == FactorKind::Routed) {
    // Slots of this block of tokens must come from a dispatch of the same
    // block: every operand dimension of the slot factor must be routed by
    // the same expert choices.
    for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
      if (dimLedBy(mapping.getOperands()[i], *factor.routesTo) < 0)
        continue;
      auto it = routing.find(operand);
      if (it == routing.end())
        return "its expert slots were not filled by this rank's tokens";
      bool sameChoices = llvm::any_of(op->getOperands(), [&](Value other) {
        return rootOf(other) == it->second;
      });
      if (!sameChoices)
        return "its expert slots were routed by other expert choices";
    }
  }
  return "";
}

FailureOr<int> AxisPartitioner::chooseFactor(Operation *op,
                                             const DimensionMapping &mapping) {
  // An annotation on the op decides.
  if (auto annotation = op->getAttrOfType<ShardingAttr>(kShardingAttrName)) {
    for (auto [d, entry] : llvm::enumerate(annotation.getDims())) {
      if (!llvm::is_contained(annotation.getAxes(d), strategy.axis))
        continue;
      int f = leadingFactor(mapping.getResults()[0], d);
      std::string why = whyNotUsable(op, mapping, f);
      if (!why.empty())
        return op->emitOpError("cannot compute dimension ")
               << d << " of its result split over mesh axis '"
               << strategy.axis << "': " << why;
      return f;
    }
    return -1;
  }
  auto matmul = dyn_cast<MatmulOp>(op);
  auto grouped = dyn_cast<GroupedMatmulOp>(op);
  Value rhs = matmul ? matmul.getRhs() : grouped ? grouped.getWeight() : Value();
  bool weighted = rhs && rhs.getDefiningOp<GetWeightOp>() && rhs.hasOneUse() &&
                  dimOf(rhs) < 0;
  const ValueFactors &out = mapping.getResults().empty()
                                ? ValueFactors()
                                : mapping.getResults()[0];
  // Expert parallel: expert weights stay where their experts live.
  if (grouped && weighted && strategy.expertParallel) {
    int e = leadingFactor(out, 0);
    if (usable(op, mapping, e))
      return e;
  }
  // Slots that this rank's tokens filled cannot be gathered: the op works
  // on them where they are, or combines them with the same tokens.
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (!routing.count(operand))
      continue;
    int f = leadingFactor(mapping.getOperands()[i], dimOf(operand));
    if (usable(op, mapping, f))
      return f;
    for (auto [g, factor] : llvm::enumerate(mapping.getFactors()))
      if (factor.kind == FactorKind::Routed && usable(op, mapping, g))
        return (int)g;
  }
  // The factor a sharded operand carries.
  int carried = -1;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    int f = leadingFactor(mapping.getOperands()[i], dimOf(operand));
    if (dimOf(operand) >= 0 && usable(op, mapping, f)) {
      carried = f;
      break;
    }
  }
  // Megatron: column parallel unless the contraction is already split (row
  // parallel).
  if ((matmul || grouped) && weighted && strategy.columnParallel) {
    bool contraction =
        carried >= 0 && mapping.getFactors()[carried].kind ==
                            FactorKind::Reduction;
    int n = leadingFactor(out, out.size() - 1);
    if (!contraction && usable(op, mapping, n))
      return n;
  }
  if (carried >= 0)
    return carried;
  // Expert parallel: each rank dispatches its own block of tokens.
  if (isa<MoeDispatchOp>(op) && strategy.expertParallel) {
    int t = leadingFactor(mapping.getOperands()[0], 0);
    if (usable(op, mapping, t))
      return t;
  }
  return -1;
}

LogicalResult AxisPartitioner::honourReplicatedAnnotation(Operation *op) {
  auto annotation = op->getAttrOfType<ShardingAttr>(kShardingAttrName);
  if (!annotation || op->getNumResults() == 0)
    return success();
  for (unsigned d = 0, e = annotation.getDims().size(); d < e; ++d)
    if (llvm::is_contained(annotation.getAxes(d), strategy.axis))
      return success();
  Value result = op->getResult(0);
  if (dimOf(result) < 0 && !partial.contains(result))
    return success();
  Operation *next = op->getNextNode();
  FailureOr<Value> whole = replicate(result, next);
  if (failed(whole))
    return failure();
  result.replaceAllUsesExcept(*whole, whole->getDefiningOp());
  return success();
}

LogicalResult AxisPartitioner::partition(Operation *op) {
  if (isa<func::ReturnOp>(op)) {
    for (OpOperand &operand : op->getOpOperands()) {
      FailureOr<Value> whole = replicate(operand.get(), op);
      if (failed(whole))
        return failure();
      operand.set(*whole);
    }
    return success();
  }
  if (isa<GetWeightOp, ConstantOp, RankOp>(op))
    return success();
  auto hasTensor = [](TypeRange types) {
    return llvm::any_of(types, llvm::IsaPred<RankedTensorType>);
  };
  if (!hasTensor(op->getOperandTypes()) && !hasTensor(op->getResultTypes()))
    return success();
  auto mappingOp = dyn_cast<DimensionMappingOpInterface>(op);
  // An op the pass knows nothing about reads whole tensors.
  if (!mappingOp) {
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<RankedTensorType>(operand.get().getType()))
        continue;
      FailureOr<Value> whole = replicate(operand.get(), op);
      if (failed(whole))
        return failure();
      operand.set(*whole);
    }
    return success();
  }

  // Partial sums are completed before any use.
  for (OpOperand &operand : op->getOpOperands())
    if (partial.contains(operand.get()))
      complete(operand.get(), op);

  const DimensionMapping &mapping = mappings[op];
  FailureOr<int> chosenOr = chooseFactor(op, mapping);
  if (failed(chosenOr))
    return failure();
  int chosen = *chosenOr;
  const Factor *factor = chosen >= 0 ? &mapping.getFactors()[chosen] : nullptr;
  // The factors computed in blocks: the chosen one, and for routed tokens
  // the slots they fill.
  SmallVector<int, 2> split;
  if (factor) {
    split.push_back(chosen);
    if (factor->kind == FactorKind::Routed)
      split.push_back(*factor->routesTo);
  }
  auto splitDim = [&](const ValueFactors &dims) -> int64_t {
    for (int f : split)
      if (int64_t d = dimLedBy(dims, f); d >= 0)
        return d;
    return -1;
  };

  // Operands: sharded where the chosen factor is, whole elsewhere.
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    int64_t want = splitDim(mapping.getOperands()[i]);
    FailureOr<Value> local = want >= 0 ? shardOn(operand, want, op)
                                       : replicate(operand, op);
    if (failed(local))
      return failure();
    op->setOperand(i, *local);
  }
  if (!factor)
    return honourReplicatedAnnotation(op);

  // Ops that depend on absolute positions learn where their block starts.
  Value offset = blockOffset(factor->size / size(), op);
  if (failed(mappingOp.restrictToBlock(builder, mapping, chosen, offset)))
    return op->emitOpError("cannot be restricted to a block of factor f")
           << chosen << " of its dimension mapping";
  if (offset.use_empty()) {
    Operation *mul = offset.getDefiningOp();
    SmallVector<Operation *> dead{mul, mul->getOperand(0).getDefiningOp(),
                                  mul->getOperand(1).getDefiningOp()};
    for (Operation *d : dead)
      d->erase();
  }

  // Results: sharded where the factor is, partial for a reduction.
  Value routedBy;
  if (factor->kind == FactorKind::Routed && isa<MoeDispatchOp>(op))
    routedBy = rootOf(op->getOperand(1));
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (auto it = routing.find(operand);
        it != routing.end() && factor->kind != FactorKind::Routed)
      routedBy = it->second;
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    int64_t d = splitDim(mapping.getResults()[r]);
    if (d >= 0) {
      result.setType(resize(cast<RankedTensorType>(result.getType()), d,
                            /*split=*/true));
      sharded[result] = d;
    }
    if (factor->kind == FactorKind::Reduction)
      partial.insert(result);
    if (routedBy)
      routing[result] = routedBy;
  }
  // Shapes some ops keep in attributes follow their result.
  if (auto slice = dyn_cast<SliceOp>(op))
    slice.setStaticSizes(slice.getType().getShape());
  if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
    return op->emitOpError("cannot be partitioned along factor f")
           << chosen << " of its dimension mapping on mesh axis '"
           << strategy.axis << "'";
  return honourReplicatedAnnotation(op);
}

LogicalResult AxisPartitioner::seedArguments() {
  Block &body = function.getBody().front();
  for (BlockArgument arg : function.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || arg.use_empty())
      continue;
    int64_t dim = -1;
    std::string what = ("argument " + Twine(arg.getArgNumber()) + " of @" +
                        function.getSymName())
                           .str();
    if (auto annotation = function.getArgAttrOfType<ShardingAttr>(
            arg.getArgNumber(), kShardingAttrName)) {
      for (unsigned d = 0, e = annotation.getDims().size(); d < e; ++d)
        if (llvm::is_contained(annotation.getAxes(d), strategy.axis))
          dim = d;
    } else if (strategy.inputDim >= 0 && type.getRank() > strategy.inputDim &&
               type.getDimSize(strategy.inputDim) != 1) {
      dim = strategy.inputDim;
      if (type.getDimSize(dim) % size() != 0) {
        if (strategy.inputDimIfDivisible)
          continue;
        return function.emitError("braid-partition: dimension ")
               << dim << " (size " << type.getDimSize(dim) << ") of " << what
               << " does not divide over mesh axis '" << strategy.axis
               << "' of size " << size();
      }
      // A preset does not split an input that no reader could use split
      // (a gather reading it as its table): it would only be gathered back.
      bool anyUser = llvm::any_of(arg.getUses(), [&](OpOperand &use) {
        auto it = mappings.find(use.getOwner());
        if (it == mappings.end())
          return true;
        const ValueFactors &dims =
            it->second.getOperands()[use.getOperandNumber()];
        return usable(use.getOwner(), it->second, leadingFactor(dims, dim));
      });
      if (!anyUser) {
        // An input reordered along the split dimension by a constant index
        // (braid-balance-sequence) is split through its index instead: the
        // gather then computes this rank's block.
        for (Operation *user : arg.getUsers())
          if (auto gather = dyn_cast<GatherOp>(user);
              gather && gather.getInput() == arg && gather.getAxis() == dim &&
              gather.getIndices().getType().getRank() == 1 &&
              gather.getIndices().getType().getDimSize(0) % size() == 0) {
            FailureOr<Value> local = shardOn(gather.getIndices(), 0, gather);
            if (failed(local))
              return failure();
            gather.getIndicesMutable().assign(*local);
          }
        dim = -1;
      }
    }
    if (dim < 0 || (strategy.inputDimIfDivisible && dim == strategy.inputDim &&
                    type.getDimSize(dim) % size() != 0))
      continue;
    if (type.getDimSize(dim) % size() != 0)
      return function.emitError("braid-partition: dimension ")
             << dim << " (size " << type.getDimSize(dim) << ") of " << what
             << " does not divide over mesh axis '" << strategy.axis
             << "' of size " << size();
    FailureOr<Value> local = shardOn(arg, dim, &body.front());
    if (failed(local))
      return failure();
    arg.replaceAllUsesExcept(*local, local->getDefiningOp());
  }
  return success();
}

LogicalResult AxisPartitioner::run() {
  SmallVector<Operation *> ops;
  for (Operation &op : function.getBody().front())
    ops.push_back(&op);
  for (Operation *op : ops)
    if (auto mappingOp = dyn_cast<DimensionMappingOpInterface>(op))
      mappings[op] = mappingOp.getDimensionMapping();
  if (ops.empty())
    return success();
  if (failed(seedArguments()))
    return failure();
  for (Operation *op : ops)
    if (failed(partition(op)))
      return failure();
  function.setType(FunctionType::get(
      function.getContext(), function.getArgumentTypes(),
      function.getBody().front().getTerminator()->getOperandTypes()));
  return success();
}

//===----------------------------------------------------------------------===//
// The pass: presets, annotations, the mesh
//===----------------------------------------------------------------------===//

/// Checks a `braid.sharding` annotation against the mesh and the value.
static LogicalResult checkAnnotation(ShardingAttr annotation, MeshOp mesh,
                                     Type type, Operation *anchor,
                                     const Twine &what) {
  auto fail = [&]() {
    return anchor->emitError("braid-partition: the sharding of ") << what;
  };
  if (annotation.getMesh().getValue() != mesh.getSymName())
    return fail() << " names mesh " << annotation.getMesh()
                  << ", but the program is partitioned over @"
                  << mesh.getSymName();
  if (annotation.getPartial() && !annotation.getPartial().empty())
    return fail() << " asks for a partial sum; only how dimensions are "
                     "split can be requested";
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() != (int64_t)annotation.getDims().size())
    return fail() << " has " << annotation.getDims().size()
                  << " entries for a value of type " << type;
  int lastAxis = -1;
  for (unsigned d = 0; d < annotation.getDims().size(); ++d) {
    int64_t parts = 1;
    for (StringRef axis : annotation.getAxes(d)) {
      std::optional<unsigned> index = mesh.getAxisIndex(axis);
      if (!index)
        return fail() << " names axis '" << axis << "', which mesh @"
                      << mesh.getSymName() << " does not have";
      parts *= mesh.getGroupSize(
          ArrayAttr::get(mesh.getContext(), {StringAttr::get(
                                                mesh.getContext(), axis)}));
      if ((int)*index < lastAxis)
        return fail() << " lists axis '" << axis
                      << "' after a later mesh axis; list a dimension's "
                         "axes in mesh order";
      lastAxis = *index;
    }
    lastAxis = -1;
    if (tensor.getDimSize(d) % parts != 0)
      return fail() << ": dimension " << d << " (size "
                    << tensor.getDimSize(d) << ") does not divide over "
                    << parts << " ranks";
  }
  return success();
}

namespace {
struct PartitionPass : public braid::impl::BraidPartitionBase<PartitionPass> {
  using BraidPartitionBase::BraidPartitionBase;

  void runOnOperation() override;
};
} // namespace

void PartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto fail = [&](const Twine &message) {
    module.emitError("braid-partition: ") << message;
    signalPassFailure();
  };
  auto function = module.lookupSymbol<func::FuncOp>(functionName);
  if (!function)
    return fail("no function @" + functionName);

  // The axes the presets ask for, outermost first.
  SmallVector<AxisStrategy> strategies;
  auto addAxis = [&](StringRef name, int64_t ranks) {
    AxisStrategy s;
    s.axis = name.str();
    s.size = ranks;
    strategies.push_back(s);
    return &strategies.back();
  };
  for (auto [name, ranks] : {std::pair<StringRef, int64_t>{"dp", dpSize},
                             {"ep", epSize},
                             {"cp", cpSize},
                             {"tp", tpSize}}) {
    if (ranks < 0 || ranks == 1 && name == "tp" && sequenceParallel)
      return fail("axis '" + name + "' needs at least 2 ranks, got " +
                  Twine(ranks));
    if (ranks < 2)
      continue;
    AxisStrategy *s = addAxis(name, ranks);
    s->inputDim = name == "dp" || name == "ep" ? 0 : name == "cp" ? 1 : -1;
    s->columnParallel = name == "tp";
    s->sequenceParallel = name == "tp" && sequenceParallel;
    s->expertParallel = name == "ep";
    s->inputDimIfDivisible = name == "ep";
  }
  if (sequenceParallel && (strategies.empty() ||
                           strategies.back().axis != "tp"))
    return fail("sequence parallelism (sp) needs tensor parallelism (tp=N)");

  // The mesh: created from the presets, or the program's own (annotations).
  auto meshes = llvm::to_vector(module.getOps<MeshOp>());
  MeshOp mesh;
  if (!meshes.empty()) {
    if (!strategies.empty())
      return fail("the program already declares mesh @" +
                  meshes.front().getSymName() +
                  "; give either presets or a mesh with annotations");
    if (meshes.size() != 1)
      return fail("the program declares several meshes; annotate over one");
    mesh = meshes.front();
    for (auto [name, ranks] :
         llvm::zip(mesh.getAxisNames(), mesh.getShape())) {
      AxisStrategy s;
      s.axis = cast<StringAttr>(name).getValue().str();
      s.size = ranks;
      strategies.push_back(s);
    }
  } else {
    if (strategies.empty())
      return fail("nothing to partition over: give tp, dp, ep or cp, or "
                  "declare a braid.mesh and annotate with braid.sharding");
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    SmallVector<StringRef> names;
    SmallVector<int64_t> sizes;
    for (const AxisStrategy &s : strategies) {
      names.push_back(s.axis);
      sizes.push_back(s.size);
    }
    mesh = MeshOp::create(b, module.getLoc(), "world",
                          b.getStrArrayAttr(names),
                          b.getDenseI64ArrayAttr(sizes));
  }

  // Nothing is rewritten before the whole program is known to be supported.
  for (Operation &op : function.getBody().front())
    if (op.getNumRegions() != 0) {
      op.emitOpError("braid-partition does not handle regions yet "
                     "(partition first, then overlap)");
      return signalPassFailure();
    }

  // Annotations are checked once, against the mesh.
  for (BlockArgument arg : function.getArguments())
    if (auto annotation = function.getArgAttrOfType<ShardingAttr>(
            arg.getArgNumber(), kShardingAttrName))
      if (failed(checkAnnotation(annotation, mesh, arg.getType(), function,
                                 "argument " + Twine(arg.getArgNumber()))))
        return signalPassFailure();
  WalkResult walk = function.walk([&](Operation *op) {
    auto annotation = op->getAttrOfType<ShardingAttr>(kShardingAttrName);
    if (!annotation)
      return WalkResult::advance();
    if (op->getNumResults() != 1)
      return op->emitError("braid-partition: a sharding annotation needs an "
                           "op with one result"),
             WalkResult::interrupt();
    if (failed(checkAnnotation(annotation, mesh, op->getResult(0).getType(),
                               op, "'" + op->getName().getStringRef() +
                                       "' result")))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return signalPassFailure();

  for (const AxisStrategy &strategy : strategies) {
    AxisPartitioner partitioner(function, mesh, strategy);
    if (failed(partitioner.run()))
      return signalPassFailure();
  }
  // Annotations are requests to this pass; the program no longer needs them.
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    function.removeArgAttr(i, kShardingAttrName);
  function.walk([](Operation *op) { op->removeAttr(kShardingAttrName); });
}
